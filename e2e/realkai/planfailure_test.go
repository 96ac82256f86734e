//go:build e2e_kai

package realkai_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/controller"
)

// TestPlanFailureHoldsTheGang: a Karta for BrokenJob (the CustomJob definition, its worker
// replicasPath broken) and BrokenJobs of 1 coordinator (1 GPU) and 2 workers (2 GPUs each) on one
// 8-GPU node, where the whole gang fits, with KAI's own pod-grouper running as in a KAI install.
// Issue 27 (must hold): no pod of a grouped workload is bound outside its gang, whatever the
// definition gets wrong. KAI's pod-grouper gives a pod without KAI's skip annotation a PodGroup of
// its own top owner (pkg/podgrouper/pod_controller.go Reconcile; the default plugin's minMember
// is 1, defaultgrouper.go GetPodGroupMetadata), and KAI then binds each pod as it comes (allocate.go
// Execute: a PodGroup of minimum 1 is admitted by one pod): the split gang guarded against here.
//   - refused: replicasPath .metadata.name, which gangmap's CRD lint refuses (the BrokenJob CRD
//     has no such field): the kind's only definition is unusable (definitions.Registry.Unusable),
//     so its pods are held (KAI's skip annotation and gangmap.io/held, no PodGroup) and KAI binds
//     none of them for 20 scheduling cycles.
//   - plan fails: a path the lint cannot judge (a label, a string where a count belongs): the plan
//     fails, the pods stay held and carry gangmap's GroupingFailed Event naming the count.
//   - fixed: the same pods are grouped into one gang and bound whole.
//   - deleted: a second BrokenJob's pods, held under the refused Karta, are handed back to KAI's
//     pod-grouper when the Karta is deleted (the kind is no longer gangmap's, as for any new pod
//     of a kind whose definition was deleted: docs/reliability.md), and KAI's default grouper
//     groups them.
func TestPlanFailureHoldsTheGang(t *testing.T) {
	ctx := context.Background()
	// KAI's Karta fallback off: with it on (KAI's default), KAI v0.17's pod-grouper panics for a
	// kind with no Karta (plugins/karta/grouper.go getGangSchedulingInstructions, seen in this
	// test's first runs) and groups no such pod at all; off, its default grouper groups every pod
	// it does not skip, a PodGroup of minimum 1 per top owner, which is what the hold must defeat.
	require.NoError(t, kai.StartPodGrouper(ctx, "--generic-karta-fallback=false"))
	t.Cleanup(func() { _ = kai.StopPodGrouper() })
	karta, err := framework.KartaFor("../testdata/customjob-karta.yaml", "e2e-example-com-v1-brokenjob", "e2e.example.com", "BrokenJob")
	require.NoError(t, err)
	setWorkerReplicasPath(t, karta, ".metadata.name")
	require.NoError(t, kai.Client.Create(ctx, karta))
	waitClusterDefinitions(t, ctx, 2)

	b := newBed(t, "plan-failure", 1, 8)
	createHeld := func(t *testing.T, name string) []*corev1.Pod {
		job := b.readWorkload(t, "../testdata/customjob.yaml")
		job.SetKind("BrokenJob")
		job.SetName(name)
		require.NoError(t, kai.Client.Create(ctx, job))
		pods, err := kai.RunRoles(ctx, job, 3, "coordinator", "worker")
		require.NoError(t, err)
		require.Len(t, pods, 3)
		return pods
	}
	assertHeld := func(t *testing.T, why string) {
		p, err := kai.AssertNoneBound(ctx, b.ns, labels.Everything(), 2*holdPeriod)
		logGroups(t, ctx, b.ns, append(p.Bound, p.Pending...))
		require.NoError(t, err, "KAI binds no pod of a workload gangmap cannot plan (%s)", why)
		for _, pod := range p.Pending {
			assert.Equal(t, "true", pod.Annotations[kaikeys.SkipPodGrouper], "%s is held from KAI's pod-grouper (%s)", pod.Name, why)
			assert.Equal(t, "true", pod.Annotations[kaikeys.Held], "%s carries gangmap's held mark (%s)", pod.Name, why)
			assert.Empty(t, pod.Annotations[kaikeys.PodGroupName], "%s is in no PodGroup, neither gangmap's nor KAI's (%s)", pod.Name, why)
		}
	}
	pods := createHeld(t, "train")
	assertHeld(t, "refused definition")

	updateWorkerReplicasPath(t, ctx, karta, `.spec.worker.template.metadata.labels["e2e.example.com/role"]`)
	assertPodEvent(t, ctx, b.ns, controller.ReasonGroupingFailed, "expected")
	assertHeld(t, "failing plan")

	updateWorkerReplicasPath(t, ctx, karta, ".spec.worker.replicas")
	pgs := waitGrouped(t, ctx, pods)
	require.Len(t, pgs, 1, "the fixed definition puts the BrokenJob's 3 pods in one PodGroup")
	p, err := kai.WaitAllBound(ctx, b.ns, labels.Everything(), 3, admitTimeout)
	require.NoError(t, err, "the gang is bound whole once gangmap can plan it")
	for _, pod := range p.Bound {
		assert.Contains(t, pgs, pod.Annotations[kaikeys.PodGroupName], "%s was bound in the gang's PodGroup", pod.Name)
		assert.Empty(t, pod.Annotations[kaikeys.Held], "%s is no longer marked held", pod.Name)
	}

	updateWorkerReplicasPath(t, ctx, karta, ".metadata.name")
	second := createHeld(t, "again")
	for _, pod := range second {
		got, err := kai.WaitForPodAnnotation(ctx, b.ns, pod.Name, kaikeys.Held, admitTimeout)
		require.NoError(t, err, kai.Report(ctx, b.ns))
		assert.Empty(t, got.Spec.NodeName, "%s is held, not bound", pod.Name)
	}
	require.NoError(t, kai.Client.Delete(ctx, karta), "the admin deletes the broken Karta")
	for _, pod := range second {
		got, err := kai.WaitForPodAnnotation(ctx, b.ns, pod.Name, kaikeys.PodGroupName, admitTimeout)
		require.NoError(t, err, "KAI's pod-grouper groups %s once gangmap hands it back; %s", pod.Name, kai.Report(ctx, b.ns))
		assert.Empty(t, got.Annotations[kaikeys.Held], "%s: the held mark is removed", pod.Name)
		assert.Empty(t, got.Annotations[kaikeys.SkipPodGrouper], "%s: KAI's skip annotation is removed", pod.Name)
	}
}

