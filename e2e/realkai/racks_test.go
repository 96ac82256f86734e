package realkai

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// segmentedPodGroup is the PodGroup gangmap writes for 16 workers in segments of 4 with a required
// rack (docs/topology.md; KAI's pytorch_grouper.go buildWorkerSubGroups builds the same shape).
func segmentedPodGroup() *v2alpha2.PodGroup {
	pg := &v2alpha2.PodGroup{}
	pg.Spec.SubGroups = []v2alpha2.SubGroup{{Name: "workers", MinSubGroup: ptr.To[int32](4)}}
	for i := 0; i < 4; i++ {
		pg.Spec.SubGroups = append(pg.Spec.SubGroups, v2alpha2.SubGroup{
			Name: fmt.Sprintf("workers-%d", i), Parent: ptr.To("workers"), MinMember: ptr.To[int32](4),
			TopologyConstraint: &v2alpha2.TopologyConstraint{Topology: TopologyName, RequiredTopologyLevel: RackLabel},
		})
	}
	return pg
}

// TestRackSegmentsProblems: the right shape has no problem, and each way a segment can be wrong
// is named.
func TestRackSegmentsProblems(t *testing.T) {
	assert.Empty(t, RackSegmentsProblems(segmentedPodGroup(), "workers", 4, 4))

	flat := &v2alpha2.PodGroup{}
	flat.Spec.SubGroups = []v2alpha2.SubGroup{{Name: "workers", MinMember: ptr.To[int32](16)}}
	assert.Equal(t, []string{"1 sub-groups, want workers and its 4 segments"}, RackSegmentsProblems(flat, "workers", 4, 4))

	pg := segmentedPodGroup()
	pg.Spec.SubGroups[0].MinSubGroup = ptr.To[int32](3)
	pg.Spec.SubGroups[2].MinMember = ptr.To[int32](2)
	pg.Spec.SubGroups[3].TopologyConstraint.RequiredTopologyLevel = ""
	pg.Spec.SubGroups[3].TopologyConstraint.PreferredTopologyLevel = RackLabel
	pg.Spec.SubGroups[4].TopologyConstraint = nil
	assert.Equal(t, []string{
		"workers minSubGroup: got 3, want 4",
		"workers-1 minMember: got 2, want 4",
		"workers-2 required level: got , want " + RackLabel,
		"workers-3: no topology constraint",
	}, RackSegmentsProblems(pg, "workers", 4, 4))
}
