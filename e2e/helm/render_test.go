//go:build e2e

package helm

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The release the tests install: gangmap in gangmap-system, whose full name is "gangmap" (the
// release name contains the chart name).
const (
	releaseName      = "gangmap"
	releaseNamespace = "gangmap-system"
	valuesFile       = "testdata/values.yaml"
)

var (
	rootOnce sync.Once
	root     string
	rootErr  error

	helmOnce sync.Once
	helmErr  error
)

// moduleRoot is the directory of gangmap's go.mod, found upwards from the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			rootErr = err
			return
		}
		for {
			b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err == nil && bytes.Contains(b, []byte("module github.com/gangmap/gangmap\n")) {
				root = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				rootErr = errors.New("no go.mod of github.com/gangmap/gangmap above the test's directory")
				return
			}
			dir = parent
		}
	})
	if rootErr != nil {
		t.Fatal(rootErr)
	}
	return root
}

// helmTemplate renders the chart for the release with testdata/values.yaml. With kubeconfig empty
// helm contacts no cluster (`lookup` finds nothing); otherwise it renders with --dry-run=server
// against that cluster, so `lookup` sees what the API server has.
func helmTemplate(t *testing.T, kubeconfig string) []*unstructured.Unstructured {
	t.Helper()
	values, err := filepath.Abs(valuesFile)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"template", releaseName, filepath.Join(moduleRoot(t), "deploy", "helm", "gangmap"),
		"--namespace", releaseNamespace, "-f", values}
	if kubeconfig != "" {
		args = append(args, "--dry-run=server")
	}
	return splitObjects(t, runHelm(t, kubeconfig, args...))
}

// runHelm runs hack/helm.sh with args from the module root and returns its stdout, with
// KUBECONFIG set to kubeconfig when it is not empty. The first call builds helm when it is not
// cached yet (about 2-3 minutes cold); failing to build or run it fails the test, never skips it.
func runHelm(t *testing.T, kubeconfig string, args ...string) []byte {
	t.Helper()
	script := filepath.Join(moduleRoot(t), "hack", "helm.sh")
	helmOnce.Do(func() {
		cmd := exec.Command("bash", script, "--path")
		cmd.Dir = root
		cmd.Stderr = os.Stderr // build progress
		if out, err := cmd.Output(); err != nil {
			helmErr = errors.New(err.Error() + " (stdout: " + string(out) + ")")
		}
	})
	if helmErr != nil {
		t.Fatalf("helm cannot be built or run with hack/helm.sh (it needs go and the Go module proxy once): %v", helmErr)
	}
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Dir = root
	cmd.Env = os.Environ()
	if kubeconfig != "" {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+kubeconfig)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\nstderr:\n%s\nstdout:\n%s", strings.Join(args, " "), err, stderr.String(), out)
	}
	return out
}

// splitObjects parses helm's multi-document output into objects, skipping empty documents.
func splitObjects(t *testing.T, out []byte) []*unstructured.Unstructured {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("rendered document does not parse: %v\n%s", err, doc)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	if len(objs) == 0 {
		t.Fatalf("helm rendered no object:\n%s", out)
	}
	return objs
}

// ofKind returns the objects of a kind.
func ofKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// one returns the only object of a kind, failing the test when there is not exactly one.
func one(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	of := ofKind(objs, kind)
	if len(of) != 1 {
		t.Fatalf("%d %s objects rendered, want 1", len(of), kind)
	}
	return of[0]
}