// updateWorkerReplicasPath sets the worker replicasPath of the stored karta (gangmap reloads it
// through its Karta watch, and requeues every pod).
func updateWorkerReplicasPath(t *testing.T, ctx context.Context, karta *unstructured.Unstructured, path string) {
	t.Helper()
	require.NoError(t, kai.Client.Get(ctx, client.ObjectKeyFromObject(karta), karta))
	setWorkerReplicasPath(t, karta, path)
	require.NoError(t, kai.Client.Update(ctx, karta))
}

// setWorkerReplicasPath sets the worker component's scaleDefinition.replicasPath of karta.
func setWorkerReplicasPath(t *testing.T, karta *unstructured.Unstructured, path string) {
	t.Helper()
	children, _, _ := unstructured.NestedSlice(karta.Object, "spec", "structureDefinition", "childComponents")
	set := 0
	for _, c := range children {
		if m := c.(map[string]any); m["name"] == "worker" {
			require.NoError(t, unstructured.SetNestedField(m, path, "scaleDefinition", "replicasPath"))
			set++
		}
	}
	require.Equal(t, 1, set)
	require.NoError(t, unstructured.SetNestedSlice(karta.Object, children, "spec", "structureDefinition", "childComponents"))
}

// assertPodEvent waits until a pod of ns has an Event of reason whose message contains part.
func assertPodEvent(t *testing.T, ctx context.Context, ns, reason, part string) {
	t.Helper()
	var seen []string
	err := framework.WaitFor(ctx, admitTimeout, func(ctx context.Context) (bool, error) {
		var events corev1.EventList
		if err := kai.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		seen = seen[:0]
		for _, e := range events.Items {
			seen = append(seen, e.Reason+": "+e.Message)
			if e.InvolvedObject.Kind == "Pod" && e.Reason == reason && strings.Contains(e.Message, part) {
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "a pod's %s Event containing %q; Events: %v", reason, part, seen)
}
