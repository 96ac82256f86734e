package v2alpha2_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, v2alpha2.AddToScheme(s))
	for obj, kind := range map[runtime.Object]string{&v2alpha2.PodGroup{}: "PodGroup", &v2alpha2.PodGroupList{}: "PodGroupList"} {
		gvks, _, err := s.ObjectKinds(obj)
		require.NoError(t, err)
		assert.Equal(t, v2alpha2.SchemeGroupVersion.WithKind(kind), gvks[0])
	}
	assert.Equal(t, "podgroups.scheduling.run.ai", v2alpha2.GroupResource(v2alpha2.Resource).String())
}

// A PodGroup as KAI's scheduler and pod grouper write it decodes into these types without loss.
func TestDecodeKAIPodGroup(t *testing.T) {
	const doc = `
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata:
  name: pg-uid-customjob
  namespace: ns
  ownerReferences:
  - {apiVersion: e2e.example.com/v1, kind: CustomJob, name: job, uid: uid}
spec:
  minSubGroup: 2
  queue: team-a
  priorityClassName: train
  preemptibility: non-preemptible
  markUnschedulable: true
  schedulingBackoff: -1
  preemptionDelay: 30s
  stalenessGracePeriod: -1s
  topologyConstraint: {topology: t, requiredTopologyLevel: zone, preferredTopologyLevel: rack}
  subGroups:
  - {name: coordinator, minMember: 1}
  - {name: workers, minSubGroup: 1}
  - {name: worker-0, parent: workers, minMember: 0, topologyConstraint: {topology: t, requiredTopologyLevel: rack}}
status:
  conditions:
  - {type: UnschedulableOnNodePool, status: "True", transitionID: "3", reason: r, message: m}
  schedulingConditions:
  - type: UnschedulableOnNodePool
    nodePool: default
    reasons:
    - reason: OverLimit
      message: over the limit
      details: {queueDetails: {name: team-a, queueResourceLimits: {nvidia.com/gpu: "8"}}}
  resourcesStatus:
    allocated: {nvidia.com/gpu: "2", cpu: 500m}
`
	s := runtime.NewScheme()
	require.NoError(t, v2alpha2.AddToScheme(s))
	obj, _, err := serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer().Decode([]byte(doc), nil, nil)
	require.NoError(t, err, "strict decoding: every field KAI writes is known")
	pg := obj.(*v2alpha2.PodGroup)

	assert.Nil(t, pg.Spec.MinMember)
	assert.Equal(t, ptr.To(int32(2)), pg.Spec.MinSubGroup)
	assert.Equal(t, v2alpha2.NonPreemptible, pg.Spec.Preemptibility)
	assert.Equal(t, ptr.To(true), pg.Spec.MarkUnschedulable)
	assert.Equal(t, ptr.To(int32(-1)), pg.Spec.SchedulingBackoff)
	assert.Equal(t, &metav1.Duration{Duration: 30 * time.Second}, pg.Spec.PreemptionDelay)
	assert.Equal(t, &metav1.Duration{Duration: -time.Second}, pg.Spec.StalenessGracePeriod)
	assert.Equal(t, v2alpha2.TopologyConstraint{Topology: "t", RequiredTopologyLevel: "zone", PreferredTopologyLevel: "rack"},
		pg.Spec.TopologyConstraint)
	assert.Equal(t, []v2alpha2.SubGroup{
		{Name: "coordinator", MinMember: ptr.To(int32(1))},
		{Name: "workers", MinSubGroup: ptr.To(int32(1))},
		{Name: "worker-0", Parent: ptr.To("workers"), MinMember: ptr.To(int32(0)),
			TopologyConstraint: &v2alpha2.TopologyConstraint{Topology: "t", RequiredTopologyLevel: "rack"}},
	}, pg.Spec.SubGroups)
	require.Len(t, pg.Status.SchedulingConditions, 1)
	reasons := pg.Status.SchedulingConditions[0].Reasons
	assert.Equal(t, "OverLimit: over the limit\n", reasons.String())
	assert.True(t, resource.MustParse("8").Equal(reasons[0].Details.QueueDetails.QueueResourceLimits["nvidia.com/gpu"]))
	assert.True(t, resource.MustParse("500m").Equal(pg.Status.ResourcesStatus.Allocated[corev1.ResourceCPU]))

	// DeepCopy is deep.
	cp := pg.DeepCopy()
	*cp.Spec.SubGroups[2].Parent = "changed"
	cp.Status.SchedulingConditions[0].Reasons[0].Details.QueueDetails.Name = "changed"
	assert.Equal(t, "workers", *pg.Spec.SubGroups[2].Parent)
	assert.Equal(t, "team-a", pg.Status.SchedulingConditions[0].Reasons[0].Details.QueueDetails.Name)
}
