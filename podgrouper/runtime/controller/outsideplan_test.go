package controller

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/grouper"
	"github.com/gangmap/gangmap/podgrouper/runtime/workloadmetrics"
)

// rolePlanner stands in for workloadmap.Grouper's Plan and Role on a workload whose plan has
// roles coordinator and worker-a: a pod of pool b (dropped from the workload) is outside the plan.
type rolePlanner struct{ grouper.Grouper }

func (p *rolePlanner) Plan(context.Context, *unstructured.Unstructured) (*gang.Plan, *definitions.Compiled, error) {
	return p.plan(), nil, nil
}

func (p *rolePlanner) plan() *gang.Plan {
	return &gang.Plan{Workload: gang.WorkloadRef{Namespace: "ns", Name: "train"}, Roles: []*gang.Role{{Name: "coordinator"}, {Name: "worker-a"}}}
}

func (p *rolePlanner) Role(_ context.Context, _ *unstructured.Unstructured, pod *corev1.Pod) (*gang.Plan, string, error) {
	switch pod.Labels["pool"] {
	case "a":
		return p.plan(), "worker-a", nil
	case "b":
		return p.plan(), "", fmt.Errorf(`component "worker" has no instance "b" in the plan: %w`, gang.ErrNotInPlan)
	}
	return p.plan(), "", definitions.ErrNoComponent
}

// TestWorkloadMetricsCountNoPodOutsideThePlan: a pod tracked under role worker-b while the
// workload had pool b is, once the workload dropped pool b (the pod now in KAI's default
// PodGroup, outside the plan), no longer counted under worker-b; an unclaimed pod is counted
// under no role; a pod of a planned role still is.
func TestWorkloadMetricsCountNoPodOutsideThePlan(t *testing.T) {
	ctx := context.Background()
	m := &workloadmetrics.Tracker{MaxWorkloads: 10}
	r := &PodReconciler{Observer: Observer{Metrics: m, Planner: &rolePlanner{}}}
	owner := workloadAt("3")
	d := &decide.Decision{Kind: owner.GroupVersionKind(), Owner: owner}
	pod := func(name, pool string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"pool": pool}}}
	}
	a, b, stray := pod("w-a-0", "a"), pod("w-b-0", "b"), pod("sidecar", "")
	kind := owner.GroupVersionKind().GroupKind().String()
	require.True(t, m.TrackPod(owner.GetUID(), kind, (&rolePlanner{}).plan(), client.ObjectKeyFromObject(b), "worker-b", corev1.PodRunning))
	require.True(t, m.TrackPod(owner.GetUID(), kind, (&rolePlanner{}).plan(), client.ObjectKeyFromObject(stray), "worker-a", corev1.PodRunning))

	for _, p := range []*corev1.Pod{a, b, stray} {
		r.Track(ctx, p, d)
	}
	rec, ok := m.Pods.Metric(client.ObjectKeyFromObject(a))
	assert.True(t, ok)
	assert.Equal(t, "worker-a", rec.Role)
	_, ok = m.Pods.Metric(client.ObjectKeyFromObject(b))
	assert.False(t, ok, "the pod outside the plan is not counted under the dropped role")
	_, ok = m.Pods.Metric(client.ObjectKeyFromObject(stray))
	assert.False(t, ok, "an unclaimed pod is counted under no role")
}

// workloadAt is the CustomJob ns/train (UID uid-train) at resourceVersion rv.
func workloadAt(rv string) *unstructured.Unstructured {
	u := owner(schema.GroupVersionKind{Group: "e2e.example.com", Version: "v1", Kind: "CustomJob"}, "ns", "train")
	u.SetUID("uid-train")
	u.SetResourceVersion(rv)
	return u
}
