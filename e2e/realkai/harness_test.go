//go:build e2e_kai

package realkai_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/e2e/realkai"
)

// TestHarnessTopologyNodes: what a topology test builds on: a KAI Topology of zone and rack levels
// (stored as KAI's CRD validates it) and fake nodes labelled per node by rack, Ready and
// schedulable with their GPUs, while KAI's scheduler keeps running.
func TestHarnessTopologyNodes(t *testing.T) {
	ctx := context.Background()
	const zone, rack = "topology.kubernetes.io/zone", "e2e.gangmap.io/rack"
	require.NoError(t, kai.CreateTopology(ctx, "e2e-racks", zone, rack))
	topo := &unstructured.Unstructured{}
	topo.SetAPIVersion("kai.scheduler/v1alpha1")
	topo.SetKind("Topology")
	require.NoError(t, kai.Client.Get(ctx, types.NamespacedName{Name: "e2e-racks"}, topo))
	levels, _, _ := unstructured.NestedSlice(topo.Object, "spec", "levels")
	assert.Equal(t, []any{map[string]any{"nodeLabel": zone}, map[string]any{"nodeLabel": rack}}, levels)

	require.NoError(t, kai.CreateGPUNodes(ctx, realkai.NodeSpec{
		Names: []string{"harness-r1-0", "harness-r2-0"}, GPUs: 4,
		Labels:  map[string]string{zone: "z1", benchLabel: "harness"},
		PerNode: map[string]map[string]string{"harness-r1-0": {rack: "r1"}, "harness-r2-0": {rack: "r2"}},
	}))
	for name, want := range map[string]string{"harness-r1-0": "r1", "harness-r2-0": "r2"} {
		n := &corev1.Node{}
		require.NoError(t, kai.Client.Get(ctx, types.NamespacedName{Name: name}, n))
		assert.Equal(t, want, n.Labels[rack], name)
		assert.Equal(t, "z1", n.Labels[zone], name)
		gpus := n.Status.Allocatable[realkai.GPU]
		assert.Equal(t, int64(4), gpus.Value(), name)
		assert.Empty(t, n.Spec.Taints, name)
	}
	require.NoError(t, kai.CheckRunning())
}
