package definitions

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gangmap/gangmap/manifest"
)

// LoadPaths decodes the definitions in each path (each file once, however often it is named): a
// YAML file, or a directory whose *.yaml, *.yml and *.json files are read in name order (not
// recursively; files whose names start with "." or ".." are skipped, as are the hidden ones a
// mounted ConfigMap keeps). Each gets source
// src and origin "<file>#<document>". Errors name the file and document.
func LoadPaths(paths []string, src Source, opts DecodeOptions) ([]*Loaded, error) {
	var out []*Loaded
	seen := map[string]bool{}
	for _, p := range paths {
		files, err := DefinitionFiles(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			// A file named twice (a directory and a file in it) is loaded once: it must not
			// conflict with itself.
			if abs, err := filepath.Abs(f); err == nil {
				if seen[abs] {
					continue
				}
				seen[abs] = true
			}
			fh, err := os.Open(f)
			if err != nil {
				return nil, err
			}
			ls, err := Decode(manifest.Limit(fh), f, src, opts) // files of the CLI and the grouper: bounded
			fh.Close()
			if err != nil {
				return nil, err
			}
			out = append(out, ls...)
		}
	}
	return out, nil
}

// DefinitionFiles lists the definition files of a path: the path itself when it is a file, else
// the *.yaml, *.yml and *.json files of the directory (not hidden ones), sorted.
func DefinitionFiles(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err // *fs.PathError: names the operation and the path
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, err // *fs.PathError: names the operation and the path
	}
	var files []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, ".") || e.IsDir() {
			continue
		}
		switch filepath.Ext(n) {
		case ".yaml", ".yml", ".json":
			files = append(files, filepath.Join(p, n))
		}
	}
	sort.Strings(files)
	return files, nil
}
