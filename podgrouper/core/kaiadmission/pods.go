// Package kaiadmission is a model of how KAI Scheduler's allocate action admits one PodGroup:
// given the PodGroup (its minMember or minSubGroup and sub-group tree) and the pods that exist
// (pending, gated, bound, finished), it answers whether KAI admits the gang, which pods it binds
// and in how many commits, and, when it cannot, which sub-group blocks it and why.
//
// It is written from KAI's scheduler source, per release line (the model follows
// kairelease.Release.SubGroupTree):
//
//   - v0.15 and later (unchanged through v0.17.0): the PodGroup becomes a tree of sets and leaves
//     (pkg/scheduler/api/podgroup_info/subgroup_info/factory.go FromPodGroup; job_info.go
//     setSubGroups adds the "default" leaf of minMember max(spec.minMember, 1) when there are
//     no sub-groups); the allocate action takes only jobs with a pending pod that are ready
//     (actions/allocate/allocate.go, actions/utils/input_jobs.go: FilterNonPending,
//     FilterUnready = SubGroupSet.IsReadyForScheduling); the tasks of one attempt are
//     podgroup_info/allocation_info.go collectTasksFromSubGroupSet: while a set's minimum is
//     unmet, the first K children (K = minSubGroup, or all children) in the order of the
//     subgrouporder plugin (plugins/subgrouporder/subgroup_order.go orderByAllocationRatio),
//     ties broken by name (framework/session_plugins.go SubGroupOrderFn); satisfied children
//     give nothing (collectFromChildInGangPhase); a leaf below its minimum gives minMember -
//     bound of its pending pods; once the minimum is met, one child at a time, one pod at a time
//     (the elastic phase). An attempt whose tasks are empty allocates nothing (actions/common
//     allocate.go AllocateJob); one whose tasks all fit is committed as it is, with no check
//     that the PodGroup's minimum is then met (allocate.go attemptToAllocateJob,
//     framework/statement.go Commit), and the job is tried again while it has pending pods.
//   - v0.9 to v0.14: every leaf sub-group (or the "default" leaf) is required: the tasks are those
//     of every leaf below its minimum (allocation_info.go GetTasksToAllocate,
//     getMaxNumSubGroupsToAllocate at v0.14.7), and a job is ready only when every leaf has its
//     minimum of pods (job_info.go IsReadyForScheduling at v0.14.7).
//
// The model assumes room for every pod (resources, quotas, topology and predicates are KAI's
// business): what it says cannot be admitted cannot be admitted on any cluster; what it says is
// admitted may still wait for capacity.
package kaiadmission

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// State is what KAI's scheduler makes of a pod's status (pkg/scheduler/api/pod_info/pod_info.go
// getTaskStatus and pod_status.go's status sets).
type State string

// The states the model knows.
const (
	// Pending: no node, no scheduling gate, not being deleted: the only state KAI allocates
	// (pod_info.go ShouldAllocate); alive.
	Pending State = "Pending"
	// Gated: the pod has spec.schedulingGates: alive but not ready for scheduling
	// (podset.go IsReadyForScheduling subtracts gated pods), never allocated.
	Gated State = "Gated"
	// Bound: the pod has a node (KAI's Allocated, Binding, Bound, Running): alive and counted
	// towards its sub-group's minimum (pod_status.go activeAllocatedStatuses).
	Bound State = "Bound"
	// Succeeded and Failed: the pod's containers have all terminated: neither alive nor counted
	// towards any minimum.
	Succeeded State = "Succeeded"
	Failed    State = "Failed"
	// Releasing: the pod is being deleted: not alive, not allocated.
	Releasing State = "Releasing"
)

// Pod is one pod as the model sees it.
type Pod struct {
	Name string
	// SubGroup is the pod's kai.scheduler/subgroup-name label; "" puts it in KAI's "default"
	// sub-group (job_info.go AddTaskInfo).
	SubGroup string
	State    State
}

// StateOf is the State of a live pod, as pod_info.go getTaskStatus derives it: Running is Bound
// (Releasing when deleted); Pending is Releasing when deleted, Bound with a node, Gated with
// scheduling gates, else Pending; Succeeded and Failed as they are; an unknown phase is Failed
// (neither alive nor allocated, as KAI's Unknown).
func StateOf(p *corev1.Pod) State {
	switch p.Status.Phase {
	case corev1.PodRunning:
		if p.DeletionTimestamp != nil {
			return Releasing
		}
		return Bound
	case corev1.PodPending, "":
		switch {
		case p.DeletionTimestamp != nil:
			return Releasing
		case p.Spec.NodeName != "":
			return Bound
		case len(p.Spec.SchedulingGates) > 0:
			return Gated
		}
		return Pending
	case corev1.PodSucceeded:
		return Succeeded
	default:
		return Failed
	}
}

// PodFor is the model's view of a live pod: its name, sub-group label and State.
func PodFor(p *corev1.Pod) Pod {
	return Pod{Name: p.Name, SubGroup: p.Labels[kaikeys.SubGroupName], State: StateOf(p)}
}

// alive, allocated: pod_status.go aliveStatuses and activeAllocatedStatuses.
func (s State) alive() bool     { return s == Pending || s == Gated || s == Bound }
func (s State) allocated() bool { return s == Bound }
