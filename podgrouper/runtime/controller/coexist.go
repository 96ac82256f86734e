package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/ownerskip"
)

// Event reasons of the coexistence with KAI's pod-grouper.
const (
	// ReasonOwnerMarked: gangmap put KAI's skip annotation on the workload, and wrote no
	// PodGroup in the same reconcile (else PodGroupCreated or PodGroupUpdated says so).
	ReasonOwnerMarked = "GangmapMarkedWorkload"
	// ReasonOwnerMarkFailed: gangmap could not; KAI may group pods created while gangmap is down.
	ReasonOwnerMarkFailed = "GangmapMarkWorkloadFailed"
)

// markNote is what the Event of a workload gangmap marked says (GangmapMarkedWorkload, or the
// PodGroup Event of the same reconcile).
const markNote = "kai.scheduler/skip-podgrouper on the workload: KAI's pod-grouper leaves its pods to gangmap, also those created while gangmap is down"

// markOwner puts KAI's skip annotation on the decided workload the first time gangmap groups one
// of its pods (ownerskip.Marker; nil or dry-run: nothing), before its PodGroup is written, so
// that from then on KAI's pod-grouper leaves every later pod of the workload alone, even while
// gangmap is down: those pods wait, unscheduled, until gangmap groups them. It reports whether it
// marked the workload now. One reconcile marks a workload at a time: the others of its pods
// reconciled meanwhile (its pods come in a burst, ten workers reconcile them at once) wait for it
// and then write nothing, so the workload gets one PATCH and its PodGroup is still written after
// the mark (before, 1,000 workloads of 10 pods got 1,152 GangmapMarkedWorkload Events). The mark is
// told once, by the Event of the reconcile that creates or updates the PodGroup (writePodGroup),
// or on its own (GangmapMarkedWorkload) when none does. A failed write is reported (Warning Event
// GangmapMarkWorkloadFailed on the workload, log, gangmap_owner_skip_marks_total{result="Error"}),
// does not stop the grouping, and is tried again by the workload's next reconcile.
func (r *PodReconciler) markOwner(ctx context.Context, d *decide.Decision) (marked bool) {
	if r.DryRun || r.Owners == nil || ownerskip.Marked(d.Owner) || r.recentlyMarked(d.Owner) {
		return false
	}
	uid := d.Owner.GetUID()
	done := make(chan struct{})
	if other, busy := r.marking.LoadOrStore(uid, done); busy {
		select {
		case <-other.(chan struct{}):
		case <-ctx.Done():
		}
		return false
	}
	defer func() {
		r.marking.Delete(uid)
		close(done)
	}()
	if r.recentlyMarked(d.Owner) {
		return false // marked by the reconcile that held it a moment ago
	}
	log := ctrl.LoggerFrom(ctx)
	if _, err := r.Owners.Mark(ctx, d.Owner); err != nil {
		log.Error(err, "Cannot put KAI's skip annotation on the workload; KAI's pod-grouper may group pods created while gangmap is down")
		r.Recorder.Eventf(d.Owner, corev1.EventTypeWarning, ReasonOwnerMarkFailed,
			"cannot set %s on the workload (%v): pods created while gangmap is down may be grouped by KAI's pod-grouper alone", "kai.scheduler/skip-podgrouper", err)
		return false
	}
	r.marked.Store(uid, d.Owner.GetResourceVersion())
	r.markUntold.Store(uid, struct{}{})
	log.V(1).Info("Workload marked with KAI's skip annotation")
	return true
}

// tellMark reports whether the mark of the workload with uid is still to be told, and takes it:
// the caller's Event tells it.
func (r *PodReconciler) tellMark(uid types.UID) bool {
	_, untold := r.markUntold.LoadAndDelete(uid)
	return untold
}

// recentlyMarked: gangmap marked this very version of the workload (the cache has not caught up).
func (r *PodReconciler) recentlyMarked(owner *unstructured.Unstructured) bool {
	rv, ok := r.marked.Load(owner.GetUID())
	return ok && rv == owner.GetResourceVersion()
}

// unmarkKind removes gangmap's skip marks from the cached workloads of a kind that stopped being
// gangmap's (its definition went away, or KAI groups it natively now), so KAI's pod-grouper groups
// their later pods again. Called before the kind's informer is removed.
func (r *PodReconciler) unmarkKind(ctx context.Context, gvk schema.GroupVersionKind) {
	if r.Owners == nil {
		return
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing workloads to remove gangmap's skip marks", "kind", gvk.String())
		return
	}
	for i := range list.Items {
		w := &list.Items[i]
		if _, err := r.Owners.Unmark(ctx, w); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Removing gangmap's skip mark", "workload", client.ObjectKeyFromObject(w), "kind", gvk.String())
		}
		r.marked.Delete(w.GetUID())
	}
}
