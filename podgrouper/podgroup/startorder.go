package podgroup

import (
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/podgrouper/apis/scheduling/v2alpha2"
)

// Deferral is gangmap's start order for one PodGroup write, beside the KAI-shaped Metadata
// (which it does not extend: KAI's pod-grouper takes Metadata field for field): the roles a start
// rule defers until the operator creates their pods, whose sub-groups Metadata leaves out until
// released. A role is released by a live pod of it (the grouper then puts its sub-groups in the
// Metadata, after the others, and counts them in MinSubGroup), and stays released while the
// existing PodGroup has its sub-groups (WithStartOrder), so that a pod of another role does not
// take them back; Drop says the pod was of a role that starts first and has not started (the
// workload starts over, no deferred role's pod can exist), so nothing is kept.
type Deferral struct {
	// Roles are the deferred roles, in the plan's order.
	Roles []DeferredRole
	Drop  bool
}

// DeferredRole is one deferred role: its sub-groups' metadata (the role's own, then its
// per-replica leaves), and whether the pod of this Metadata released it.
type DeferredRole struct {
	Name      string
	SubGroups []*SubGroupMetadata
	Released  bool
}

// WithStartOrder returns the Metadata to write over existing (nil: none exists): md itself
// when it already holds every role to write, else a copy whose sub-groups are md's written ones
// followed by those of every role released by md or kept from existing, in d's order, with
// MinSubGroup counting the top-level ones. md and d are not modified.
func WithStartOrder(md *Metadata, d *Deferral, existing *v2alpha2.PodGroup) *Metadata {
	if d == nil || len(d.Roles) == 0 || md.MinSubGroup == nil {
		return md
	}
	have := map[string]bool{}
	if existing != nil && !d.Drop {
		for i := range existing.Spec.SubGroups {
			have[existing.Spec.SubGroups[i].Name] = true
		}
	}
	keep := make([]bool, len(d.Roles))
	changed := false
	for i, r := range d.Roles {
		keep[i] = r.Released
		for _, sg := range r.SubGroups {
			keep[i] = keep[i] || have[sg.Name]
		}
		changed = changed || keep[i] != r.Released
	}
	if !changed {
		return md
	}
	deferred := map[string]bool{}
	for _, r := range d.Roles {
		for _, sg := range r.SubGroups {
			deferred[sg.Name] = true
		}
	}
	// md's minSubGroup counts its written sub-groups (or an override's value) plus the
	// top-level ones of the roles md released: those are taken off, the kept roles' added.
	count := *md.MinSubGroup
	out := *md
	out.SubGroups = make([]*SubGroupMetadata, 0, len(md.SubGroups))
	for _, sg := range md.SubGroups {
		switch {
		case sg == nil:
		case deferred[sg.Name]: // only a released role's are in md
			if sg.Parent == nil {
				count--
			}
		default:
			out.SubGroups = append(out.SubGroups, sg)
		}
	}
	for i, r := range d.Roles {
		if !keep[i] {
			continue
		}
		for _, sg := range r.SubGroups {
			out.SubGroups = append(out.SubGroups, sg)
			if sg.Parent == nil {
				count++
			}
		}
	}
	out.MinSubGroup = ptr.To(max(count, 1))
	return &out
}
