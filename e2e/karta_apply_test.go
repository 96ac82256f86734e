//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gangmapcli "github.com/gangmap/gangmap/cmd/gangmap/app"
	"github.com/gangmap/gangmap/definitions"
)

// TestKartaOutputIsAccepted: a definition file with spec.gangmap (the catalog's Volcano Job) is
// refused by the real API server under kubectl apply's strict field validation (issue 31 point 4:
// `strict decoding error: unknown field "spec.gangmap"`); what `gangmap karta` writes for it is
// accepted, and read back from the API server it loads (definitions.FromUnstructured, as the
// grouper reads cluster Kartas) into the same definition as the file.
func TestKartaOutputIsAccepted(t *testing.T) {
	ctx := context.Background()
	const file = "../definitions/catalog/batch-volcano-sh-job-v1alpha1.yaml"
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	want, err := definitions.DecodeDocument(raw, file, definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	require.NoError(t, err)
	require.NotNil(t, want.Karta.Spec.Gangmap, "the test needs a definition with spec.gangmap")

	asFile := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(raw, &asFile.Object))
	asFile.SetName("karta-apply-as-file")
	err = cp.Client.Create(ctx, asFile, client.FieldValidation("Strict"))
	require.Error(t, err, "the API server accepted spec.gangmap: the CRD changed, and the test proves nothing")
	assert.Contains(t, err.Error(), `unknown field "spec.gangmap"`)

	var out, errOut bytes.Buffer
	code := gangmapcli.Run([]string{"karta", file}, &out, &errOut)
	require.Equal(t, gangmapcli.ExitOK, code, errOut.String())
	converted := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(out.Bytes(), &converted.Object))
	converted.SetName("karta-apply-converted")
	require.NoError(t, cp.Client.Create(ctx, converted, client.FieldValidation("Strict")), "the API server refused gangmap karta's output")
	t.Cleanup(func() { _ = cp.Client.Delete(context.Background(), converted) })

	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(converted.GroupVersionKind())
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(converted), stored))
	got, err := definitions.FromUnstructured(stored)
	require.NoError(t, err)
	assert.Empty(t, got.Warnings, "the stored Karta lost fields")
	assert.Equal(t, want.Karta.Spec, got.Karta.Spec, "read back from the API server, the Karta is another definition than the file")
}
