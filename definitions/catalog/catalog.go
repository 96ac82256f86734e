// Package catalog is gangmap's built-in catalog of Workload Map definitions, embedded in the
// binaries. Each file holds one definition written for gangmap, with a header comment that
// states the framework's documented semantics it encodes; definitions/catalog/README.md tables
// them with the real manifests that test them.
package catalog

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"sort"

	"github.com/gangmap/gangmap/definitions"
)

//go:embed *.yaml
var files embed.FS

// Load decodes every built-in definition, strictly (an unknown field in the catalog is a bug),
// sorted by file name. Each has source definitions.SourceCatalog and origin "catalog:<file>".
func Load() ([]*definitions.Loaded, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*definitions.Loaded
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		ls, err := definitions.Decode(bytes.NewReader(b), "catalog:"+n, definitions.SourceCatalog, definitions.DecodeOptions{Strict: true})
		if err != nil {
			return nil, fmt.Errorf("built-in catalog: %w", err)
		}
		for _, l := range ls {
			l.Origin = "catalog:" + n
		}
		out = append(out, ls...)
	}
	return out, nil
}

// Register loads the catalog into r as its catalog source.
func Register(r *definitions.Registry) error {
	ls, err := Load()
	if err != nil {
		return err
	}
	r.SetSource(definitions.SourceCatalog, ls)
	return nil
}
