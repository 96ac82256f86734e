package kaiplugin

import (
	"maps"
	"slices"

	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// KAIMetadata converts the metadata gangmap's grouper decided into the value KAI's pod
// controller takes from a plugin: KAI v0.17 pkg/podgrouper/podgroup/metadata.go Metadata,
// SubGroupMetadata and TopologyConstraintMetadata, which gangmap's podgroup types copy field for
// field (same names, same types, v2alpha2.Preemptibility a string type in both), plus gangmap's
// own start-order fields (GangmapOnlyFields), which KAI's types lack and this conversion resolves.
// The nested module kaipodgrouper assigns each field of the result to the KAI field of the same
// name, and its test fails when KAI's types gain or lose a field.
//
// Start order: KAI's handler (handler.go createPodGroupForMetadata) writes every sub-group it is
// given, where gangmap's Applier writes the PodGroup podgroup.Desired builds: without the
// sub-groups of deferred roles (SubGroupMetadata.Deferred) until a pod of the role releases them
// or the existing PodGroup has them (until Metadata.DropDeferred), each written top-level one
// counted in minSubGroup. So the result carries exactly Desired(md, existing)'s sub-groups and
// minSubGroup, and KAI writes the PodGroup gangmap's Applier would; existing is the PodGroup as it
// is now (nil: none yet, or md has no deferred sub-group). Nil sub-groups are left out (Build
// skips them; KAI's handler would dereference them).
//
// The result shares no memory with md: gangmap's grouper shares the sub-group metadata of a plan
// among every pod of the PodGroup (workloadmap's plan cache), while KAI's pod controller writes
// into the value it gets (pod_controller.go addNodePoolLabel sets a label in Labels) from up to
// --max-concurrent-reconciles goroutines. Every map, slice and pointer is copied; nil stays nil
// (KAI's handler tests MinSubGroup, Parent and TopologyConstraints for nil, and an empty Labels
// map is written as none). nil gives nil.
func KAIMetadata(md *podgroup.Metadata, existing *v2alpha2.PodGroup) *podgroup.Metadata {
	if md == nil {
		return nil
	}
	out := &podgroup.Metadata{
		Annotations:            maps.Clone(md.Annotations),
		Labels:                 maps.Clone(md.Labels),
		PriorityClassName:      md.PriorityClassName,
		Preemptibility:         md.Preemptibility,
		PreemptionDelay:        md.PreemptionDelay.DeepCopy(),
		StalenessGracePeriod:   md.StalenessGracePeriod.DeepCopy(),
		Queue:                  md.Queue,
		Namespace:              md.Namespace,
		Name:                   md.Name,
		MinAvailable:           md.MinAvailable,
		MinSubGroup:            clone(md.MinSubGroup),
		Owner:                  *md.Owner.DeepCopy(),
		PreferredTopologyLevel: md.PreferredTopologyLevel,
		RequiredTopologyLevel:  md.RequiredTopologyLevel,
		Topology:               md.Topology,
	}
	if md.SubGroups == nil {
		return out
	}
	written := map[string]bool{}
	if md.HasDeferred() {
		desired := podgroup.Desired(md, existing)
		for _, sg := range desired.Spec.SubGroups {
			written[sg.Name] = true
		}
		out.MinSubGroup = clone(desired.Spec.MinSubGroup)
	}
	out.SubGroups = make([]*podgroup.SubGroupMetadata, 0, len(md.SubGroups))
	for _, sg := range md.SubGroups {
		if sg == nil || (sg.Deferred != "" && !written[sg.Name]) {
			continue
		}
		out.SubGroups = append(out.SubGroups, subGroup(sg))
	}
	return out
}

// GangmapOnlyFields are the fields of gangmap's metadata types that KAI v0.17's lack, by type:
// the start order's, resolved by KAIMetadata (the result leaves them zero).
var GangmapOnlyFields = map[string][]string{
	"Metadata":         {"DropDeferred"},
	"SubGroupMetadata": {"Deferred"},
}

// subGroup copies one sub-group's metadata.
func subGroup(sg *podgroup.SubGroupMetadata) *podgroup.SubGroupMetadata {
	return &podgroup.SubGroupMetadata{
		Name:                sg.Name,
		MinAvailable:        sg.MinAvailable,
		MinSubGroup:         clone(sg.MinSubGroup),
		Parent:              clone(sg.Parent),
		PodsReferences:      slices.Clone(sg.PodsReferences),
		TopologyConstraints: clone(sg.TopologyConstraints),
	}
}

// clone returns a new pointer to *p's value (nil stays nil).
func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return ptr.To(*p)
}
