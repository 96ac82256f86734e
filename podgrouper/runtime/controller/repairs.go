package controller

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/workloadevents"
)

// FlushEvents writes the Events of every open episode now (the manager's stop; tests).
func (r *PodReconciler) FlushEvents() {
	r.repaired.Flush()
	r.dryRun.Flush()
}

// labelPod merge-patches only what differs: the pod-group-name annotation, KAI's skip
// annotation (so KAI's pod-grouper leaves the pod alone from now on), and the sub-group label
// (removed when stale, which KAI never does). A pod without the skip annotation was not mutated by
// gangmap's admission webhook at its creation, so KAI's pod-grouper may have grouped it meanwhile:
// reportRepair counts and logs it, and its workload gets one Warning Event per episode
// (GangmapRepairedPod) for all such pods.
func (r *PodReconciler) labelPod(ctx context.Context, pod *corev1.Pod, d *decide.Decision) error {
	pgName, subGroup := d.Metadata.Name, d.SubGroup
	md := map[string]map[string]any{} // "annotations" and "labels": the values to set (nil: remove)
	set := func(part, key string, v any) {
		if md[part] == nil {
			md[part] = map[string]any{}
		}
		md[part][key] = v
	}
	cur := pod.Annotations[kaikeys.PodGroupName]
	if cur != pgName {
		set("annotations", kaikeys.PodGroupName, pgName)
	}
	repaired := pod.Annotations[kaikeys.SkipPodGrouper] != "true"
	if repaired {
		set("annotations", kaikeys.SkipPodGrouper, "true")
	}
	if _, held := pod.Annotations[kaikeys.Held]; held {
		set("annotations", kaikeys.Held, nil) // grouped now: no longer held
	}
	curSG, has := pod.Labels[kaikeys.SubGroupName]
	switch {
	case subGroup == "" && has:
		set("labels", kaikeys.SubGroupName, nil)
	case subGroup != "" && curSG != subGroup:
		set("labels", kaikeys.SubGroupName, subGroup)
	}
	if len(md) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": md})
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return err
	}
	if repaired && r.Book.FirstRepair(client.ObjectKeyFromObject(pod), pod.UID) {
		r.reportRepair(ctx, pod, d, cur)
	}
	return nil
}

// holdFromKAI gives a pod whose decision failed (reason: DecideError.Reason) after a definition claimed its workload
// (DecideError.Claimed: the plan failed, the owner could not be read) KAI's skip annotation, as
// the admission webhook does at creation (webhook.PodMutator.hold), when the pod lacks it (created
// while the webhook was down, or before the definition applied): KAI's pod-grouper would
// otherwise give it a PodGroup of its own and KAI bind it outside its gang. The pod then waits,
// with no PodGroup, until a retry groups it. Nothing is written in shadow mode (DryRun) or for a
// pod KAI's pod-grouper already put in a PodGroup (the next successful decision repairs it). A
// failed patch is logged; the caller's retry tries again.
func (r *PodReconciler) holdFromKAI(ctx context.Context, pod *corev1.Pod, reason string) {
	if r.DryRun || !decide.ClaimedReason(reason) || pod.Annotations[kaikeys.SkipPodGrouper] == "true" ||
		pod.Annotations[kaikeys.PodGroupName] != "" {
		return
	}
	patch := []byte(`{"metadata":{"annotations":{"` + kaikeys.SkipPodGrouper + `":"true","` + kaikeys.Held + `":"true"}}}`)
	if perr := r.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); perr != nil {
		ctrl.LoggerFrom(ctx).Error(perr, "Cannot hold the pod from KAI's pod-grouper")
		return
	}
	podsHeld.Inc()
}

