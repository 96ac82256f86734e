//go:build e2e_kai

package realkai_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestGangmapKilledMidGang: KAI's own pod-grouper runs beside gangmap (its defaults: Karta
// fallback on), as in a KAI install. A CustomJob of 1 coordinator (1 GPU) and 4 workers (2 GPUs
// each, 9 GPUs) on two 8-GPU nodes: the operator creates the coordinator and 2 workers, gangmap
// groups them, and gangmap is killed (SIGKILL); the operator creates the other 2 workers while
// gangmap is down (its webhook unreachable, failurePolicy Ignore lets the pods in unmarked).
//   - While gangmap is down KAI binds none of the 5 pods: the 3 grouped ones are in a PodGroup
//     that requires all 5, and KAI's pod-grouper leaves the 2 new ones alone because gangmap
//     marked the workload kai.scheduler/skip-podgrouper: "true" (KAI pkg/podgrouper/pod_controller.go
//     Reconcile returns before grouping when shouldSkipPodGrouper(pod) or shouldSkipAnyOwner(its
//     owners)), so no PodGroup of KAI's lets a worker start alone.
//   - When gangmap is back, it groups the 2 new workers and KAI binds all 5 together.
func TestGangmapKilledMidGang(t *testing.T) {
	ctx := context.Background()
	b := newBed(t, "killed-mid-gang", 2, 8)
	require.NoError(t, kai.StartPodGrouper(ctx))
	t.Cleanup(func() { _ = kai.StopPodGrouper() })
	t.Cleanup(func() {
		if !gm.Running() {
			require.NoError(t, gm.Start(context.Background()), "gangmap restarted for the next tests")
		}
	})
	job := b.readWorkload(t, "../testdata/customjob.yaml")
	job.SetName("killed")
	require.NoError(t, unstructured.SetNestedField(job.Object, int64(4), "spec", "worker", "replicas"))
	require.NoError(t, kai.Client.Create(ctx, job))
	var first []string
	for _, r := range []struct {
		role string
		i    int
	}{{"coordinator", 0}, {"worker", 0}, {"worker", 1}} {
		p, err := kai.CreatePodFor(ctx, job, r.role, r.i)
		require.NoError(t, err)
		first = append(first, p.Name)
	}
	var pgName string
	for _, name := range first {
		p, err := kai.WaitForPodAnnotation(ctx, b.ns, name, kaikeys.PodGroupName, admitTimeout)
		require.NoError(t, err, kai.Report(ctx, b.ns))
		pgName = p.Annotations[kaikeys.PodGroupName]
	}

	require.NoError(t, gm.Kill())
	var late []string
	for i := 2; i < 4; i++ {
		p, err := kai.CreatePodFor(ctx, job, "worker", i)
		require.NoError(t, err)
		late = append(late, p.Name)
	}
	p, err := kai.AssertNoneBound(ctx, b.ns, labels.Everything(), holdPeriod)
	require.NoError(t, err, "gangmap down with 2 of 5 pods ungrouped: KAI binds none")
	require.Len(t, p.Pending, 5)
	for _, pod := range p.Pending {
		if pod.Annotations[kaikeys.PodGroupName] != "" {
			assert.Equal(t, pgName, pod.Annotations[kaikeys.PodGroupName], "%s: no PodGroup but gangmap's while gangmap is down", pod.Name)
		}
	}
	pgs, err := kai.PodGroups(ctx, b.ns)
	require.NoError(t, err)
	for _, pg := range pgs {
		assert.Equal(t, pgName, pg.Name, "KAI's pod-grouper wrote no PodGroup for the workload while gangmap was down")
	}

	require.NoError(t, gm.Start(ctx))
	all, err := kai.WaitAllBound(ctx, b.ns, labels.Everything(), 5, admitTimeout)
	require.NoError(t, err, "gangmap back: KAI binds the whole gang")
	for _, pod := range all.Bound {
		assert.Equal(t, pgName, pod.Annotations[kaikeys.PodGroupName], pod.Name)
	}
}
