package workloadmap

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPlanCacheKeyedByNamespaceAndUID: the plan cache is keyed by the workload's namespace and UID
// and checks its name, so two objects claiming one UID (with the same resourceVersion) in two
// namespaces, or under two names, never share a plan: each gets the plan of its own spec.
func TestPlanCacheKeyedByNamespaceAndUID(t *testing.T) {
	g := newGrouper(t)
	ctx := context.Background()
	replicas := func(n int64) func(*unstructured.Unstructured) {
		return func(o *unstructured.Unstructured) {
			require.NoError(t, unstructured.SetNestedField(o.Object, n, "spec", "replicas"))
		}
	}
	a := workload(t, "lws-replicas2-size4-8gpu-limits.yaml", replicas(2))
	a.SetNamespace("team-a")
	b := workload(t, "lws-replicas2-size4-8gpu-limits.yaml", replicas(3))
	b.SetNamespace("team-b")
	c := workload(t, "lws-replicas2-size4-8gpu-limits.yaml", replicas(1))
	c.SetNamespace("team-a")
	c.SetName("other-name")

	planA, _, err := g.Plan(ctx, a)
	require.NoError(t, err)
	planB, _, err := g.Plan(ctx, b)
	require.NoError(t, err)
	planC, _, err := g.Plan(ctx, c)
	require.NoError(t, err)
	assert.Len(t, planA.PodGroups, 2, "team-a's LWS: 2 groups")
	assert.Len(t, planB.PodGroups, 3, "team-b's object with the same UID gets its own plan")
	assert.Len(t, planC.PodGroups, 1, "another name in team-a with the same UID gets its own plan")
}
