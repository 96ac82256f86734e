// Package controller is gangmap's pod controller: for each pod scheduled by KAI whose top owner
// is a kind gangmap groups, it writes the pod's PodGroup and labels the pod as KAI's own
// pod-grouper would. It never binds, admits or places a pod: KAI keeps that authority.
package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gangmap/gangmap/podgrouper/hub"
	"github.com/gangmap/gangmap/podgrouper/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/owners"
	"github.com/gangmap/gangmap/podgrouper/podgroup"
)

// Event reasons gangmap emits.
const (
	ReasonPodGroupCreated = "PodGroupCreated"
	ReasonPodGroupUpdated = "PodGroupUpdated"
	ReasonWouldWrite      = "DryRunPodGroup"
	ReasonGroupingFailed  = "GangmapGroupingFailed"
	ReasonRepaired        = "GangmapRepairedPod"
)

// PodReconciler groups pods. Client is the manager's cached client (pods filtered by scheduler
// name; top owners read as unstructured start an informer per kind, like KAI's).
type PodReconciler struct {
	Client        client.Client
	Walker        *owners.Walker
	Hub           *hub.Hub
	Applier       *podgroup.Applier
	Recorder      record.EventRecorder
	SchedulerName string
	// DryRun (shadow mode) computes and reports through Events, logs and metrics, and writes
	// nothing.
	DryRun bool
}

var _ reconcile.Reconciler = (*PodReconciler)(nil)

// Reconcile fetches the pod and groups it; see reconcile for the steps.
func (r *PodReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log := ctrl.LoggerFrom(ctx).WithValues("pod", klog.KObj(pod))
	return r.reconcile(ctrl.LoggerInto(ctx, log), pod)
}

func (r *PodReconciler) reconcile(ctx context.Context, pod *corev1.Pod) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	start := time.Now()

	// 1. Only live pods of our scheduler that have owners: an owner-less pod is KAI's (Pod plugin).
	if pod.Spec.SchedulerName != r.SchedulerName || pod.DeletionTimestamp != nil || len(pod.OwnerReferences) == 0 {
		return ctrl.Result{}, nil
	}

	// 2. Walk owner references to the top owner.
	chain, err := r.Walker.Walk(ctx, pod.Namespace, pod.OwnerReferences)
	if err != nil {
		return r.fail(ctx, pod, nil, "OwnerWalk", err)
	}
	top := chain.Top()

	// 3. Native kinds and kinds without a definition are not gangmap's: leave the pod alone.
	gvk := top.GroupVersionKind()
	grp := r.Hub.GetPodGrouperPlugin(gvk)
	if grp == nil {
		log.V(4).Info("Pod is not gangmap's", "kind", gvk.String(), "decision", r.Hub.Decide(gvk))
		return ctrl.Result{}, nil
	}

	// 4. Read the top owner in full.
	owner := &unstructured.Unstructured{}
	owner.SetGroupVersionKind(gvk)
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: top.Namespace, Name: top.Name}, owner); err != nil {
		return r.fail(ctx, pod, nil, "TopOwnerRead", fmt.Errorf("top owner %s %s: %w", gvk.Kind, top.Name, err))
	}

	// 5. Decide the PodGroup from the workload's gang plan.
	md, err := grp.GetPodGroupMetadata(ctx, owner, pod, chain.Owners...)
	if err != nil {
		return r.fail(ctx, pod, owner, "Plan", err)
	}
	if md == nil {
		// The definition puts the pod in no gang (no component claims it, or its role is in no
		// gang): as in KAI, a nil result means "not ours"; KAI's default grouper takes it.
		log.V(1).Info("The definition puts the pod in no gang; leaving it to KAI", "kind", gvk.String())
		return ctrl.Result{}, nil
	}
	decisionSeconds.Observe(time.Since(start).Seconds())
	subGroup := ""
	if sg := md.FindSubGroupForPod(pod.Namespace, pod.Name); sg != nil {
		subGroup = sg.Name
	}
	log = log.WithValues("podGroup", klog.KRef(md.Namespace, md.Name), "subGroup", subGroup, "workload", klog.KObj(owner))

	if r.DryRun {
		podGroupWrites.WithLabelValues("DryRun").Inc()
		podsGrouped.WithLabelValues(gvk.Kind, "true").Inc()
		r.Recorder.Eventf(owner, corev1.EventTypeNormal, ReasonWouldWrite, "dry-run: pod %s would join PodGroup %s (sub-group %q, %s)", pod.Name, md.Name, subGroup, gangSummary(md))
		log.V(2).Info("Dry-run: PodGroup decided, nothing written")
		return ctrl.Result{}, nil
	}

	// 6. Write the PodGroup (nothing is written when it already matches).
	res, err := r.Applier.Apply(ctx, md)
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return ctrl.Result{Requeue: true}, nil
	}
	if err != nil {
		return r.fail(ctx, pod, owner, "PodGroupWrite", err)
	}
	podGroupWrites.WithLabelValues(string(res)).Inc()
	switch res {
	case podgroup.Created:
		r.Recorder.Eventf(owner, corev1.EventTypeNormal, ReasonPodGroupCreated, "created PodGroup %s: %s", md.Name, gangSummary(md))
		log.V(1).Info("PodGroup created")
	case podgroup.Updated:
		r.Recorder.Eventf(owner, corev1.EventTypeNormal, ReasonPodGroupUpdated, "updated PodGroup %s: %s", md.Name, gangSummary(md))
		log.V(1).Info("PodGroup updated")
	}

	// 7. Label the pod.
	if err := r.labelPod(ctx, pod, md.Name, subGroup); err != nil {
		return r.fail(ctx, pod, owner, "PodPatch", err)
	}
	podsGrouped.WithLabelValues(gvk.Kind, "false").Inc()
	return ctrl.Result{}, nil
}

