package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// TestGoModSumMatchesTheProxysLine: the go.mod hash of golang.org/x/mod v0.42.0's go.mod, as the
// module cache holds it from the module proxy, is the line this module's go.sum got from the
// proxy (checked against sum.golang.org by the go command).
func TestGoModSumMatchesTheProxysLine(t *testing.T) {
	cache := goEnv(t, "GOMODCACHE")
	data, err := os.ReadFile(filepath.Join(cache, "cache/download/golang.org/x/mod/@v/v0.42.0.mod"))
	if err != nil {
		t.Fatalf("x/mod's go.mod is in the module cache once this module builds: %v", err)
	}
	got, err := GoModSum(data)
	if err != nil {
		t.Fatal(err)
	}
	want := goSumHash(t, "golang.org/x/mod v0.42.0/go.mod")
	if got != want {
		t.Errorf("GoModSum = %s, go.sum says %s", got, want)
	}
}

// TestZipSumMatchesTheProxysLine: a zip made by HashFiles from golang.org/x/mod v0.42.0's
// extracted files (the module cache's copy of the proxy's zip) hashes to this module's go.sum
// line for it.
func TestZipSumMatchesTheProxysLine(t *testing.T) {
	dir := filepath.Join(goEnv(t, "GOMODCACHE"), "golang.org/x/mod@v0.42.0")
	var files []modzip.File
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files = append(files, pathFile{name: filepath.ToSlash(rel), path: p, info: info})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := HashFiles(module.Version{Path: "golang.org/x/mod", Version: "v0.42.0"}, files)
	if err != nil {
		t.Fatal(err)
	}
	if want := goSumHash(t, "golang.org/x/mod v0.42.0"); got != want {
		t.Errorf("HashFiles = %s, go.sum says %s", got, want)
	}
}

// TestComputeFromATag: a repository tagged v1.2.3 with a vendored package, a nested module and
// an untracked file: Compute hashes exactly the tag's files a module zip keeps (go.mod, a.go,
// vendor/modules.txt under go 1.21; not the nested module's or vendored package's files, not the
// untracked file) and the go.mod alone; a tag that is not a semantic version and a module path
// the go.mod does not declare are refused.
func TestComputeFromATag(t *testing.T) {
	repo := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goMod := "module example.com/m\n\ngo 1.21\n"
	write("go.mod", goMod)
	write("a.go", "package m\n")
	write("vendor/modules.txt", "# example.com/v v1.0.0\n")
	write("vendor/example.com/v/v.go", "package v\n")
	write("sub/go.mod", "module example.com/m/sub\n")
	write("sub/s.go", "package sub\n")
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"}, {"tag", "v1.2.3"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	write("untracked.go", "package m\n")
	got, err := Compute(repo, "v1.2.3", "", "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"go.mod": goMod, "a.go": "package m\n", "vendor/modules.txt": "# example.com/v v1.0.0\n"}
	var names []string
	for n := range want {
		names = append(names, "example.com/m@v1.2.3/"+n)
	}
	wantZip, err := dirhash.Hash1(names, func(n string) (io.ReadCloser, error) {
		return nopCloser{strings.NewReader(want[strings.TrimPrefix(n, "example.com/m@v1.2.3/")])}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantMod, _ := GoModSum([]byte(goMod))
	if got.Zip != wantZip || got.GoMod != wantMod || got.Module != "example.com/m" || got.Version != "v1.2.3" {
		t.Errorf("Compute = %+v, want zip %s go.mod %s", got, wantZip, wantMod)
	}
	if !strings.HasPrefix(got.Lines(), "example.com/m v1.2.3 h1:") || !strings.Contains(got.Lines(), "\nexample.com/m v1.2.3/go.mod h1:") {
		t.Errorf("Lines = %q", got.Lines())
	}
	if _, err := Compute(repo, "HEAD", "", ""); err == nil || !strings.Contains(err.Error(), "not a canonical semantic version") {
		t.Errorf("rev HEAD: %v", err)
	}
	if _, err := Compute(repo, "v1.2.3", "example.com/other", ""); err == nil || !strings.Contains(err.Error(), `declares module "example.com/m"`) {
		t.Errorf("another module path: %v", err)
	}
}

// TestReplaceInGoSum: the module version's old lines are replaced, other lines kept, and the new
// lines land in go.sum's order when there were none.
func TestReplaceInGoSum(t *testing.T) {
	p := filepath.Join(t.TempDir(), "go.sum")
	orig := "a.example/x v1.0.0 h1:A=\na.example/x v1.0.0/go.mod h1:B=\nm.example/k v0.1.0 h1:OLD=\nm.example/k v0.1.0/go.mod h1:OLD=\nz.example/y v2.0.0/go.mod h1:C=\n"
	if err := os.WriteFile(p, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	s := Sums{Module: "m.example/k", Version: "v0.1.0", Zip: "h1:NEW=", GoMod: "h1:NEWMOD="}
	if err := ReplaceInGoSum(p, s); err != nil {
		t.Fatal(err)
	}
	want := "a.example/x v1.0.0 h1:A=\na.example/x v1.0.0/go.mod h1:B=\nm.example/k v0.1.0 h1:NEW=\nm.example/k v0.1.0/go.mod h1:NEWMOD=\nz.example/y v2.0.0/go.mod h1:C=\n"
	assertFile(t, p, want)
	// Absent lines are added in order; running twice changes nothing.
	if err := os.WriteFile(p, []byte("a.example/x v1.0.0 h1:A=\nz.example/y v2.0.0/go.mod h1:C=\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := ReplaceInGoSum(p, s); err != nil {
			t.Fatal(err)
		}
	}
	assertFile(t, p, "a.example/x v1.0.0 h1:A=\nm.example/k v0.1.0 h1:NEW=\nm.example/k v0.1.0/go.mod h1:NEWMOD=\nz.example/y v2.0.0/go.mod h1:C=\n")
}

func assertFile(t *testing.T, p, want string) {
	t.Helper()
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("go.sum =\n%s\nwant\n%s", got, want)
	}
}

// goSumHash is the hash of the line of this module's go.sum that starts with key.
func goSumHash(t *testing.T, key string) string {
	t.Helper()
	data, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0]+" "+f[1] == key {
			return f[2]
		}
	}
	t.Fatalf("go.sum has no line %q", key)
	return ""
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSpace(out))
}

// pathFile is a file on disk as a modzip.File.
type pathFile struct {
	name, path string
	info       os.FileInfo
}

func (f pathFile) Path() string                 { return f.name }
func (f pathFile) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f pathFile) Open() (io.ReadCloser, error) { return os.Open(f.path) }

type nopCloser struct{ io.Reader }

func (nopCloser) Close() error { return nil }
