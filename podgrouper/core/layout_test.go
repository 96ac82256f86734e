package core

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// module is gangmap's module path (go.mod).
const module = "github.com/gangmap/gangmap"

// forbiddenInCore are the import paths (exact, or a prefix ending in "/") no package under
// podgrouper/core may import: the standalone runtime, and the machinery the core must run
// without (issue #32: importable with no controller-runtime manager, no webhook and no caches of
// its own). controller-runtime's root package re-exports its manager and builder.
var forbiddenInCore = []string{
	module + "/podgrouper/runtime/",
	module + "/cmd/",
	"sigs.k8s.io/controller-runtime",
	"sigs.k8s.io/controller-runtime/pkg/manager",
	"sigs.k8s.io/controller-runtime/pkg/manager/",
	"sigs.k8s.io/controller-runtime/pkg/webhook",
	"sigs.k8s.io/controller-runtime/pkg/webhook/",
	"sigs.k8s.io/controller-runtime/pkg/cache",
	"sigs.k8s.io/controller-runtime/pkg/cache/",
	"sigs.k8s.io/controller-runtime/pkg/builder",
	"k8s.io/client-go/tools/cache",
	"k8s.io/client-go/informers",
	"k8s.io/client-go/informers/",
}

// forbiddenBelow are the imports definitions/ and gang/ (below podgrouper/ in the arrows) may not
// have.
var forbiddenBelow = []string{module + "/podgrouper/", module + "/cmd/"}

// TestLayoutArrowsGoOneWay fails naming the package and the import when a package of
// podgrouper/core imports one of forbiddenInCore, or a package of definitions/ or gang/ imports
// podgrouper/ or cmd/. Imports are the non-test files' of the default build context (go/build);
// test files may use the runtime's helpers.
func TestLayoutArrowsGoOneWay(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for dir, forbidden := range map[string][]string{
		"podgrouper/core": forbiddenInCore,
		"definitions":     forbiddenBelow,
		"gang":            forbiddenBelow,
	} {
		for _, pkg := range packagesUnder(t, filepath.Join(root, dir)) {
			checked++
			for _, imp := range pkg.Imports {
				if isForbidden(imp, forbidden) {
					rel, _ := filepath.Rel(root, pkg.Dir)
					t.Errorf("%s imports %s: %s may not (see podgrouper/core/doc.go)", rel, imp, dir)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d packages; the layout has more: is the module root %s?", checked, root)
	}
}

// TestIsForbidden: an exact entry matches itself only, a prefix entry the packages under it.
func TestIsForbidden(t *testing.T) {
	for imp, want := range map[string]bool{
		"sigs.k8s.io/controller-runtime":                       true,
		"sigs.k8s.io/controller-runtime/pkg/client":            false,
		"sigs.k8s.io/controller-runtime/pkg/manager":           true,
		"sigs.k8s.io/controller-runtime/pkg/webhook/admission": true,
		"k8s.io/client-go/tools/cache":                         true,
		"k8s.io/client-go/tools/record":                        false,
		module + "/podgrouper/runtime/controller":              true,
		module + "/podgrouper/core/podgroup":                   false,
	} {
		if got := isForbidden(imp, forbiddenInCore); got != want {
			t.Errorf("isForbidden(%q) = %v, want %v", imp, got, want)
		}
	}
}

// isForbidden reports whether imp is one of forbidden's exact paths or under one of its prefixes.
func isForbidden(imp string, forbidden []string) bool {
	for _, f := range forbidden {
		if imp == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(imp, f)) {
			return true
		}
	}
	return false
}

// packagesUnder returns the Go packages in dir and its subdirectories (testdata excluded), each
// with its non-test imports.
func packagesUnder(t *testing.T, dir string) []*build.Package {
	t.Helper()
	var pkgs []*build.Package
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if _, none := err.(*build.NoGoError); none {
			return nil
		}
		if err != nil {
			return err
		}
		pkgs = append(pkgs, pkg)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}
