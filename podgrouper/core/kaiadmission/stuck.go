package kaiadmission

import (
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kairelease"
)

// Check is Evaluate for the findings: the attempts stop once the PodGroup's minimum is met
// (Steps end with the admitting commit), so its cost is bounded by the pods up to the minimum's
// commit plus a sort per attempt, not one attempt per pod of a large elastic gang.
func Check(pg *v2alpha2.PodGroup, pods []Pod, rel *kairelease.Release) *Verdict {
	return evaluate(pg, pods, rel, true)
}

// Stuck reports whether KAI cannot admit the PodGroup whole with the pods that exist, in a way
// no pod the operator may still create changes:
//   - a commit binds part of the gang (Partial: KAI commits an attempt with no minimum check);
//   - KAI takes the PodGroup (a pod is pending, it is ready for scheduling) and no attempt meets
//     its minimum: a sub-group among the first minSubGroup it takes has no pending pod
//     (collectTasksFromSubGroupSet; the deadlock of issue 27);
//   - KAI skips it as not ready while a sub-group it requires has its minimum of pods only
//     counting finished ones (Finished): KAI counts no finished pod (IsReadyForScheduling).
//
// A PodGroup waiting for pods that do not exist yet, or with no pending pod, is not stuck: the
// operator may create them (GangUnsatisfiable reports that after its grace), or nothing is to be
// scheduled.
func (v *Verdict) Stuck() bool {
	switch {
	case v.Partial:
		return true
	case v.pending == 0 || v.AlreadyMet:
		return false
	case v.NotReady:
		return v.Finished != ""
	}
	return !v.Admitted
}

// finishedLeaf names the first not-ready leaf (unreadyLeaves) whose alive ungated pods are below
// its minimum while its alive ungated and Succeeded pods together meet it; "" when none.
func finishedLeaf(root *node) string {
	for _, c := range unreadyLeaves(root) {
		done := count(c.pods, func(p *Pod) bool { return p.State == Succeeded })
		if u := c.usable(); u < c.min && u+done >= c.min {
			return c.name
		}
	}
	return ""
}
