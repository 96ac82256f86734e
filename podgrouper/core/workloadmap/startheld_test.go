package workloadmap

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// The PodGroup of a workload whose definition has a start rule says which roles the rule keeps
// out of the minimum now (gangmap.io/start-held), and follows the workload's status: JobSet's
// dependsOn example before any status (launcher and worker wait), then with the initializer's
// Job succeeded and the launcher's ready (only the finished initializer is held).
func TestStartHeldAnnotation(t *testing.T) {
	g := newGrouper(t)
	js := workload(t, "jobset-depends-on-initializer-launcher-worker.yaml", nil)
	p := pod("init", map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "initializer", "jobset.sigs.k8s.io/job-index": "0"})
	md, err := g.GetPodGroupMetadata(context.Background(), js, p)
	require.NoError(t, err)
	assert.JSONEq(t, `{"launcher":"dependsOn: the JobSet controller creates it only when initializer is Complete",
		"worker":"dependsOn: the JobSet controller creates it only when launcher is Ready"}`, md.Annotations[kaikeys.StartHeld])
	assert.Equal(t, int32(1), *md.MinSubGroup)

	require.NoError(t, unstructured.SetNestedSlice(js.Object, []any{
		map[string]any{"name": "initializer", "succeeded": int64(1)},
		map[string]any{"name": "launcher", "ready": int64(1)},
		map[string]any{"name": "worker"},
	}, "status", "replicatedJobsStatus"))
	js.SetResourceVersion("2")
	w := pod("worker-0", map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "worker", "jobset.sigs.k8s.io/job-index": "0"})
	md, err = g.GetPodGroupMetadata(context.Background(), js, w)
	require.NoError(t, err)
	assert.JSONEq(t, `{"initializer":"all 1 of its Jobs succeeded (status.replicatedJobsStatus): its pods have finished"}`, md.Annotations[kaikeys.StartHeld])
	assert.Equal(t, int32(3), *md.MinSubGroup, "launcher and worker required, the finished initializer (minimum 0) counted")
	assert.Equal(t, int32(4), md.FindSubGroupForPod("bench", "worker-0").MinAvailable)

	// A definition with a start rule that holds nothing now (LWS without LeaderReady) writes {},
	// so a value written earlier never lingers (PodGroup annotations are merged on update).
	lws := workload(t, "lws-replicas2-size4-8gpu-limits.yaml", nil)
	md, err = g.GetPodGroupMetadata(context.Background(), lws, pod("l", map[string]string{
		"leaderworkerset.sigs.k8s.io/group-index": "0", "leaderworkerset.sigs.k8s.io/worker-index": "0"}))
	require.NoError(t, err)
	assert.Equal(t, "{}", md.Annotations[kaikeys.StartHeld])
}

// Two roles a start rule holds for the same reason are released together: JobSet's dependsOn
// example with the worker depending, like the launcher, on the initializer being Complete. The
// JobSet controller creates both in one reconcile (jobset_controller.go createJobs), and a
// launcher pod may reach the grouper before the JobSet's status says the initializer completed:
// the PodGroup must then require the worker too (written with its minimum, waiting for its pods,
// which are being created), not be a launcher-only gang KAI would admit alone.
func TestRolesHeldForOneReasonAreReleasedTogether(t *testing.T) {
	g := newGrouper(t)
	js := workload(t, "jobset-depends-on-initializer-launcher-worker.yaml", func(u *unstructured.Unstructured) {
		rjs, _, err := unstructured.NestedSlice(u.Object, "spec", "replicatedJobs")
		require.NoError(t, err)
		require.NoError(t, unstructured.SetNestedSlice(rjs[2].(map[string]any), []any{
			map[string]any{"name": "initializer", "status": "Complete"}}, "dependsOn"))
		require.NoError(t, unstructured.SetNestedSlice(u.Object, rjs, "spec", "replicatedJobs"))
	})
	p := pod("launcher-0", map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "launcher", "jobset.sigs.k8s.io/job-index": "0"})
	md, err := g.GetPodGroupMetadata(context.Background(), js, p)
	require.NoError(t, err)
	written := map[string]int32{}
	for _, sg := range md.SubGroups {
		if sg != nil && sg.Deferred == "" {
			written[sg.Name] = sg.MinAvailable
		}
	}
	assert.Contains(t, written, "launcher", "the pod's own role is released")
	assert.Contains(t, written, "worker", "the role held for the same reason is released with it")
	require.NotNil(t, md.MinSubGroup)
	assert.Equal(t, int32(3), *md.MinSubGroup, "initializer, launcher and worker all required")

	// The original example: the worker waits for the launcher to be Ready, a reason of its own,
	// so a launcher pod releases the launcher only.
	js = workload(t, "jobset-depends-on-initializer-launcher-worker.yaml", func(u *unstructured.Unstructured) { u.SetUID("another-jobset") })
	md, err = g.GetPodGroupMetadata(context.Background(), js, p)
	require.NoError(t, err)
	for _, sg := range md.SubGroups {
		if sg != nil && sg.Name == "worker" {
			assert.NotEmpty(t, sg.Deferred, "the worker stays deferred")
		}
	}
	assert.Equal(t, int32(2), *md.MinSubGroup, "initializer and launcher")
}
