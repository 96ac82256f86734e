package decide

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

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/grouper"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
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

	dec, err := d.decidePodGroup(ctx, g, cached.GroupVersionKind(), cached, nil, pod)
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

	dec, err := d.decidePodGroup(ctx, g, cached.GroupVersionKind(), cached, nil, pod)
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
	decideAt := func(name string, created time.Time) *Decision {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(created)}}
		dec, err := d.decidePodGroup(ctx, &scaledGrouper{}, workloadAt("1").GroupVersionKind(), workloadAt("1"), nil, pod)
		require.NoError(t, err)
		require.NotNil(t, dec)
		return dec
	}
	old := time.Now().Add(-time.Minute)
	for i := range 5 {
		dec := decideAt(fmt.Sprintf("train-worker-b-%d", i), old)
		assert.ErrorIs(t, dec.Seen.NotInPlan, gang.ErrNotInPlan)
	}
	assert.Equal(t, 1, api.reads, "one read covers every pod created before it")

	decideAt("admitted", time.Time{})
	assert.Equal(t, 2, api.reads, "a pod being admitted has no creation time: read")

	api.obj = workloadAt("2") // scaled up; the informer still has version 1
	dec := decideAt("train-worker-b-new", time.Now())
	assert.Equal(t, 3, api.reads, "a pod created after the last read is read for")
	assert.Nil(t, dec.Seen.NotInPlan, "and joins the gang of the fresh version")
	assert.Equal(t, "pg-train-gang", dec.Metadata.Name)
}
