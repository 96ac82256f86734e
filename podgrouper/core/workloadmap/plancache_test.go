package workloadmap

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/gang"
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

// TestPlanCacheSizeAndLookups: Grouper.PlanCacheSize bounds the cached plans (two here): a third
// workload evicts the least recently used plan, which is built again when read (a miss); a
// workload's new resourceVersion is a stale lookup and a build; every other read is a hit.
// gangmap_plan_cache_lookups_total counts each.
func TestPlanCacheSizeAndLookups(t *testing.T) {
	g := newGrouper(t)
	g.PlanCacheSize = 2
	job := func(i int, rv string) *unstructured.Unstructured {
		return workload(t, "jobset-leader-workers.yaml", func(u *unstructured.Unstructured) {
			u.SetName(fmt.Sprintf("js-%d", i))
			u.SetUID(types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)))
			u.SetResourceVersion(rv)
		})
	}
	count := func(result string) float64 { return testutil.ToFloat64(PlanCacheLookupsTotal.WithLabelValues(result)) }
	hits, misses, stale := count("hit"), count("miss"), count("stale")
	ctx := context.Background()
	for _, step := range []struct {
		workload, rv string
		builds       int64
	}{
		{"0", "1", 1}, {"0", "1", 1}, {"1", "1", 2}, {"0", "1", 2}, // both cached
		{"2", "1", 3},                // evicts 1, the least recently used
		{"0", "1", 3}, {"1", "1", 4}, // 1 built again, evicting 2
		{"1", "2", 5}, // a new version
	} {
		i := int(step.workload[0] - '0')
		_, _, err := g.Plan(ctx, job(i, step.rv))
		require.NoError(t, err)
		assert.Equal(t, step.builds, g.builds.Load(), "after workload %s at version %s", step.workload, step.rv)
	}
	assert.Equal(t, 2, g.plans.lru.Len())
	assert.Equal(t, 3.0, count("hit")-hits)
	assert.Equal(t, 4.0, count("miss")-misses)
	assert.Equal(t, 1.0, count("stale")-stale)
}

// TestEvictedPlanRebuiltEqual: with a plan cache of one plan, each sample's plan is evicted by the
// next sample's and built again when its workload is read again: the rebuilt plan is another
// object with exactly the same content (PodGroups, members, roles, misses), so the PodGroups
// written and the findings' requirements do not change with the cache's size.
func TestEvictedPlanRebuiltEqual(t *testing.T) {
	g := newGrouper(t)
	g.PlanCacheSize = 1
	ctx := context.Background()
	samples := []string{"jobset-leader-workers.yaml", "lws-replicas2-size4-8gpu-limits.yaml", "raycluster-three-groups-ray-gpu-resource-only.yaml",
		"mpijob-tf-benchmarks-worker-gpu-limits.yaml", "milvus-cluster-components-map-resources.yaml"}
	first := map[string]*gang.Plan{}
	for round := range 2 {
		for i, file := range samples {
			w := workload(t, file, func(u *unstructured.Unstructured) {
				u.SetUID(types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)))
			})
			plan, _, err := g.Plan(ctx, w)
			require.NoError(t, err, file)
			require.NotNil(t, plan, file)
			if round == 0 {
				first[file] = plan
				continue
			}
			assert.NotSame(t, first[file], plan, "%s: built again after its eviction", file)
			assert.Equal(t, first[file], plan, file)
		}
	}
	assert.Equal(t, int64(2*len(samples)), g.builds.Load())
}
