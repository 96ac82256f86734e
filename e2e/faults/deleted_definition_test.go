//go:build e2e

package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestDeletedDefinitionWhileWorkloadRuns: the decision (docs/reliability.md) is that deleting a
// kind's only definition stops gangmap from grouping that kind, and nothing else: the PodGroups
// gangmap wrote stay as they are (KAI keeps scheduling the running gang; garbage collection
// removes them with their workload), the pods keep their labels, and a pod created afterwards is
// not touched by gangmap, so KAI's own pod-grouper groups it (its default grouper).
func TestDeletedDefinitionWhileWorkloadRuns(t *testing.T) {
	ctx := context.Background()
	ns := "deleted-definition"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	karta, err := framework.KartaFor("../testdata/customjob-karta.yaml", "faults-example-com-v1-doomedjob", "faults.example.com", "DoomedJob")
	require.NoError(t, err)
	require.NoError(t, cp.Client.Create(ctx, karta))
	g := startGrouper(t, ctx)
	var loaded float64
	waitDefinitions(t, ctx, g, func(n float64) bool { loaded = n; return n >= 2 })

	job := customJob(t, ctx, ns, "doomed", 2, "faults.example.com", "DoomedJob")
	_, err = cp.RunRoles(ctx, job, 4, "coordinator", "worker")
	require.NoError(t, err)
	pods := waitAllGrouped(t, ctx, ns, 3, timeout)
	name := fmt.Sprintf("pg-%s-customjob", job.GetUID())
	pg := &v2alpha2.PodGroup{}
	require.NoError(t, waitPodGroup(ctx, ns, name, pg, func(*v2alpha2.PodGroup) bool { return true }))
	assert.Equal(t, "faults-example-com-v1-doomedjob (cluster)", pg.Annotations[kaikeys.Definition])
	time.Sleep(time.Second) // let the grouper finish with the pods before their versions are kept

	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(pg), pg))
	podVersions := map[string]string{}
	for _, p := range pods {
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(&p), &p))
		podVersions[p.Name] = p.ResourceVersion
	}

	m, err := g.Metrics(ctx)
	require.NoError(t, err)
	watches := framework.Sum(m, "gangmap_workload_watches")
	require.GreaterOrEqual(t, watches, 1.0, "the grouped kind is watched")

	require.NoError(t, cp.Client.Delete(ctx, karta))
	waitDefinitions(t, ctx, g, func(n float64) bool { return n == loaded-1 })
	// The kind is no longer gangmap's: its watch (and informer) is stopped.
	err = framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		m, err := g.Metrics(ctx)
		return err == nil && framework.Sum(m, "gangmap_workload_watches") == watches-1, nil
	})
	require.NoError(t, err, "the watch of DoomedJob is stopped when its definition goes")

	// A new pod of the workload (a restarted worker, a scale-up) is left to KAI.
	// A merge patch: gangmap itself patches the workload (KAI's skip annotation), so an Update of
	// a stale copy would conflict.
	require.NoError(t, cp.Client.Patch(ctx, job, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"worker":{"replicas":3}}}`))))
	late, err := cp.CreatePodFor(ctx, job, "worker", 2)
	require.NoError(t, err)
	time.Sleep(3 * time.Second)

	got := &corev1.Pod{}
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(late), got))
	assert.Empty(t, got.Annotations[kaikeys.PodGroupName], "gangmap did not group the new pod")
	assert.Empty(t, got.Annotations[kaikeys.SkipPodGrouper], "KAI's pod-grouper is not told to skip it")
	assert.Empty(t, got.Labels[kaikeys.SubGroupName])
	assert.Equal(t, late.ResourceVersion, got.ResourceVersion, "the new pod was never written to")

	after := &v2alpha2.PodGroup{}
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(pg), after))
	assert.Equal(t, pg.ResourceVersion, after.ResourceVersion, "the existing PodGroup is untouched")
	assert.Equal(t, pg.Spec, after.Spec)
	for _, p := range pods {
		cur := &corev1.Pod{}
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(&p), cur))
		assert.Equal(t, podVersions[p.Name], cur.ResourceVersion, "pod %s untouched", p.Name)
		assert.Equal(t, name, cur.Annotations[kaikeys.PodGroupName], "pod %s keeps its PodGroup", p.Name)
	}
	pgs, err := cp.PodGroups(ctx, ns)
	require.NoError(t, err)
	assert.Len(t, pgs, 1, "no PodGroup added or removed")
}
