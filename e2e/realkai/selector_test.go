//go:build e2e_kai

package realkai_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestSelectorMissesRole: a new user's Karta for TypoJob (the CustomJob definition with the worker
// selector value misspelt "wroker") and a TypoJob of 1 coordinator (1 GPU) and 2 workers (2 GPUs
// each) on one 8-GPU node, where the whole gang fits. The operator labels the workers "worker",
// so the definition's worker role finds no pod. Issue 27 (must hold): no pod of a grouped workload
// is bound outside its gang, whatever the definition gets wrong. KAI binds a pod only as part of
// a PodGroup whose minimum is met (allocate.go Execute), so a worker that is put in a PodGroup of
// its own (minMember 1) is bound at once while the coordinator's gang waits: the partial start of
// issue 27. Whatever gangmap does with the unclaimed pods (they join the workload's gang, or the
// gang waits and is reported), KAI must never have some but not all of the 3 pods bound: this
// test watches for 20 s (20 scheduling cycles), with KAI's own pod-grouper running as in a KAI
// install (it must not give the unclaimed workers a PodGroup of their own either).
func TestSelectorMissesRole(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, kai.StartPodGrouper(ctx))
	t.Cleanup(func() { _ = kai.StopPodGrouper() })
	karta, err := framework.KartaFor("../testdata/customjob-karta.yaml", "e2e-example-com-v1-typojob", "e2e.example.com", "TypoJob")
	require.NoError(t, err)
	children, _, _ := unstructured.NestedSlice(karta.Object, "spec", "structureDefinition", "childComponents")
	misspelt := 0
	for _, c := range children {
		sel, _, _ := unstructured.NestedMap(c.(map[string]any), "podSelector", "componentTypeSelector")
		if sel["value"] == "worker" {
			sel["value"] = "wroker"
			_ = unstructured.SetNestedMap(c.(map[string]any), sel, "podSelector", "componentTypeSelector")
			misspelt++
		}
	}
	require.Equal(t, 1, misspelt)
	require.NoError(t, unstructured.SetNestedSlice(karta.Object, children, "spec", "structureDefinition", "childComponents"))
	require.NoError(t, kai.Client.Create(ctx, karta))
	waitClusterDefinitions(t, ctx, 2)

	// The operator creates the coordinator first and the workers once gangmap has taken the
	// workload (its skip mark is on the TypoJob), or all three at once.
	for _, order := range []string{"workers-after-coordinator", "all-at-once"} {
		t.Run(order, func(t *testing.T) {
			b := newBed(t, "selector-miss-"+order, 1, 8)
			job := b.readWorkload(t, "../testdata/customjob.yaml")
			job.SetKind("TypoJob")
			require.NoError(t, kai.Client.Create(ctx, job))
			if order == "workers-after-coordinator" {
				c, err := kai.CreatePodFor(ctx, job, "coordinator", 0)
				require.NoError(t, err)
				_, err = kai.WaitForPodAnnotation(ctx, b.ns, c.Name, kaikeys.PodGroupName, admitTimeout)
				require.NoError(t, err, kai.Report(ctx, b.ns))
				require.NoError(t, framework.WaitFor(ctx, admitTimeout, func(ctx context.Context) (bool, error) {
					err := kai.Client.Get(ctx, client.ObjectKeyFromObject(job), job)
					return err == nil && job.GetAnnotations()[kaikeys.SkipPodGrouper] == "true", nil
				}), "gangmap marks the TypoJob")
				for i := 0; i < 2; i++ {
					_, err := kai.CreatePodFor(ctx, job, "worker", i)
					require.NoError(t, err)
				}
			} else {
				pods, err := kai.RunRoles(ctx, job, 3, "coordinator", "worker")
				require.NoError(t, err)
				require.Len(t, pods, 3)
			}
			p, err := kai.AssertAllOrNone(ctx, b.ns, labels.Everything(), 3, 2*holdPeriod)
			logGroups(t, ctx, b.ns, append(p.Bound, p.Pending...))
			require.NoError(t, err, "KAI never has part of the TypoJob's gang bound")
			t.Logf("after %v: %s", 2*holdPeriod, p)
		})
	}
}

// logGroups logs each pod's role label, PodGroup and sub-group, and the namespace's Warning Events.
func logGroups(t *testing.T, ctx context.Context, ns string, pods []corev1.Pod) {
	t.Helper()
	for _, pod := range pods {
		t.Logf("pod %s: node %q, role label %q, pod-group-name %q, sub-group %q", pod.Name, pod.Spec.NodeName, pod.Labels["e2e.example.com/role"],
			pod.Annotations[kaikeys.PodGroupName], pod.Labels[kaikeys.SubGroupName])
	}
	var events corev1.EventList
	if err := kai.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Logf("events: %v", err)
	}
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning {
			t.Logf("Warning %s on %s %s: %s", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
		}
	}
}

// waitClusterDefinitions waits until gangmap has loaded at least n cluster definitions (Karta
// objects, gangmap_definitions{source="cluster"} in any state).
func waitClusterDefinitions(t *testing.T, ctx context.Context, n float64) {
	t.Helper()
	var m map[string]float64
	err := framework.WaitFor(ctx, admitTimeout, func(ctx context.Context) (bool, error) {
		var err error
		if m, err = gm.Metrics(ctx); err != nil {
			return false, nil
		}
		return framework.Sum(m, "gangmap_definitions", `source="cluster"`) >= n, nil
	})
	require.NoError(t, err, "gangmap loaded %v cluster definitions; gangmap_definitions: %v", n, framework.Sum(m, "gangmap_definitions", `source="cluster"`))
}
