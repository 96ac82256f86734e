package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions"
)

// TestKartaRoundTripsTheCatalog: every catalog definition (several carry spec.gangmap) written by
// `gangmap karta` loads back, from the annotation, into the same definition as the file: the
// extensions survive the move and nothing else changes. The catalog definitions with CEL
// spec.variables, which the upstream-shaped Karta CRD has no field for, are refused naming it.
func TestKartaRoundTripsTheCatalog(t *testing.T) {
	files, err := filepath.Glob("../../../definitions/catalog/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	withExtensions, refused := 0, 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		want, err := definitions.DecodeDocument(b, f, definitions.SourceFile, definitions.DecodeOptions{Strict: true})
		require.NoError(t, err)
		r := gangmap(t, "karta", f)
		if len(want.Karta.Spec.Variables) > 0 {
			refused++
			assert.Equal(t, ExitProblems, r.code, "%s: %s", f, r.stderr)
			assert.Contains(t, r.stderr, "the Karta CRD has no field spec.variables", f)
			assert.Empty(t, r.stdout, f)
			continue
		}
		require.Equal(t, ExitOK, r.code, "%s: %s", f, r.stderr)
		assert.NotContains(t, r.stdout, "\n  gangmap:", "%s: spec.gangmap is left in the cluster form", f)
		obj := map[string]any{}
		require.NoError(t, yaml.Unmarshal([]byte(r.stdout), &obj), f)
		// As the grouper reads a Karta from the API server (sources.Cluster).
		got, err := definitions.FromUnstructured(&unstructured.Unstructured{Object: obj})
		require.NoError(t, err, "%s: the cluster form does not load", f)
		assert.Equal(t, want.Karta.Spec, got.Karta.Spec, "%s: the cluster form loads into another definition", f)
		if want.Karta.Spec.Gangmap != nil {
			withExtensions++
			assert.Contains(t, r.stdout, definitions.ExtensionsAnnotation+": '{", f)
		}
	}
	assert.Positive(t, withExtensions, "no convertible catalog definition has spec.gangmap: the test proves nothing about the move")
	assert.Positive(t, refused)
	t.Logf("%d catalog definitions: %d converted (%d with spec.gangmap), %d refused (spec.variables)", len(files), len(files)-refused, withExtensions, refused)
}

// TestKartaFromStdin: `gangmap karta -` validates and converts what it reads from standard input,
// which can be read once (it wrote nothing, exit 0, when validation and conversion each read it).
func TestKartaFromStdin(t *testing.T) {
	f := "../../../definitions/catalog/batch-volcano-sh-job-v1alpha1.yaml"
	fromFile := gangmap(t, "karta", f)
	require.Equal(t, ExitOK, fromFile.code, fromFile.stderr)
	withStdin(t, readFile(t, f))
	r := gangmap(t, "karta", "-")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "kind: Karta")
	assert.Equal(t, fromFile.stdout, r.stdout)
}

// TestKartaRefusesWhatTheCRDCannotStore: a field the Karta CRD has no place for (spec.variables,
// a definition-file-only CEL form) is an error naming it, exit 1 and nothing on stdout; an invalid
// definition too (validate's errors on stderr).
func TestKartaRefusesWhatTheCRDCannotStore(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("../../../examples/definitions/customjob-karta.yaml")
	require.NoError(t, err)
	withVars := strings.Replace(string(good), "spec:\n", "spec:\n  variables: [{name: workers, expression: \"object.spec.worker.replicas\"}]\n", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vars.yaml"), []byte(withVars), 0o600))
	r := gangmap(t, "karta", filepath.Join(dir, "vars.yaml"))
	assert.Equal(t, ExitProblems, r.code, r.stderr)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "the Karta CRD has no field spec.variables")

	broken := strings.Replace(string(good), "replicasPath: .spec.worker.replicas", "replicasPath: .spec.worker.replicas |", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte(broken), 0o600))
	r = gangmap(t, "karta", filepath.Join(dir, "broken.yaml"))
	assert.Equal(t, ExitProblems, r.code, r.stderr)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "spec.structureDefinition.childComponents[1].scaleDefinition.replicasPath")
}
