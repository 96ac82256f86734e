//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/controller"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
)

const poolLabel = "e2e.example.com/pool"

// TestPodOutsidePlanOfMarkedWorkload: a CustomJob-shaped kind whose worker component has one
// instance per entry of spec.worker.pools (instanceIdPath), told apart by the pod label
// e2e.example.com/pool. The job names pool "a"; its coordinator and two workers of pool a are
// one gang, and gangmap marks the workload, so KAI's pod-grouper skips every pod of it. Then:
//
//   - the workload is scaled to pools a and b and a pod of pool b is created at once: the plan of
//     the cached workload may be stale, so the decider re-reads the workload and the pod joins the
//     gang (sub-groups coordinator, a and b), never KAI's default PodGroup and never reported outside the plan;
//   - a worker pod of pool "zzz", which the workload never names: before, a plan error retried
//     with backoff for good, and no PodGroup from anyone; now it gets KAI's default PodGroup
//     (pg-<name>-<UID>, minMember 1), a Warning Event naming the workload, the pod and the
//     instance, gangmap_pods_outside_plan_total, and no grouping error; the gang is unchanged.
func TestPodOutsidePlanOfMarkedWorkload(t *testing.T) {
	ctx := context.Background()
	kind := "PoolJob"
	findingsKind(t, ctx, kind, func(k *unstructured.Unstructured) {
		w := component(t, k, "worker")
		w["instanceIdPath"] = ".spec.worker.pools[]?"
		w["podSelector"].(map[string]any)["componentInstanceSelector"] = map[string]any{"idPath": `.metadata.labels["` + poolLabel + `"]`}
		setComponents(t, k, component(t, k, "coordinator"), w)
	})
	ns := "outside-plan"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	job, err := framework.ReadObject("testdata/customjob.yaml")
	require.NoError(t, err)
	job.SetAPIVersion(findingsGroup + "/v1")
	job.SetKind(kind)
	job.SetNamespace(ns)
	require.NoError(t, unstructured.SetNestedStringSlice(job.Object, []string{"a"}, "spec", "worker", "pools"))
	require.NoError(t, framework.WaitFor(ctx, timeout, func(context.Context) (bool, error) {
		return grouper.Registry.Lookup(job.GroupVersionKind()) != nil, nil
	}))
	require.NoError(t, cp.Client.Create(ctx, job))

	worker := func(name, pool string) *corev1.Pod {
		return framework.PodFromTemplate(customTemplate(t, job, "worker"), ns, name, map[string]string{poolLabel: pool}, framework.UnstructuredOwnerRef(job))
	}
	for _, p := range []*corev1.Pod{customJobPod(t, job, "coordinator", "c-0"), worker("w-a-0", "a"), worker("w-a-1", "a")} {
		require.NoError(t, cp.Client.Create(ctx, p))
	}
	gangName := fmt.Sprintf("pg-%s-customjob", job.GetUID())
	waitSubGroups(t, ctx, ns, gangName, "coordinator=1 a=2")
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(job.GroupVersionKind())
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(job), got); err != nil {
			return false, err
		}
		return got.GetAnnotations()[kaikeys.SkipPodGrouper] == "true", nil
	}), "gangmap marks the workload: KAI's pod-grouper skips its pods from now on")
	planErrors := groupingErrors(t, "Plan")

	// Scale-up: the pod of the new pool joins the gang.
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(job), job))
	require.NoError(t, unstructured.SetNestedStringSlice(job.Object, []string{"a", "b"}, "spec", "worker", "pools"))
	require.NoError(t, cp.Client.Update(ctx, job))
	require.NoError(t, cp.Client.Create(ctx, worker("w-b-0", "b")))
	got, err := cp.WaitForPodAnnotation(ctx, ns, "w-b-0", kaikeys.PodGroupName, timeout)
	require.NoError(t, err)
	assert.Equal(t, gangName, got.Annotations[kaikeys.PodGroupName], "the pod of the new pool joins the gang")
	waitSubGroups(t, ctx, ns, gangName, "coordinator=1 a=2 b=2")

	// A pool the workload never names.
	before := outsidePlanCount(t, kind)
	require.NoError(t, cp.Client.Create(ctx, worker("w-zzz-0", "zzz")))
	got, err = cp.WaitForPodAnnotation(ctx, ns, "w-zzz-0", kaikeys.PodGroupName, timeout)
	require.NoError(t, err, "the pod gets a PodGroup although KAI's pod-grouper skips the workload")
	assert.Equal(t, gangName, got.Annotations[kaikeys.PodGroupName], "it joins the gang, never a PodGroup of its own")
	assert.NotContains(t, got.Labels, kaikeys.SubGroupName, "in no sub-group: KAI does not schedule it (job_info.go AddTaskInfo)")
	ev := waitEvent(t, ctx, ns, "w-zzz-0", controller.ReasonPodOutsidePlan, "worker[zzz]", 15*time.Second)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	assert.Contains(t, ev.Message, "pod w-zzz-0 of "+kind+" "+ns+"/train is in worker[zzz]")
	assert.Contains(t, ev.Message, "it joins the gang's PodGroup "+gangName+" in no sub-group")
	waitEvent(t, ctx, ns, "train", controller.ReasonPodOutsidePlan, "pod w-zzz-0", 5*time.Second)
	assert.Equal(t, before+1, outsidePlanCount(t, kind))
	// The workload's findings count it too (README: reported at once, UnclaimedPods).
	waitEvent(t, ctx, ns, "train", string(findings.UnclaimedPods), "1 pod(s) of the workload are in an instance or replica the gang plan does not count (e.g. pod w-zzz-0)", 15*time.Second)
	assert.Equal(t, planErrors, groupingErrors(t, "Plan"), "no plan error, so no retry with backoff")
	assert.False(t, hasEvent(t, ctx, ns, "w-b-0", controller.ReasonPodOutsidePlan), "the scaled-up pod was never outside the plan")
	waitSubGroups(t, ctx, ns, gangName, "coordinator=1 a=2 b=2")
}

// waitSubGroups waits until the PodGroup exists with all its sub-groups required (minSubGroup
// their count) and sub-groups "name=minMember ..." as want.
func waitSubGroups(t *testing.T, ctx context.Context, ns, name, want string) {
	t.Helper()
	var last string
	err := framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		pg := &v2alpha2.PodGroup{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		var parts []string
		for _, sg := range pg.Spec.SubGroups {
			parts = append(parts, fmt.Sprintf("%s=%d", sg.Name, ptrOr(sg.MinMember)))
		}
		last = strings.Join(parts, " ")
		return last == want && ptrOr(pg.Spec.MinSubGroup) == int32(len(parts)), nil
	})
	require.NoError(t, err, "PodGroup %s sub-groups %q (last seen %q)", name, want, last)
}

func ptrOr(p *int32) int32 {
	if p == nil {
		return -1
	}
	return *p
}

// groupingErrors reads gangmap_grouping_errors_total{reason} from the grouper's registry.
func groupingErrors(t *testing.T, reason string) float64 {
	t.Helper()
	return counter(t, "gangmap_grouping_errors_total", "reason", reason)
}

// outsidePlanCount reads gangmap_pods_outside_plan_total{kind}.
func outsidePlanCount(t *testing.T, kind string) float64 {
	t.Helper()
	return counter(t, "gangmap_pods_outside_plan_total", "kind", kind)
}

// counter reads the counter name with label key=value from the grouper's registry (0 when absent).
func counter(t *testing.T, name, key, value string) float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == key && lp.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
