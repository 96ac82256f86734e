//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/manifest"
)

// TestUpstreamKartaCRDPrunesGangmapAdditions: through the upstream-shaped Karta CRD, spec.gangmap
// is pruned on a real API server; the same additions survive in the gangmap.io/extensions
// annotation, and the loader reports the lost fields when the object says what was applied.
func TestUpstreamKartaCRDPrunesGangmapAdditions(t *testing.T) {
	ctx := context.Background()
	objs, err := manifest.ReadFile("../definitions/catalog/leaderworkerset-x-k8s-io-leaderworkerset-v1.yaml")
	require.NoError(t, err)
	applied := objs[0]
	applied.SetName("lws-pruning-test")
	// Its own kind, so the running grouper's LeaderWorkerSet definition is not shadowed meanwhile.
	require.NoError(t, unstructured.SetNestedField(applied.Object, "pruning.example.com", "spec", "structureDefinition", "rootComponent", "kind", "group"))
	ext, found, err := unstructured.NestedMap(applied.Object, "spec", "gangmap")
	require.NoError(t, err)
	require.True(t, found, "the catalog LWS definition carries gangmap additions")

	lastApplied, err := json.Marshal(applied.Object)
	require.NoError(t, err)
	stored := applied.DeepCopy()
	stored.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(lastApplied)})
	created, err := cp.Dynamic.Resource(definitions.GroupVersionResource).Create(ctx, stored, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cp.Dynamic.Resource(definitions.GroupVersionResource).Delete(ctx, created.GetName(), metav1.DeleteOptions{})
	})
	_, found, _ = unstructured.NestedMap(created.Object, "spec", "gangmap")
	assert.False(t, found, "the upstream Karta CRD prunes spec.gangmap")

	l, err := definitions.FromUnstructured(created)
	require.NoError(t, err)
	assert.Nil(t, l.Karta.Spec.Gangmap)
	var lost []string
	for _, w := range l.Warnings {
		lost = append(lost, w.Field)
	}
	assert.Contains(t, lost, "spec.gangmap", "the loader says the stored definition lost spec.gangmap")

	// Stored the gangmap way: the additions in the annotation survive and are merged back.
	extJSON, err := json.Marshal(ext)
	require.NoError(t, err)
	created.SetAnnotations(map[string]string{definitions.ExtensionsAnnotation: string(extJSON), "kubectl.kubernetes.io/last-applied-configuration": string(lastApplied)})
	updated, err := cp.Dynamic.Resource(definitions.GroupVersionResource).Update(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	l, err = definitions.FromUnstructured(updated)
	require.NoError(t, err)
	require.NotNil(t, l.Karta.Spec.Gangmap)
	assert.Equal(t, "group", l.Karta.Spec.Gangmap.Gang.PerReplicaOf)
	assert.Equal(t, "(.spec.leaderWorkerTemplate.size // 1) - 1", l.Karta.Spec.Gangmap.Components[0].PodsPerReplicaPath.JQ)
	for _, w := range l.Warnings {
		assert.NotEqual(t, "spec.gangmap", w.Field, "restored from the annotation, not lost")
	}
}
