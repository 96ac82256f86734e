package workloadmap

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/ownerskip"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// intoGang returns the PodGroup of a pod of a workload gangmap groups that its plan places in no
// role: no component's podSelector claims it, or its instance or replica is not in the plan. The
// pod joins the workload's gang in no sub-group: with a PodGroup per replica, that of the replica
// the pod names (replica: the per-replica component's replica key read on the pod, "" when it
// names none) when the plan has it, else the plan's first PodGroup, so that a pod of replica 1 never
// counts towards replica 0's gang where it can tell. So KAI never
// binds it outside the gang: a PodGroup with sub-groups leaves it unscheduled (KAI schedules no
// pod outside its sub-groups, job_info.go AddTaskInfo) until the definition or the plan places
// it; a flat PodGroup counts it towards its minMember with the gang's other pods. The findings
// report it at once (UnclaimedPods, and GangNotAdmittable for a role left short). A plan with
// no PodGroup gives the pod what ungrouped gives.
func (g *Grouper) intoGang(ctx context.Context, cp *cachedPlan, topOwner *unstructured.Unstructured, pod *corev1.Pod, otherOwners []*metav1.PartialObjectMetadata, replica string) (*podgroup.Metadata, error) {
	plan := cp.plan
	if len(plan.PodGroups) == 0 || g.Defaults == nil {
		return g.ungrouped(ctx, plan, topOwner, pod, otherOwners)
	}
	pg := plan.PodGroups[0]
	if own := plan.PodGroupOfReplica(replica); own != nil {
		pg = own
	}
	return g.metadata(ctx, topOwner, pod, otherOwners, func(md *podgroup.Metadata) {
		fillGang(md, cp.metaOf(pg), &gang.Assignment{PodGroup: pg, Name: pg.Name}, pod.Name)
	})
}

// UngroupedSuffix ends the name of the PodGroup of a workload's ungrouped pods when KAI's
// default name (pg-<top owner name>-<top owner UID>) is already a gang's name in the plan.
const UngroupedSuffix = "-ungrouped"

// ungrouped returns the PodGroup of a pod gangmap does not gang (no component claims it, its
// role is in no gang of the definition, or its instance or replica is not in the plan) when KAI's pod-grouper skips the pod's workload, and nil
// otherwise (KAI's pod-grouper then groups the pod, as before gangmap). Inside KAI's pod-grouper
// (KAIPlugin) every pod gangmap does not gang gets it: KAI's own grouper is not asked.
//
// KAI's pod-grouper skips every pod of a top owner carrying kai.scheduler/skip-podgrouper: "true"
// (pkg/podgrouper/pod_controller.go, the skip check on the pod and its owners), the mark gangmap
// sets when it first groups a workload (ownerskip). Without this, such a pod would get a PodGroup
// from no one and stay Pending for good. gangmap gives it what KAI's default grouper would have:
// its metadata (queue, priority, preemptibility, topology from the top owner) with minMember 1,
// named pg-<top owner name>-<top owner UID>; that name gets UngroupedSuffix when the plan already
// uses it for a gang, so a gang's PodGroup is never rewritten to minMember 1. Errors come only
// from reading priority classes.
func (g *Grouper) ungrouped(ctx context.Context, plan *gang.Plan, topOwner *unstructured.Unstructured, pod *corev1.Pod, otherOwners []*metav1.PartialObjectMetadata) (*podgroup.Metadata, error) {
	if (!g.KAIPlugin && !ownerskip.Marked(topOwner)) || g.Defaults == nil {
		return nil, nil
	}
	return g.metadata(ctx, topOwner, pod, otherOwners, func(md *podgroup.Metadata) {
		if plan != nil && slices.ContainsFunc(plan.PodGroups, func(pg *gang.PodGroup) bool { return pg.Name == md.Name }) {
			md.Name += UngroupedSuffix
		}
	})
}
