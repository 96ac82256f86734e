package workloadmap

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/kaiadmission"
	"github.com/gangmap/gangmap/podgrouper/podgroup"
)

// deferredRoles maps the name of each Deferred role sub-group of pg (the role's own sub-group,
// the parent of its per-replica leaves) to the role's name.
func deferredRoles(pg *gang.PodGroup) map[string]string {
	var out map[string]string
	for _, m := range pg.Members() {
		if m.SubGroup != nil && m.SubGroup.Deferred {
			if out == nil {
				out = map[string]string{}
			}
			out[m.SubGroup.Name] = m.Role.Name
		}
	}
	return out
}

// startOrder applies the start order to one pod's Metadata md (filled from pm by fillGang) and
// returns the PodGroup's Deferral (nil when no role is deferred): the sub-groups of the roles a
// start rule defers (gang.SubGroup.Deferred) leave md, but a live pod of a deferred role shows
// that the operator creates the role now, so that role's sub-groups stay in md, after the
// others, counted in minSubGroup (released); a pod of a role written now that has not started
// (pending or gated) shows the workload starting (over), when no deferred role's pods can
// exist yet (Deferral.Drop). The pod controller then keeps the roles the existing PodGroup has
// released (podgroup.WithStartOrder).
//
// Why a role that is not created yet is not written: KAI takes the first minSubGroup sub-groups
// of an unsatisfied PodGroup by name and finds no pod in one that has none (real-kai.md,
// kaiadmission), its stalegangeviction evicts the running roles of a PodGroup with a sub-group
// below its minimum (job_info.go IsStale), and a sub-group of minimum 0 would let KAI bind the
// role's pods one at a time. A pod of a role not written yet waits: it is labelled with no
// sub-group, and KAI schedules no pod of a PodGroup with sub-groups outside them (job_info.go
// AddTaskInfo).
func startOrder(md *podgroup.Metadata, pm *podGroupMeta, a *gang.Assignment, pod *corev1.Pod) *podgroup.Deferral {
	if pm == nil || pm.deferredRole == nil || len(md.SubGroups) != len(pm.deferredRole) {
		return nil
	}
	d := &podgroup.Deferral{}
	index := map[string]int{}
	written := make([]*podgroup.SubGroupMetadata, 0, len(md.SubGroups))
	var own [][]*podgroup.SubGroupMetadata // md's sub-groups of each deferred role
	for i, sg := range md.SubGroups {
		role := pm.deferredRole[i]
		if role == "" {
			written = append(written, sg)
			continue
		}
		j, ok := index[role]
		if !ok {
			j = len(d.Roles)
			index[role] = j
			d.Roles = append(d.Roles, podgroup.DeferredRole{Name: role})
			own = append(own, nil)
		}
		d.Roles[j].SubGroups = append(d.Roles[j].SubGroups, pm.subGroups[i])
		own[j] = append(own[j], sg)
	}
	state := kaiadmission.StateOf(pod)
	j, podDeferred := index[a.Role.Name]
	switch {
	case !podDeferred:
		d.Drop = state == kaiadmission.Pending || state == kaiadmission.Gated
	case state == kaiadmission.Pending || state == kaiadmission.Gated || state == kaiadmission.Bound:
		d.Roles[j].Released = true
		for _, sg := range own[j] {
			written = append(written, sg)
			if sg.Parent == nil && md.MinSubGroup != nil {
				*md.MinSubGroup++
			}
		}
	}
	md.SubGroups = written
	return d
}
