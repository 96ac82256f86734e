package main

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// options are the command's flags.
type options struct {
	repo, rev, module, subdir, goSum string
}

// Sums are a module version's two go.sum hashes.
type Sums struct {
	// Module and Version name the module version.
	Module, Version string
	// Zip is the module zip's hash ("h1:..."), GoMod the go.mod's.
	Zip, GoMod string
}

// Lines are the two go.sum lines, in go.sum's order (the zip's first).
func (s Sums) Lines() string {
	return fmt.Sprintf("%s %s %s\n%s %s/go.mod %s\n", s.Module, s.Version, s.Zip, s.Module, s.Version, s.GoMod)
}

func (o *options) run(w io.Writer) error {
	if o.repo == "" || o.rev == "" {
		return errors.New("-repo and -rev are required")
	}
	s, err := Compute(o.repo, o.rev, o.module, o.subdir)
	if err != nil {
		return err
	}
	if o.goSum != "" {
		if err := ReplaceInGoSum(o.goSum, s); err != nil {
			return err
		}
	}
	_, err = io.WriteString(w, s.Lines())
	return err
}

// Compute returns the go.sum hashes of the module in subdir of repo at tag rev (see the package
// comment for how each is made). modulePath "" is the tag's go.mod's module line. Errors: rev is
// not a canonical semantic version, git fails, the go.mod is missing or names another module,
// the files break a module zip's rules (modzip.Create).
func Compute(repo, rev, modulePath, subdir string) (Sums, error) {
	if semver.Canonical(rev) != rev {
		return Sums{}, fmt.Errorf("-rev %q is not a canonical semantic version tag (vX.Y.Z)", rev)
	}
	subdir = strings.Trim(subdir, "/")
	goMod, err := git(repo, "cat-file", "blob", rev+":"+path.Join(subdir, "go.mod"))
	if err != nil {
		return Sums{}, fmt.Errorf("reading go.mod at %s: %w", rev, err)
	}
	declared := modfile.ModulePath(goMod)
	if modulePath == "" {
		modulePath = declared
	}
	if declared != modulePath {
		return Sums{}, fmt.Errorf("go.mod at %s declares module %q, not %q", rev, declared, modulePath)
	}
	v := module.Version{Path: modulePath, Version: rev}
	if err := module.Check(v.Path, v.Version); err != nil {
		return Sums{}, err
	}
	zipHash, err := zipSum(repo, v, subdir)
	if err != nil {
		return Sums{}, err
	}
	goModHash, err := GoModSum(goMod)
	if err != nil {
		return Sums{}, err
	}
	return Sums{Module: v.Path, Version: v.Version, Zip: zipHash, GoMod: goModHash}, nil
}

// GoModSum is the "/go.mod h1:" hash of a go.mod's content, as cmd/go's goModSum computes it.
func GoModSum(data []byte) (string, error) {
	return dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
}

// zipSum builds v's module zip from `git archive` of rev (subdir only) into a temporary file and
// returns dirhash.HashZip of it.
func zipSum(repo string, v module.Version, subdir string) (string, error) {
	args := []string{"-c", "core.autocrlf=input", "-c", "core.eol=lf", "archive", "--format=zip", v.Version}
	if subdir != "" {
		args = append(args, subdir)
	}
	archive, err := git(repo, args...)
	if err != nil {
		return "", err
	}
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		return "", fmt.Errorf("reading git archive: %w", err)
	}
	files := FilesOf(zr, subdir)
	if subdir != "" && !hasFile(files, "LICENSE") {
		// cmd/go takes the repository root's LICENSE into a subdirectory module
		// (coderepo.go Zip); x/mod's CreateFromVCS does the same.
		if lic, err := git(repo, "cat-file", "blob", v.Version+":LICENSE"); err == nil {
			files = append(files, dataFile{name: "LICENSE", data: lic})
		}
	}
	return HashFiles(v, files)
}

// HashFiles creates v's module zip of files (modzip.Create) in a temporary file and returns its
// dirhash.HashZip.
func HashFiles(v module.Version, files []modzip.File) (string, error) {
	tmp, err := os.CreateTemp("", "modsum-*.zip")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if err := modzip.Create(tmp, v, files); err != nil {
		tmp.Close()
		return "", fmt.Errorf("creating the module zip of %s: %w", v, err)
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return dirhash.HashZip(tmp.Name(), dirhash.Hash1)
}

// FilesOf are the regular files and symlinks of a git archive under subdir, named relative to it
// (directories left out), as x/mod's filesInGitRepo lists them.
func FilesOf(zr *zip.Reader, subdir string) []modzip.File {
	var out []modzip.File
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		n := f.Name
		if subdir != "" {
			if !strings.HasPrefix(n, subdir+"/") {
				continue
			}
			n = strings.TrimPrefix(n, subdir+"/")
		}
		out = append(out, zipFile{name: n, f: f})
	}
	return out
}

func hasFile(files []modzip.File, name string) bool {
	for _, f := range files {
		if f.Path() == name {
			return true
		}
	}
	return false
}

// git runs git in repo and returns its standard output; errors carry its standard error.
func git(repo string, args ...string) ([]byte, error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.Bytes(), nil
}

// zipFile is a file of the git archive (modzip.File).
type zipFile struct {
	name string
	f    *zip.File
}

func (f zipFile) Path() string                 { return f.name }
func (f zipFile) Lstat() (os.FileInfo, error)  { return f.f.FileInfo(), nil }
func (f zipFile) Open() (io.ReadCloser, error) { return f.f.Open() }

var _ modzip.File = zipFile{}

// dataFile is a file given by its content (the root LICENSE of a subdirectory module).
type dataFile struct {
	name string
	data []byte
}

func (f dataFile) Path() string                 { return f.name }
func (f dataFile) Lstat() (os.FileInfo, error)  { return dataInfo{f}, nil }
func (f dataFile) Open() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(f.data)), nil }

var _ modzip.File = dataFile{}
