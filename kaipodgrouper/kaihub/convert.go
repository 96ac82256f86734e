package kaihub

import (
	kaiv2alpha2 "github.com/kai-scheduler/KAI-scheduler/pkg/apis/scheduling/v2alpha2"
	kaipodgroup "github.com/kai-scheduler/KAI-scheduler/pkg/podgrouper/podgroup"

	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// ToKAI assigns each field of gangmap's metadata (already detached by kaiplugin.KAIMetadata) to
// the field of the same name of KAI v0.17's podgroup.Metadata, SubGroupMetadata and
// TopologyConstraintMetadata. TestToKAIFieldForField fails when either side gains or loses a
// field. nil gives nil.
func ToKAI(md *podgroup.Metadata) *kaipodgroup.Metadata {
	if md == nil {
		return nil
	}
	out := &kaipodgroup.Metadata{
		Annotations:            md.Annotations,
		Labels:                 md.Labels,
		PriorityClassName:      md.PriorityClassName,
		Preemptibility:         kaiv2alpha2.Preemptibility(md.Preemptibility),
		PreemptionDelay:        md.PreemptionDelay,
		StalenessGracePeriod:   md.StalenessGracePeriod,
		Queue:                  md.Queue,
		Namespace:              md.Namespace,
		Name:                   md.Name,
		MinAvailable:           md.MinAvailable,
		MinSubGroup:            md.MinSubGroup,
		Owner:                  md.Owner,
		PreferredTopologyLevel: md.PreferredTopologyLevel,
		RequiredTopologyLevel:  md.RequiredTopologyLevel,
		Topology:               md.Topology,
	}
	if md.SubGroups != nil {
		out.SubGroups = make([]*kaipodgroup.SubGroupMetadata, len(md.SubGroups))
		for i, sg := range md.SubGroups {
			out.SubGroups[i] = subGroupToKAI(sg)
		}
	}
	return out
}

func subGroupToKAI(sg *podgroup.SubGroupMetadata) *kaipodgroup.SubGroupMetadata {
	if sg == nil {
		return nil
	}
	out := &kaipodgroup.SubGroupMetadata{
		Name:           sg.Name,
		MinAvailable:   sg.MinAvailable,
		MinSubGroup:    sg.MinSubGroup,
		Parent:         sg.Parent,
		PodsReferences: sg.PodsReferences,
	}
	if t := sg.TopologyConstraints; t != nil {
		out.TopologyConstraints = &kaipodgroup.TopologyConstraintMetadata{
			PreferredTopologyLevel: t.PreferredTopologyLevel,
			RequiredTopologyLevel:  t.RequiredTopologyLevel,
			Topology:               t.Topology,
		}
	}
	return out
}
