package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/grouper"
	"github.com/gangmap/gangmap/podgrouper/core/hub"
	"github.com/gangmap/gangmap/podgrouper/core/owners"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
	"github.com/gangmap/gangmap/podgrouper/runtime/workloadmetrics"
)

// scaledGrouper stands in for the workloadmap grouper of a workload scaled from one worker
// instance to two: the plan of resourceVersion "1" does not count the pod's instance "b"
// (Seen.NotInPlan, no gang), the plan of "2" puts it in the gang.
type scaledGrouper struct{ calls []string }

func (g *scaledGrouper) Name() string { return "test" }

func (g *scaledGrouper) GetPodGroupMetadata(ctx context.Context, owner *unstructured.Unstructured, pod *corev1.Pod, _ ...*metav1.PartialObjectMetadata) (*podgroup.Metadata, error) {
	md, _, err := g.GroupPod(ctx, owner, pod)
	return md, err
}

func (g *scaledGrouper) GroupPod(_ context.Context, owner *unstructured.Unstructured, pod *corev1.Pod, _ ...*metav1.PartialObjectMetadata) (*podgroup.Metadata, grouper.Seen, error) {
	g.calls = append(g.calls, owner.GetResourceVersion())
	seen := grouper.Seen{Plan: &gang.Plan{}}
	if owner.GetResourceVersion() == "1" {
		seen.NotInPlan = fmt.Errorf(`component "worker" has no instance "b" in the plan: %w`, gang.ErrNotInPlan)
		return nil, seen, nil
	}
	seen.Role = "worker-b"
	return &podgroup.Metadata{Namespace: pod.Namespace, Name: "pg-train-gang", MinAvailable: 4}, seen, nil
}

// ownerAt is an API reader that holds one version of the workload and counts its reads.
type ownerAt struct {
	client.Reader
	obj   *unstructured.Unstructured
	reads int
}

func (r *ownerAt) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.reads++
	r.obj.DeepCopyInto(obj.(*unstructured.Unstructured))
	return nil
}

func workloadAt(rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("e2e.example.com/v1")
	u.SetKind("CustomJob")
	u.SetNamespace("ns")
	u.SetName("train")
	u.SetUID("uid-train")
	u.SetResourceVersion(rv)
	return u
}

// TestStalePlanIsRefreshedBeforeConcluding: the operator scaled the workload and created a pod of
// the new instance before the informer delivered the new version, so the cached workload's plan
// does not count the pod. The decider re-reads the workload from the API server once and decides
// on its plan: the pod joins the gang, with no report of a pod outside the plan. Before, the
// pod got a plan error and waited for the informer (or forever, once KAI skipped the workload).
func TestStalePlanIsRefreshedBeforeConcluding(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train-worker-b-0"}}
	api := &ownerAt{obj: workloadAt("2")}
	g := &scaledGrouper{}
	d := &Decider{APIReader: api}
	cached := workloadAt("1")

	dec, err := d.decidePodGroup(ctx, g, cached.GroupVersionKind(), cached, &owners.Chain{}, pod)
	require.NoError(t, err)
	require.NotNil(t, dec.Metadata)
	assert.Equal(t, "pg-train-gang", dec.Metadata.Name)
	assert.Nil(t, dec.Seen.NotInPlan, "the fresh plan counts the pod")
	assert.Equal(t, "2", dec.Owner.GetResourceVersion(), "the decision is on the fresh workload")
	assert.Equal(t, []string{"1", "2"}, g.calls)
	assert.Equal(t, 1, api.reads)
}

