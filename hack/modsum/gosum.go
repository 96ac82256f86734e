package main

import (
	"os"
	"strings"
	"time"
)

// ReplaceInGoSum rewrites the go.sum file at path with s's two lines in place of any lines of the
// same module version (added at their sorted place when there were none; go.sum is sorted by
// module path, then version, go.mod lines after their zip line). Other lines are kept as they are.
func ReplaceInGoSum(path string, s Sums) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	zipKey, modKey := s.Module+" "+s.Version+" ", s.Module+" "+s.Version+"/go.mod "
	var kept []string
	for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if l == "" || strings.HasPrefix(l, zipKey) || strings.HasPrefix(l, modKey) {
			continue
		}
		kept = append(kept, l)
	}
	add := strings.Split(strings.TrimRight(s.Lines(), "\n"), "\n")
	at := len(kept)
	for i, l := range kept {
		if sortKey(l) > sortKey(add[0]) {
			at = i
			break
		}
	}
	out := append(append(append([]string{}, kept[:at]...), add...), kept[at:]...)
	return os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644)
}

// sortKey orders go.sum lines as the go command writes them: module path, then version (the
// zip's line before its go.mod line). Versions compare as strings, enough to place one module's
// lines among other modules'.
func sortKey(line string) string {
	f := strings.Fields(line)
	if len(f) < 2 {
		return line
	}
	return f[0] + "\x00" + strings.TrimSuffix(f[1], "/go.mod") + "\x00" + map[bool]string{true: "1", false: "0"}[strings.HasSuffix(f[1], "/go.mod")]
}

// dataInfo is a dataFile's os.FileInfo: a regular file of mode 0644.
type dataInfo struct{ f dataFile }

func (i dataInfo) Name() string       { return i.f.name }
func (i dataInfo) Size() int64        { return int64(len(i.f.data)) }
func (i dataInfo) Mode() os.FileMode  { return 0o644 }
func (i dataInfo) ModTime() time.Time { return time.Time{} }
func (i dataInfo) IsDir() bool        { return false }
func (i dataInfo) Sys() any           { return nil }