// labelPod merge-patches only what differs: the pod-group-name annotation, KAI's skip
// annotation (so KAI's pod-grouper leaves the pod alone from now on), and the sub-group label
// (removed when stale, which KAI never does). A pod that KAI may have grouped already (it had
// another PodGroup and no skip annotation) gets a Warning Event.
func (r *PodReconciler) labelPod(ctx context.Context, pod *corev1.Pod, pgName, subGroup string) error {
	ann, labels := map[string]any{}, map[string]any{}
	if cur := pod.Annotations[kaikeys.PodGroupName]; cur != pgName {
		ann[kaikeys.PodGroupName] = pgName
		if cur != "" && pod.Annotations[kaikeys.SkipPodGrouper] != "true" {
			r.Recorder.Eventf(pod, corev1.EventTypeWarning, ReasonRepaired,
				"moved from PodGroup %s to %s: the pod was created without gangmap's admission webhook and may already have been grouped by KAI", cur, pgName)
		}
	}
	if pod.Annotations[kaikeys.SkipPodGrouper] != "true" {
		ann[kaikeys.SkipPodGrouper] = "true"
	}
	cur, has := pod.Labels[kaikeys.SubGroupName]
	switch {
	case subGroup == "" && has:
		labels[kaikeys.SubGroupName] = nil
	case subGroup != "" && cur != subGroup:
		labels[kaikeys.SubGroupName] = subGroup
	}
	if len(ann) == 0 && len(labels) == 0 {
		return nil
	}
	md := map[string]any{}
	if len(ann) > 0 {
		md["annotations"] = ann
	}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	patch, err := jsonMarshal(map[string]any{"metadata": md})
	if err != nil {
		return err
	}
	return r.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch))
}

// fail reports an error on the pod (and the workload when known) with a Warning Event, counts
// it, and returns it so the pod is retried with backoff without blocking other pods.
func (r *PodReconciler) fail(ctx context.Context, pod *corev1.Pod, owner *unstructured.Unstructured, reason string, err error) (ctrl.Result, error) {
	groupingErrors.WithLabelValues(reason).Inc()
	if errors.Is(err, context.Canceled) {
		return ctrl.Result{}, err
	}
	msg := fmt.Sprintf("gangmap could not group the pod (%s): %v", reason, err)
	r.Recorder.Event(pod, corev1.EventTypeWarning, ReasonGroupingFailed, msg)
	if owner != nil {
		r.Recorder.Eventf(owner, corev1.EventTypeWarning, ReasonGroupingFailed, "pod %s: %s", pod.Name, msg)
	}
	return ctrl.Result{}, fmt.Errorf("%s: %w", reason, err)
}

// gangSummary renders minMember or minSubGroup with the sub-groups and GPUs for Events.
func gangSummary(md *podgroup.Metadata) string {
	s := ""
	if md.MinSubGroup != nil {
		s = fmt.Sprintf("minSubGroup %d", *md.MinSubGroup)
		for _, sg := range md.SubGroups {
			s += fmt.Sprintf(", %s minMember %d", sg.Name, sg.MinAvailable)
		}
	} else {
		s = fmt.Sprintf("minMember %d", md.MinAvailable)
	}
	if g := md.Annotations[kaikeys.GPUs]; g != "" {
		s += fmt.Sprintf(", %s GPUs", g)
	}
	return s
}