// releaseHeld hands a pod gangmap held (kaikeys.Held, with no PodGroup) back to KAI's
// pod-grouper once its kind is no longer gangmap's (its definitions were removed, or a native
// plugin now groups it): it removes KAI's skip annotation and kaikeys.Held, so that KAI groups the
// pod by its own rules, as it does every new pod of a kind whose definition was deleted
// (docs/reliability.md, "a definition deleted while its workloads run"). Without it the pod would
// wait for ever: KAI's pod-grouper skips it and gangmap no longer groups it.
func (r *PodReconciler) releaseHeld(ctx context.Context, pod *corev1.Pod) error {
	if r.DryRun || pod.Annotations[kaikeys.Held] != "true" || pod.Annotations[kaikeys.PodGroupName] != "" || pod.DeletionTimestamp != nil {
		return nil
	}
	patch := []byte(`{"metadata":{"annotations":{"` + kaikeys.SkipPodGrouper + `":null,"` + kaikeys.Held + `":null}}}`)
	if err := r.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return client.IgnoreNotFound(err)
	}
	podsReleased.Inc()
	ctrl.LoggerFrom(ctx).Info("Held pod handed back to KAI's pod-grouper: its kind is no longer gangmap's")
	r.Recorder.Event(pod, corev1.EventTypeNormal, ReasonReleased, "gangmap no longer groups this pod's kind: the pod is handed back to KAI's pod-grouper")
	return nil
}

// reportRepair tells of a pod labelled after creation: gangmap_pods_repaired_total, an Info log
// with the PodGroup it joined (and the one it had, when another writer, KAI's pod-grouper, had
// put it in one), and the pod counted in its workload's repair episode.
func (r *PodReconciler) reportRepair(ctx context.Context, pod *corev1.Pod, d *decide.Decision, previous string) {
	repairs.Inc()
	pgName := d.Metadata.Name
	detail := "joined PodGroup " + pgName
	log := ctrl.LoggerFrom(ctx)
	if previous != "" && previous != pgName {
		detail = fmt.Sprintf("moved from PodGroup %s to %s", previous, pgName)
		log.Info("Pod labelled after creation, moved from another PodGroup (gangmap's admission webhook had not set it)", "previousPodGroup", previous)
	} else {
		log.Info("Pod labelled after creation (gangmap's admission webhook had not set it)")
	}
	r.repaired.Add(d.Owner, pod.Name, detail)
}

// reportDryRun counts a pod the dry run would group in its workload's dry-run episode (one
// DryRunPodGroup Event per workload and episode, naming each PodGroup with its gang) and logs it.
func (r *PodReconciler) reportDryRun(ctx context.Context, pod *corev1.Pod, d *decide.Decision) {
	md := d.Metadata
	ctrl.LoggerFrom(ctx).V(2).Info("Dry-run: PodGroup decided, nothing written")
	r.dryRun.Add(d.Owner, pod.Name, fmt.Sprintf("would join PodGroup %s (%s)", md.Name, gangSummary(md)))
}

// repairMessage renders a repair episode's Event. What is known: the pods had no
// kai.scheduler/skip-podgrouper when the controller first saw them, so gangmap's admission
// webhook had not mutated them at creation; whether this grouper serves the webhook; which pods
// another writer (KAI's pod-grouper) had put in another PodGroup. Why the webhook had not is not
// known to the controller, so the possible causes are named.
func repairMessage(webhookServed bool) func(*workloadevents.Episode) string {
	why := "this grouper does not serve gangmap's admission webhook (--webhook-port=0), so the controller labels every pod after creation"
	if webhookServed {
		why = "this grouper serves gangmap's admission webhook, so the API server's call to it failed or timed out (failurePolicy Ignore admits the pod unchanged), " +
			"the webhook configuration's namespace or object selector leaves these pods out, or they were created before the webhook was configured " +
			"(gangmap_webhook_errors_total and the API server's log tell which)"
	}
	return func(e *workloadevents.Episode) string {
		return fmt.Sprintf("labelled %s after creation (%s): %s. They had no kai.scheduler/skip-podgrouper when gangmap first saw them, "+
			"so KAI's pod-grouper may have grouped them meanwhile; %s",
			pods(e.Pods), e.SampleList(), e.DetailList(), why)
	}
}

// dryRunMessage renders a dry-run episode's Event.
func dryRunMessage(e *workloadevents.Episode) string {
	return fmt.Sprintf("dry-run: %s (%s) decided, nothing written: %s", pods(e.Pods), e.SampleList(), e.DetailList())
}

// pods is "1 pod" or "n pods".
func pods(n int) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}
