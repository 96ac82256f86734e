//go:build e2e

package helm

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestKartaCRDLookupGuardOnAPIServer: the chart renders its Karta CRD only when the cluster has
// no kartas.run.ai (`lookup`), which deploy/helm/charttest can only read in the template. Here
// `lookup` asks a real API server that has the CRD: `helm template --dry-run=server` renders no
// CRD (an installed Karta CRD is never overwritten), while offline (lookup finds nothing) it is
// rendered. Everything else renders the same either way.
func TestKartaCRDLookupGuardOnAPIServer(t *testing.T) {
	ctx := context.Background()
	crds := apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
	_, err := cp.Dynamic.Resource(crds).Get(ctx, "kartas.run.ai", metav1.GetOptions{})
	require.NoError(t, err, "the control plane has the Karta CRD")

	offline := helmTemplate(t, "")
	online := helmTemplate(t, cp.Kubeconfig)
	if assert.Len(t, ofKind(offline, "CustomResourceDefinition"), 1, "offline, lookup finds nothing: the Karta CRD is rendered") {
		assert.Equal(t, "kartas.run.ai", ofKind(offline, "CustomResourceDefinition")[0].GetName())
	}
	assert.Empty(t, ofKind(online, "CustomResourceDefinition"), "with the cluster's kartas.run.ai, lookup keeps the chart from rendering its copy")
	assert.Equal(t, names(offline, "CustomResourceDefinition"), names(online, ""), "every other object is rendered either way")
}

// names lists kind/namespace/name of objs, without the objects of kind skip.
func names(objs []*unstructured.Unstructured, skip string) []string {
	var out []string
	for _, o := range objs {
		if o.GetKind() != skip {
			out = append(out, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
		}
	}
	return out
}
