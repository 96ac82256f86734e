package findings

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaiadmission"
	"github.com/gangmap/gangmap/podgrouper/runtime/podbook"
)

// seedPodGroupClient is a client holding the seed JobSet's PodGroup as gangmap writes it:
// minSubGroup 2 of leader:1 and workers:2.
func seedPodGroupClient(t *testing.T, name string) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, v2alpha2.AddToScheme(s))
	pg := &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: v2alpha2.PodGroupSpec{
		MinSubGroup: ptr.To[int32](2),
		SubGroups:   []v2alpha2.SubGroup{{Name: "leader", MinMember: ptr.To[int32](1)}, {Name: "workers", MinMember: ptr.To[int32](2)}}}}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(pg).Build()
}

// fakePods is a WorkloadPods of fixed pods, counting its calls.
type fakePods struct {
	pods  []AdmissionPod
	calls int
}

func (f *fakePods) PodsOf(context.Context, string, types.UID) []AdmissionPod {
	f.calls++
	return f.pods
}

// The seed JobSet (leader 1, workers 2: the PodGroup gangmap writes has sub-groups leader:1 and
// workers:2, minSubGroup 2) whose leader pod has finished while the 2 workers wait (the workers
// were recreated): KAI counts no Succeeded pod towards a minimum (subgroupset.go
// IsReadyForScheduling), so it never takes the PodGroup, and no pod the operator may create
// changes that. The Reporter's admission check says so as GangNotAdmittable naming the PodGroup
// and sub-group leader, once the verdict held NotAdmittableGrace; it clears once the pods agree
// (a new leader pod pending), and an unchanged workload is not checked again.
func TestReporterRunsTheAdmissionModel(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	p := seedPlan(t, 2)
	require.Len(t, p.PodGroups, 1)
	name := p.PodGroups[0].Name
	tr.SetPlan(p, Definition{Name: "reporter-test"}, t0)
	for _, n := range []string{"leader-0", "workers-0", "workers-1"} {
		role := "workers"
		if n == "leader-0" {
			role = "leader"
		}
		tr.Observe(pod(n), Observation{Owner: uid, Role: role, Terminal: n == "leader-0"}, t0)
	}
	c := seedPodGroupClient(t, name)
	pods := &fakePods{pods: []AdmissionPod{
		{PodGroup: name, Pod: kaiadmission.Pod{Name: "leader-0", SubGroup: "leader", State: kaiadmission.Succeeded}},
		{PodGroup: name, Pod: kaiadmission.Pod{Name: "workers-0", SubGroup: "workers", State: kaiadmission.Pending}},
		{PodGroup: name, Pod: kaiadmission.Pod{Name: "workers-1", SubGroup: "workers", State: kaiadmission.Pending}},
	}}
	rec := record.NewFakeRecorder(10)
	now := t0
	r := &Reporter{Tracker: tr, Config: cfg, Client: c, DryRun: true, Recorder: rec, Pods: pods, Now: func() time.Time { return now }}

	r.Tick(context.Background())
	assert.Empty(t, rec.Events, "not before NotAdmittableGrace")
	now = t0.Add(DefaultNotAdmittableGrace)
	r.Tick(context.Background())
	require.Len(t, rec.Events, 1)
	ev := <-rec.Events
	assert.Contains(t, ev, "Warning GangNotAdmittable role leader: KAI cannot admit PodGroup "+name+" (sub-group leader blocks it) with the pods that exist")
	assert.Contains(t, ev, "KAI counts no Succeeded pod")
	assert.Equal(t, 2, pods.calls, "checked on each tick while blocked")

	// A new leader pod: the gang can be admitted, the finding clears.
	pods.pods = append(pods.pods, AdmissionPod{PodGroup: name, Pod: kaiadmission.Pod{Name: "leader-1", SubGroup: "leader", State: kaiadmission.Pending}})
	tr.Observe(pod("leader-1"), Observation{Owner: uid, Role: "leader"}, now)
	now = now.Add(2 * time.Second)
	r.Tick(context.Background())
	require.Len(t, rec.Events, 1)
	assert.Contains(t, <-rec.Events, "Normal GangFindingCleared GangNotAdmittable (role leader) cleared")
	r.Tick(context.Background())
	assert.Equal(t, 3, pods.calls, "an unchanged workload that is not blocked is not checked again")
}

// A gang waiting for pods the operator has not created yet (1 of 2 workers) is not
// GangNotAdmittable: GangUnsatisfiable reports that after its own grace.
func TestAdmissionCheckLeavesAWaitingGang(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	p := seedPlan(t, 2)
	name := p.PodGroups[0].Name
	tr.SetPlan(p, Definition{Name: "reporter-test"}, t0)
	tr.Observe(pod("workers-0"), Observation{Owner: uid, Role: "workers"}, t0)
	c := seedPodGroupClient(t, name)
	pods := &fakePods{pods: []AdmissionPod{{PodGroup: name, Pod: kaiadmission.Pod{Name: "workers-0", SubGroup: "workers", State: kaiadmission.Pending}}}}
	rec := record.NewFakeRecorder(10)
	now := t0
	r := &Reporter{Tracker: tr, Config: cfg, Client: c, DryRun: true, Recorder: rec, Pods: pods, Now: func() time.Time { return now }}
	for i := 0; i < 5; i++ {
		r.Tick(context.Background())
		now = now.Add(5 * time.Second)
	}
	assert.Empty(t, rec.Events)
	assert.Equal(t, 1, pods.calls)
}
