package podgroup

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

var testOwner = metav1.OwnerReference{APIVersion: "e2e.example.com/v1", Kind: "CustomJob", Name: "job", UID: "uid-1"}

func TestBuild(t *testing.T) {
	typeMeta := metav1.TypeMeta{APIVersion: "scheduling.run.ai/v2alpha2", Kind: "PodGroup"}
	tests := map[string]struct {
		md   Metadata
		want v2alpha2.PodGroup
	}{
		"flat gang: minMember, empty subgroups, topology from the three strings": {
			md: Metadata{
				Name: "pg-job-uid-1", Namespace: "ns", Owner: testOwner,
				Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
				Queue: "q", PriorityClassName: "train", Preemptibility: v2alpha2.Preemptible,
				PreemptionDelay:      &metav1.Duration{Duration: 30 * time.Second},
				StalenessGracePeriod: &metav1.Duration{Duration: -time.Second},
				MinAvailable:         3,
				Topology:             "topo", RequiredTopologyLevel: "zone", PreferredTopologyLevel: "rack",
			},
			want: v2alpha2.PodGroup{
				TypeMeta: typeMeta,
				ObjectMeta: metav1.ObjectMeta{
					Name: "pg-job-uid-1", Namespace: "ns",
					Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
					OwnerReferences: []metav1.OwnerReference{testOwner},
				},
				Spec: v2alpha2.PodGroupSpec{
					MinMember: ptr.To(int32(3)),
					Queue:     "q", PriorityClassName: "train", Preemptibility: v2alpha2.Preemptible,
					PreemptionDelay:      &metav1.Duration{Duration: 30 * time.Second},
					StalenessGracePeriod: &metav1.Duration{Duration: -time.Second},
					SubGroups:            []v2alpha2.SubGroup{},
					TopologyConstraint:   v2alpha2.TopologyConstraint{Topology: "topo", RequiredTopologyLevel: "zone", PreferredTopologyLevel: "rack"},
				},
			},
		},
		"minAvailable 0 without minSubGroup is written as minMember 0": {
			md: Metadata{Name: "pg", Namespace: "ns", Owner: testOwner},
			want: v2alpha2.PodGroup{
				TypeMeta:   typeMeta,
				ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{testOwner}},
				Spec:       v2alpha2.PodGroupSpec{MinMember: ptr.To(int32(0)), SubGroups: []v2alpha2.SubGroup{}},
			},
		},
		"minSubGroup wins over minAvailable; subgroups get minMember or minSubGroup, parent, topology": {
			md: Metadata{
				Name: "pg", Namespace: "ns", Owner: testOwner,
				MinAvailable: 7, MinSubGroup: ptr.To(int32(2)),
				SubGroups: []*SubGroupMetadata{
					{Name: "coordinator", MinAvailable: 1, PodsReferences: []string{"c-0"}},
					{Name: "workers", MinAvailable: 9, MinSubGroup: ptr.To(int32(1))},
					{Name: "worker-a", Parent: ptr.To("workers"), MinAvailable: 0,
						TopologyConstraints: &TopologyConstraintMetadata{Topology: "t", RequiredTopologyLevel: "rack"}},
					nil,
				},
			},
			want: v2alpha2.PodGroup{
				TypeMeta:   typeMeta,
				ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{testOwner}},
				Spec: v2alpha2.PodGroupSpec{
					MinSubGroup: ptr.To(int32(2)),
					SubGroups: []v2alpha2.SubGroup{
						{Name: "coordinator", MinMember: ptr.To(int32(1))},
						{Name: "workers", MinSubGroup: ptr.To(int32(1))},
						{Name: "worker-a", Parent: ptr.To("workers"), MinMember: ptr.To(int32(0)),
							TopologyConstraint: &v2alpha2.TopologyConstraint{Topology: "t", RequiredTopologyLevel: "rack"}},
					},
				},
			},
		},
		"the owner reference is copied as given": {
			md: Metadata{Name: "pg", Namespace: "ns", MinAvailable: 1,
				Owner: metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u", Controller: ptr.To(true)}},
			want: v2alpha2.PodGroup{
				TypeMeta: typeMeta,
				ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{
					{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u", Controller: ptr.To(true)}}},
				Spec: v2alpha2.PodGroupSpec{MinMember: ptr.To(int32(1)), SubGroups: []v2alpha2.SubGroup{}},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Build(&tc.md)
			assert.Equal(t, &tc.want, got)
			assert.NotNil(t, got.Spec.SubGroups, "SubGroups starts as an empty, non-nil slice")
			assert.False(t, got.Spec.MinMember != nil && got.Spec.MinSubGroup != nil, "never both minMember and minSubGroup")
		})
	}
}

func TestBuildSharesNothingWithMetadata(t *testing.T) {
	md := &Metadata{
		Name: "pg", Namespace: "ns", Owner: testOwner,
		Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"b": "2"},
		MinSubGroup:     ptr.To(int32(1)),
		PreemptionDelay: &metav1.Duration{Duration: time.Second},
		SubGroups: []*SubGroupMetadata{{Name: "p", MinSubGroup: ptr.To(int32(1))},
			{Name: "c", Parent: ptr.To("p"), MinAvailable: 1}},
	}
	pg := Build(md)
	want := pg.DeepCopy()

	md.Labels["a"] = "changed"
	md.Annotations["b"] = "changed"
	*md.MinSubGroup = 5
	md.PreemptionDelay.Duration = time.Hour
	*md.SubGroups[0].MinSubGroup = 5
	*md.SubGroups[1].Parent = "changed"
	md.Owner.Name = "changed"

	assert.Equal(t, want, pg)
}

func TestBuildJSON(t *testing.T) {
	// The wire form KAI reads: minSubGroup without minMember at the top, minMember 0 kept on a
	// subgroup (pointer), no subGroups key when there are none.
	md := &Metadata{Name: "pg", Namespace: "ns", Owner: testOwner, MinSubGroup: ptr.To(int32(1)),
		SubGroups: []*SubGroupMetadata{{Name: "w", MinAvailable: 0}}}
	b, err := json.Marshal(Build(md).Spec)
	require.NoError(t, err)
	assert.JSONEq(t, `{"minSubGroup":1,"subGroups":[{"name":"w","minMember":0}],"topologyConstraint":{}}`, string(b))

	b, err = json.Marshal(Build(&Metadata{Name: "pg", Namespace: "ns", Owner: testOwner, MinAvailable: 2}).Spec)
	require.NoError(t, err)
	assert.JSONEq(t, `{"minMember":2,"topologyConstraint":{}}`, string(b))
}
