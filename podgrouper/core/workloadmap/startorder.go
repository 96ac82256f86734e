package workloadmap

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/kaiadmission"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// deferredRoles maps the name of each Deferred role sub-group of pg (the role's own sub-group,
// the parent of its per-replica leaves) to its release key (gang.Role.ReleaseKey).
func deferredRoles(pg *gang.PodGroup) map[string]string {
	var out map[string]string
	for _, m := range pg.Members() {
		if m.SubGroup != nil && m.SubGroup.Deferred {
			if out == nil {
				out = map[string]string{}
			}
			out[m.SubGroup.Name] = m.Role.ReleaseKey()
		}
	}
	return out
}

// releaseDeferred applies the start order to one pod's Metadata (see
// podgroup.SubGroupMetadata.Deferred): a live pod of a deferred role shows that the operator
// creates the role now, so its sub-groups, and those of every role of the same release key
// (gang.Role.ReleaseKey: held by startup.holds for the same reason), are written, with their
// minimum, and counted in minSubGroup; a pod of a role written now that has not started (pending
// or gated) shows the workload starting (over), when no deferred role's pods can exist yet, so the deferred
// sub-groups the existing PodGroup has are dropped. Otherwise the existing PodGroup decides
// (podgroup.Applier.Apply keeps the deferred sub-groups it has).
//
// Why a role that is not created yet is not written: KAI takes the first minSubGroup sub-groups
// of an unsatisfied PodGroup by name and finds no pod in one that has none (real-kai.md,
// kaiadmission), and a sub-group of minimum 0 would let KAI bind the role's pods one at a time.
// A pod created before its role is written waits: KAI does not schedule a pod whose sub-group
// its PodGroup lacks (job_info.go AddTaskInfo).
func releaseDeferred(md *podgroup.Metadata, a *gang.Assignment, pod *corev1.Pod) {
	if a.SubGroup == nil || !a.SubGroup.Deferred && !md.HasDeferred() {
		return
	}
	state := kaiadmission.StateOf(pod)
	if !a.SubGroup.Deferred {
		md.DropDeferred = state == kaiadmission.Pending || state == kaiadmission.Gated
		return
	}
	if state != kaiadmission.Pending && state != kaiadmission.Gated && state != kaiadmission.Bound {
		return // a finished or deleted pod releases nothing
	}
	key := a.Role.ReleaseKey()
	for i, sg := range md.SubGroups {
		if sg == nil || sg.Deferred != key {
			continue
		}
		released := *sg
		released.Deferred = ""
		md.SubGroups[i] = &released
		if released.Parent == nil && md.MinSubGroup != nil {
			*md.MinSubGroup++
		}
	}
}
