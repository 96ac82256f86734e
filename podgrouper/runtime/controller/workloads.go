package controller

import (
	"context"
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// workloadWatcher starts, the first time a pod of a workload kind is grouped, a watch on that
// kind through the manager's cache (the informer the top-owner reads already started), so that a
// change of a workload's spec, labels or annotations regroups its pods even when no pod event
// follows (scaling a CustomJob from 2 to 4 workers updates the PodGroup at once). When a kind
// stops being gangmap's (its definition went away, or KAI now groups it natively), prune stops
// its informer; the watch starts again if the kind comes back.
type workloadWatcher struct {
	// r is the pod controller: its Book lists a workload's pods, its Observer, Strays and skip
	// marks (unmarkKind, before a kind's watch stops) forget what a workload leaves.
	r     *PodReconciler
	ctrl  controller.Controller
	cache cache.Cache
	// status, when set, gets every update of a watched workload (status included).
	status *statusKeeper
	// pacer paces the regroups of a workload changed in a loop.
	pacer regroupPacer

	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
}

// ensure starts the watch on gvk unless it is started already.
func (w *workloadWatcher) ensure(ctx context.Context, gvk schema.GroupVersionKind) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watched[gvk] {
		return nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := w.ctrl.Watch(source.Kind(w.cache, obj, w.handler())); err != nil {
		return err
	}
	if w.watched == nil {
		w.watched = map[schema.GroupVersionKind]bool{}
	}
	w.watched[gvk] = true
	workloadWatches.Inc()
	ctrl.LoggerFrom(ctx).Info("Watching a workload kind to regroup its pods on changes", "kind", gvk.String())
	return nil
}

// prune stops the watch (and removes the informer) of every watched kind for which keep says
// false. Errors are logged: a watch that cannot be stopped only costs its informer.
func (w *workloadWatcher) prune(ctx context.Context, keep func(schema.GroupVersionKind) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for gvk := range w.watched {
		if keep(gvk) {
			continue
		}
		w.r.unmarkKind(ctx, gvk)
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		if err := w.cache.RemoveInformer(ctx, obj); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Stopping the watch of a kind gangmap no longer groups", "kind", gvk.String())
			continue
		}
		delete(w.watched, gvk)
		workloadWatches.Dec()
		ctrl.LoggerFrom(ctx).Info("Stopped watching a workload kind gangmap no longer groups", "kind", gvk.String())
	}
}

// handler maps a workload update to its indexed pods (paced: regroupPacer). Only changes that can change a plan or the
// default metadata count: the spec (generation), labels, annotations, and the status for kinds
// whose start rule reads it (startRuleReadsStatus); other status-only updates do not regroup. A
// change of the labels or annotations alone regroups one pod of each of the workload's PodGroups
// (onePerPodGroup): its reconcile writes the PodGroup's gang and metadata, and the pods' own
// PodGroup and sub-group come from the spec and the pods, which did not change (a pod whose
// PodGroup or sub-group does change regroups all its workload's pods: regroupSiblings). Every
// update, and every workload the watch lists when it (re)starts, goes to changed (the status
// keeper). A deleted workload's pods are forgotten: garbage collection removes them and their
// PodGroup.
func (w *workloadWatcher) handler() handler.TypedEventHandler[*unstructured.Unstructured, reconcile.Request] {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.TypedFuncs[*unstructured.Unstructured, reconcile.Request]{
		// A workload seen when the watch (re)starts (the informer's list, e.g. after a definition
		// change pruned and re-added the kind) may have changed while the kind was not watched:
		// the status keeper looks again (a workload it does not track costs one lookup).
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*unstructured.Unstructured], _ queue) {
			w.status.changed(e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*unstructured.Unstructured], q queue) {
			o, n := e.ObjectOld, e.ObjectNew
			w.status.changed(n)
			statusChanged := w.r.startRuleReadsStatus(n.GroupVersionKind()) && !equality.Semantic.DeepEqual(o.Object["status"], n.Object["status"])
			window := RegroupWindow
			if o.GetGeneration() == n.GetGeneration() && !statusChanged {
				if maps.Equal(o.GetLabels(), n.GetLabels()) && maps.Equal(o.GetAnnotations(), n.GetAnnotations()) {
					return
				}
				window = MetadataRegroupWindow
			}
			// The pods are listed only when the pacer enqueues them: a workload changed in a loop
			// costs a map lookup per change, not a list of its pods.
			pods := 0
			after := w.pacer.enqueue(q, n.GetUID(), func() []reconcile.Request {
				reqs := w.r.requests(n.GetUID())
				if window == MetadataRegroupWindow {
					reqs = w.r.onePerPodGroup(reqs)
				}
				pods = len(reqs)
				return reqs
			}, time.Now(), window)
			ctrl.LoggerFrom(ctx).V(2).Info("Workload changed; regrouping its pods", "workload", klog.KObj(n), "kind", n.GroupVersionKind().String(), "pods", pods, "after", after)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*unstructured.Unstructured], _ queue) {
			w.pacer.forget(e.Object.GetUID())
			w.r.ForgetWorkload(e.Object.GetUID())
			w.r.Strays.Forget(e.Object.GetUID())
		},
	}
}
