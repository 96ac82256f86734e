package controller

import (
	"context"
	"errors"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/hub"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/fairqueue"
)

// Name is the controller's name in logs and metrics.
const Name = "gangmap-pod-grouper"

// SetupWithManager registers the pod controller. regroup receives a value whenever every pod
// must be looked at again (a definition changed); the controller then enqueues every cached pod.
// Workload kinds are watched as they are first grouped (see workloadWatcher).
func (r *PodReconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int, regroup <-chan struct{}) error {
	if r.Pods == nil {
		return errors.New("the pod controller needs the pod cache (PodReconciler.Pods)")
	}
	r.init()
	// The Events of the episodes still open when the manager stops are written then.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.FlushEvents()
		return nil
	})); err != nil {
		return err
	}
	// Every pod of the cache is of our scheduler (its field selector). The queue serves the pods'
	// namespaces in turn, so one namespace's backlog (a huge workload's pods re-enqueued at each
	// change of it) does not delay another namespace's pods.
	b := ctrl.NewControllerManagedBy(mgr).Named(Name).
		WatchesRawSource(r.Pods.Source()).
		WatchesRawSource(source.Kind(mgr.GetCache(), &v2alpha2.PodGroup{}, handler.TypedEnqueueRequestsFromMapFunc(r.podsOfPodGroup), gangChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent, NewQueue: fairqueue.ByNamespace})
	b = b.WatchesRawSource(source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		r.queue.Store(&q)
		if regroup != nil {
			go r.regroup(ctx, regroup, q)
		}
		return nil
	}))
	c, err := b.Build(r)
	if err != nil {
		return err
	}
	r.workloads = &workloadWatcher{r: r, ctrl: c, cache: mgr.GetCache()}
	if r.Planner == nil {
		r.Planner, _ = r.Decider.Hub.Grouper.(Planner)
	}
	if r.Planner != nil && r.Metrics != nil {
		r.workloads.status = newStatusKeeper(mgr.GetClient(), r.PodGroupOwners, r.Planner, r.Metrics, r.DryRun)
		return mgr.Add(r.workloads.status)
	}
	return nil
}

// gangChanged passes the PodGroup events after which gangmap must look at the pods again: a
// PodGroup deleted while its workload lives, or one whose gang (minMember, minSubGroup,
// sub-groups) someone else changed. Changes to what KAI and others own (queue, status,
// markUnschedulable, labels) do not pass, so writers beside gangmap cause no work.
var gangChanged = predicate.TypedFuncs[*v2alpha2.PodGroup]{
	CreateFunc:  func(event.TypedCreateEvent[*v2alpha2.PodGroup]) bool { return false },
	GenericFunc: func(event.TypedGenericEvent[*v2alpha2.PodGroup]) bool { return false },
	DeleteFunc:  func(e event.TypedDeleteEvent[*v2alpha2.PodGroup]) bool { return isGangmaps(e.Object) },
	UpdateFunc: func(e event.TypedUpdateEvent[*v2alpha2.PodGroup]) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return isGangmaps(n) && (!equality.Semantic.DeepEqual(o.Spec.MinMember, n.Spec.MinMember) ||
			!equality.Semantic.DeepEqual(o.Spec.MinSubGroup, n.Spec.MinSubGroup) ||
			!equality.Semantic.DeepEqual(o.Spec.SubGroups, n.Spec.SubGroups))
	},
}

// isGangmaps reports whether gangmap wrote the PodGroup (it carries gangmap.io/definition).
func isGangmaps(o client.Object) bool {
	_, ok := o.GetAnnotations()[kaikeys.Definition]
	return ok
}

// podsOfPodGroup maps a PodGroup to the pods of its workload (its single owner reference) in the
// PodGroup's own namespace, from the index the reconciler keeps. gangmap writes a pod's PodGroup in
// the pod's namespace only, so the pods of other namespaces (a cluster-scoped owner's) are not
// this PodGroup's; and a PodGroup anyone creates in their own namespace, with gangmap's annotation
// and another namespace's workload UID as owner (UIDs are public: PodGroup names carry them),
// makes gangmap reconcile nothing of that namespace.
func (r *PodReconciler) podsOfPodGroup(_ context.Context, o *v2alpha2.PodGroup) []reconcile.Request {
	refs := o.GetOwnerReferences()
	if len(refs) != 1 {
		return nil
	}
	reqs := r.requests(refs[0].UID)
	return slices.DeleteFunc(reqs, func(req reconcile.Request) bool { return req.Namespace != o.GetNamespace() })
}

// regroup enqueues every cached pod at each "definitions changed" signal on in, after stopping
// the watches of kinds gangmap no longer groups, until ctx ends.
func (r *PodReconciler) regroup(ctx context.Context, in <-chan struct{}, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-in:
			if r.workloads != nil {
				r.workloads.prune(ctx, func(gvk schema.GroupVersionKind) bool { return r.Decider.Hub.Decide(gvk) == hub.Grouped })
			}
			for _, k := range r.Pods.Keys() {
				q.Add(reconcile.Request{NamespacedName: k})
			}
		}
	}
}

// startRuleReadsStatus reports whether the active definition of gvk has a start rule that follows
// the workload's state (spec.gangmap.gang.startup.holds), so that its pods are regrouped when the
// operator records progress in the status (a dependency Complete, a replicated job Ready). A
// watched kind was decided through the Hub and its Registry, so both are set.
func (r *PodReconciler) startRuleReadsStatus(gvk schema.GroupVersionKind) bool {
	c := r.Decider.Hub.Registry.Lookup(gvk)
	return c != nil && c.Startup != nil && c.Startup.Holds != nil
}
