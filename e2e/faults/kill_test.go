//go:build e2e

package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestKillGrouperMidGrouping: a LeaderWorkerSet of 20 groups × 10 pods (200 pods, 20 per-group
// gangs) is being created and grouped when the grouper is killed with SIGKILL (no graceful
// shutdown); the rest of its pods are created while no grouper runs. A new
// grouper process then finishes the job: every pod ends in its group's PodGroup with the right
// sub-group, and the namespace holds exactly the 20 expected PodGroups, each with minSubGroup 2,
// leader 1 and worker 9 — none duplicated, none left with a partial minimum.
func TestKillGrouperMidGrouping(t *testing.T) {
	ctx := context.Background()
	ns := "kill"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	const groups, size = 20, 10
	lws, err := framework.ReadObject("../testdata/lws-replicas2-size4-8gpu-limits.yaml")
	require.NoError(t, err)
	lws.SetName("kill")
	lws.SetNamespace(ns)
	require.NoError(t, unstructured.SetNestedField(lws.Object, int64(groups), "spec", "replicas"))
	require.NoError(t, unstructured.SetNestedField(lws.Object, int64(size), "spec", "leaderWorkerTemplate", "size"))
	require.NoError(t, cp.Client.Create(ctx, lws))

	g := startGrouper(t, ctx)
	// The operator creates the 240 objects (20 leader pods, 20 worker StatefulSets, 180 worker
	// pods, ...) while the grouper groups them; the grouper is killed as soon as 20 pods are
	// grouped, and the operator goes on creating pods while no grouper runs.
	type result struct {
		pods int
		err  error
	}
	created := make(chan result, 1)
	go func() {
		pods, err := cp.RunLeaderWorkerSet(ctx, lws)
		created <- result{len(pods), err}
	}()
	var atKill int
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ps, err := cp.Pods(ctx, ns)
		if err != nil {
			return false, err
		}
		atKill = grouped(ps)
		return atKill >= 20, nil
	})
	require.NoError(t, err)
	require.NoError(t, g.Kill())
	pgs, err := cp.PodGroups(ctx, ns)
	require.NoError(t, err)
	ps, err := cp.Pods(ctx, ns)
	require.NoError(t, err)
	t.Logf("killed the grouper (SIGKILL) with %d of %d pods created so far grouped (%d seen before the kill) and %d of %d PodGroups written",
		grouped(ps), len(ps), atKill, len(pgs), groups)
	require.Less(t, grouped(ps), groups*size, "the kill came before the grouper finished")
	res := <-created
	require.NoError(t, res.err)
	require.Equal(t, groups*size, res.pods)

	restarted := time.Now()
	require.NoError(t, g.Start(ctx))
	got := waitAllGrouped(t, ctx, ns, groups*size, 2*time.Minute)
	t.Logf("the restarted grouper grouped the rest in %v", time.Since(restarted).Round(10*time.Millisecond))

	want := map[string]bool{}
	for i := 0; i < groups; i++ {
		want[fmt.Sprintf("pg-%s-group-%d", lws.GetUID(), i)] = true
	}
	for _, p := range got {
		assert.Equal(t, fmt.Sprintf("pg-%s-group-%s", lws.GetUID(), p.Labels[framework.LabelGroupIndex]), p.Annotations[kaikeys.PodGroupName], p.Name)
		role := "worker"
		if p.Labels[framework.LabelWorkerIndex] == "0" {
			role = "leader"
		}
		assert.Equal(t, role, p.Labels[kaikeys.SubGroupName], p.Name)
		assert.Equal(t, "true", p.Annotations[kaikeys.SkipPodGrouper], p.Name)
	}
	// Every PodGroup the pods name exists with the whole gang; the namespace has no other.
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		pgs, err = cp.PodGroups(ctx, ns)
		return err == nil && len(pgs) >= groups, err
	}))
	names := map[string]int{}
	for _, pg := range pgs {
		names[pg.Name]++
		assert.True(t, want[pg.Name], "unexpected PodGroup %s", pg.Name)
		assert.Nil(t, pg.Spec.MinMember, pg.Name)
		assert.Equal(t, ptr.To[int32](2), pg.Spec.MinSubGroup, pg.Name)
		assert.Equal(t, []v2alpha2.SubGroup{
			{Name: "leader", MinMember: ptr.To[int32](1)},
			{Name: "worker", MinMember: ptr.To[int32](size - 1)},
		}, pg.Spec.SubGroups, pg.Name)
		assert.Equal(t, fmt.Sprint(8*size), pg.Annotations[kaikeys.GPUs], pg.Name)
		require.Len(t, pg.OwnerReferences, 1, pg.Name)
		assert.Equal(t, lws.GetUID(), pg.OwnerReferences[0].UID, pg.Name)
	}
	assert.Len(t, pgs, groups, "exactly one PodGroup per group")
	for n, c := range names {
		assert.Equal(t, 1, c, "PodGroup %s listed once", n)
	}
}
