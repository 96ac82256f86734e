package podgroup

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kairelease"
)

func gangMetadata() *Metadata {
	return &Metadata{
		Name: "pg", Namespace: "ns", Preemptibility: v2alpha2.Preemptible,
		PreemptionDelay: &metav1.Duration{Duration: time.Minute}, StalenessGracePeriod: &metav1.Duration{Duration: time.Minute},
		MinSubGroup: ptr.To[int32](2),
		SubGroups: []*SubGroupMetadata{
			{Name: "leader", MinAvailable: 1},
			{Name: "slice", MinSubGroup: ptr.To[int32](2)},
			{Name: "slice-0", MinAvailable: 4, Parent: ptr.To("slice")},
			{Name: "slice-1", MinAvailable: 4, Parent: ptr.To("slice")},
		},
	}
}

// Per release line, what FitRelease keeps follows the CRD fields of kai-releases.md §3.
func TestFitRelease(t *testing.T) {
	md := gangMetadata()
	FitRelease(md, kairelease.MustParse("v0.17"))
	assert.Equal(t, gangMetadata(), md, "v0.17 keeps everything")

	md = gangMetadata()
	FitRelease(md, kairelease.MustParse("v0.15"))
	assert.Nil(t, md.PreemptionDelay)
	assert.Nil(t, md.StalenessGracePeriod)
	assert.Equal(t, v2alpha2.Preemptible, md.Preemptibility)
	assert.Len(t, md.SubGroups, 4)

	md = gangMetadata()
	FitRelease(md, kairelease.MustParse("v0.14"))
	assert.Nil(t, md.MinSubGroup)
	assert.Empty(t, md.SubGroups)
	assert.Equal(t, int32(9), md.MinAvailable, "leader 1 + two slices of 4")
	pg := Build(md)
	assert.Empty(t, Validate(pg))
	assert.Equal(t, ptr.To[int32](9), pg.Spec.MinMember)
	assert.Nil(t, pg.Spec.MinSubGroup)

	md = gangMetadata()
	FitRelease(md, kairelease.MustParse("v0.9"))
	assert.Equal(t, v2alpha2.Preemptibility(""), md.Preemptibility)

	// v0.9 has no sub-group parent: a flat Metadata with sub-groups keeps names, loses parents.
	md = &Metadata{MinAvailable: 2, SubGroups: []*SubGroupMetadata{{Name: "a", MinAvailable: 1, Parent: ptr.To("p"), TopologyConstraints: &TopologyConstraintMetadata{Topology: "t"}}}}
	r := &kairelease.Release{MinSubGroup: true}
	FitRelease(md, r)
	assert.Nil(t, md.SubGroups[0].Parent)
	assert.Nil(t, md.SubGroups[0].TopologyConstraints)

	FitRelease(nil, r) // no panic
}
