package workloadmap

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// TestPlanCacheBoundedByElements: the plan cache is bounded by the size of its plans, not only
// by their number. Eight LeaderWorkerSets of 2,000 groups (a plan of 2,000 PodGroups, 4,000
// sub-groups and 2 roles: 6,003 elements each) with the default bound would all stay cached
// (48,024 elements); under a bound of 20,000 only the 3 most recently planned stay, the total
// never passes the bound, and an evicted workload is planned again when asked (a cache miss,
// not an error). Before, only the count (4,096 plans) bounded the cache: dozens of such
// workloads, one pod each, filled the grouper's heap.
func TestPlanCacheBoundedByElements(t *testing.T) {
	g := newGrouper(t)
	g.plans.maxElements = 20000
	lws := func(i int) *unstructured.Unstructured {
		return workload(t, "lws-sglang-gpu-limits-only.yaml", func(u *unstructured.Unstructured) {
			u.SetName(fmt.Sprintf("big-%d", i))
			u.SetUID(types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)))
			require.NoError(t, unstructured.SetNestedField(u.Object, int64(2000), "spec", "replicas"))
		})
	}
	ctx := context.Background()
	for i := range 8 {
		p, _, err := g.Plan(ctx, lws(i))
		require.NoError(t, err)
		require.Len(t, p.PodGroups, 2000)
		assert.LessOrEqual(t, g.plans.elements, int64(20000), "after workload %d", i)
	}
	assert.Equal(t, int64(8), g.builds.Load())
	assert.Equal(t, 3, g.plans.lru.Len(), "3 plans of 6,003 elements fit in 20,000")
	assert.Equal(t, int64(3*6003), g.plans.elements)

	_, _, err := g.Plan(ctx, lws(7))
	require.NoError(t, err)
	assert.Equal(t, int64(8), g.builds.Load(), "the most recent plan is still cached")
	_, _, err = g.Plan(ctx, lws(0))
	require.NoError(t, err)
	assert.Equal(t, int64(9), g.builds.Load(), "an evicted plan is built again")
	assert.Equal(t, int64(3*6003), g.plans.elements)

	g.Forget("bench", lws(0).GetUID())
	assert.Equal(t, int64(2*6003), g.plans.elements, "Forget gives the elements back")
}
