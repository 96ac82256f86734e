package podgroup

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// Build returns the PodGroup for md, as KAI's createPodGroupForMetadata
// (pkg/podgrouper/podgroup/handler.go) builds it: the PodGroup and each subgroup get MinSubGroup
// when it is set, else MinMember = MinAvailable (a subgroup minimum of 0 is written as
// minMember: 0), never both; Spec.SubGroups starts as an empty, non-nil slice; OwnerReferences is
// md.Owner alone, as given.
//
// Unlike KAI, the result shares no maps or pointers with md, so either can be changed afterwards
// without affecting the other; the object is otherwise identical. Build also sets TypeMeta
// (scheduling.run.ai/v2alpha2, PodGroup), which KAI leaves empty and no API server stores.
// Nil entries of md.SubGroups are skipped, and so are deferred ones (SubGroupMetadata.Deferred,
// gangmap's start order: see Desired). md must not be nil.
func Build(md *Metadata) *v2alpha2.PodGroup { return Desired(md, nil) }

// Desired is the PodGroup Apply writes for md over existing (nil: none exists yet), before the
// fields other controllers own are kept: Build, with the deferred subgroups of the roles
// existing has written kept (keptReleased), each written top-level one adding 1 to minSubGroup
// (Metadata.MinSubGroup counts the others).
func Desired(md *Metadata, existing *v2alpha2.PodGroup) *v2alpha2.PodGroup {
	released := keptReleased(md, existing)
	pg := &v2alpha2.PodGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: v2alpha2.SchemeGroupVersion.String(), Kind: v2alpha2.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name:            md.Name,
			Namespace:       md.Namespace,
			Labels:          maps.Clone(md.Labels),
			Annotations:     maps.Clone(md.Annotations),
			OwnerReferences: []metav1.OwnerReference{*md.Owner.DeepCopy()},
		},
		Spec: v2alpha2.PodGroupSpec{
			Queue:                md.Queue,
			PriorityClassName:    md.PriorityClassName,
			SubGroups:            []v2alpha2.SubGroup{},
			Preemptibility:       md.Preemptibility,
			PreemptionDelay:      md.PreemptionDelay.DeepCopy(),
			StalenessGracePeriod: md.StalenessGracePeriod.DeepCopy(),
		},
	}
	if md.MinSubGroup != nil {
		pg.Spec.MinSubGroup = ptr.To(*md.MinSubGroup)
	} else {
		pg.Spec.MinMember = ptr.To(md.MinAvailable)
	}

	for _, sg := range md.SubGroups {
		if sg == nil || sg.Deferred != "" && !released[sg.Deferred] {
			continue
		}
		if sg.Deferred != "" && sg.Parent == nil && pg.Spec.MinSubGroup != nil {
			*pg.Spec.MinSubGroup++
		}
		out := v2alpha2.SubGroup{Name: sg.Name}
		if sg.Parent != nil {
			out.Parent = ptr.To(*sg.Parent)
		}
		if sg.TopologyConstraints != nil {
			tc := v2alpha2.TopologyConstraint(*sg.TopologyConstraints)
			out.TopologyConstraint = &tc
		}
		if sg.MinSubGroup != nil {
			out.MinSubGroup = ptr.To(*sg.MinSubGroup)
		} else {
			out.MinMember = ptr.To(sg.MinAvailable)
		}
		pg.Spec.SubGroups = append(pg.Spec.SubGroups, out)
	}

	pg.Spec.TopologyConstraint = v2alpha2.TopologyConstraint{
		PreferredTopologyLevel: md.PreferredTopologyLevel,
		RequiredTopologyLevel:  md.RequiredTopologyLevel,
		Topology:               md.Topology,
	}
	return pg
}