// TestFreshPlanWithoutThePodIsConcludedAtOnce: when the API server's workload is the version
// already planned, the decider reads it once and stops: the decision keeps Seen.NotInPlan for
// the grouper's fallback and the report, with no second plan and no error to retry.
func TestFreshPlanWithoutThePodIsConcludedAtOnce(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train-worker-b-0"}}
	api := &ownerAt{obj: workloadAt("1")}
	g := &scaledGrouper{}
	d := &Decider{APIReader: api}
	cached := workloadAt("1")

	dec, err := d.decidePodGroup(ctx, g, cached.GroupVersionKind(), cached, &owners.Chain{}, pod)
	require.NoError(t, err, "not an error to retry")
	require.NotNil(t, dec, "a decision with what was seen, for the findings and the report")
	assert.Nil(t, dec.Metadata)
	assert.ErrorIs(t, dec.Seen.NotInPlan, gang.ErrNotInPlan)
	assert.Equal(t, []string{"1"}, g.calls)
	assert.Equal(t, 1, api.reads)
}

// TestConfirmedVersionIsReadOnce: pods outside the plan of one workload version that were
// created before a read confirmed that version (stray pods reconciled again and again) cost no
// further read; a pod created after the read (the operator may have scaled the workload and
// created it before the informer caught up) and a pod being admitted are read for, so the
// scale-up race refreshOwner exists for is still caught.
func TestConfirmedVersionIsReadOnce(t *testing.T) {
	ctx := context.Background()
	api := &ownerAt{obj: workloadAt("1")}
	d := &Decider{APIReader: api}
	decide := func(name string, created time.Time) *Decision {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(created)}}
		dec, err := d.decidePodGroup(ctx, &scaledGrouper{}, workloadAt("1").GroupVersionKind(), workloadAt("1"), &owners.Chain{}, pod)
		require.NoError(t, err)
		require.NotNil(t, dec)
		return dec
	}
	old := time.Now().Add(-time.Minute)
	for i := range 5 {
		dec := decide(fmt.Sprintf("train-worker-b-%d", i), old)
		assert.ErrorIs(t, dec.Seen.NotInPlan, gang.ErrNotInPlan)
	}
	assert.Equal(t, 1, api.reads, "one read covers every pod created before it")

	decide("admitted", time.Time{})
	assert.Equal(t, 2, api.reads, "a pod being admitted has no creation time: read")

	api.obj = workloadAt("2") // scaled up; the informer still has version 1
	dec := decide("train-worker-b-new", time.Now())
	assert.Equal(t, 3, api.reads, "a pod created after the last read is read for")
	assert.Nil(t, dec.Seen.NotInPlan, "and joins the gang of the fresh version")
	assert.Equal(t, "pg-train-gang", dec.Metadata.Name)
}

// rolePlanner stands in for workloadmap.Grouper's Plan and Role on a workload whose plan has
// roles coordinator and worker-a: a pod of pool b (dropped from the workload) is outside the plan.
type rolePlanner struct{ scaledGrouper }

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
	r := &PodReconciler{Metrics: m, Decider: &Decider{Hub: &hub.Hub{Grouper: &rolePlanner{}}}}
	owner := workloadAt("3")
	d := &Decision{Kind: owner.GroupVersionKind(), Owner: owner}
	pod := func(name, pool string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"pool": pool}}}
	}
	a, b, stray := pod("w-a-0", "a"), pod("w-b-0", "b"), pod("sidecar", "")
	require.True(t, m.SetWorkload(workloadmetrics.Workload{UID: owner.GetUID(), Namespace: "ns", Name: "train"}))
	m.SetPod(owner.GetUID(), client.ObjectKeyFromObject(b), "worker-b", "Running")
	m.SetPod(owner.GetUID(), client.ObjectKeyFromObject(stray), "worker-a", "Running")

	for _, p := range []*corev1.Pod{a, b, stray} {
		r.track(ctx, p, d)
	}
	role, ok := m.PodRole(client.ObjectKeyFromObject(a))
	assert.True(t, ok)
	assert.Equal(t, "worker-a", role)
	_, ok = m.PodRole(client.ObjectKeyFromObject(b))
	assert.False(t, ok, "the pod outside the plan is not counted under the dropped role")
	_, ok = m.PodRole(client.ObjectKeyFromObject(stray))
	assert.False(t, ok, "an unclaimed pod is counted under no role")
}
