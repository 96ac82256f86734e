package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
	"github.com/gangmap/gangmap/podgrouper/runtime/fairqueue"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
	"github.com/gangmap/gangmap/podgrouper/runtime/podbook"
	"github.com/gangmap/gangmap/podgrouper/runtime/workloadmetrics"
)

// Planner is the part of gangmap's grouper (workloadmap.Grouper) the workload metrics and status
// need: the cached plan of a workload, and a pod's role in it.
type Planner interface {
	Plan(ctx context.Context, topOwner *unstructured.Unstructured) (*gang.Plan, *definitions.Compiled, error)
	Role(ctx context.Context, topOwner *unstructured.Unstructured, pod *corev1.Pod) (*gang.Plan, string, error)
}

// Observer keeps what the grouper records of the pods it groups and their workloads: the Book
// (each pod's one record), the findings (each pod against its workload's plan) and the workload
// metrics (each pod's role and phase). The pod controller and gangmap inside KAI's pod-grouper
// (inkai.Observer) feed it their decisions, and have it forget the pods and workloads that go; a
// nil Findings or Metrics records nothing there. Map updates only, no API call.
type Observer struct {
	// Book is the record of every pod, shared by Findings and Metrics so that each pod has one
	// entry.
	Book *podbook.Book
	// Findings counts each pod against its workload's plan (see package findings).
	Findings *findings.Tracker
	// Metrics gets every grouped workload and pod (the gangmap_workload_* series).
	Metrics *workloadmetrics.Tracker
	// Planner gives a pod's role in its workload's plan, for Metrics (nil: no workload metrics).
	Planner Planner
}

// Observe counts the pod against its workload's plan for the findings, or forgets it there when
// it is not gangmap's (d nil) or has no plan.
func (o *Observer) Observe(key types.NamespacedName, pod *corev1.Pod, d *decide.Decision) {
	if o.Findings == nil {
		return
	}
	if d == nil || d.Seen.Plan == nil {
		o.Findings.Forget(key, time.Now())
		return
	}
	o.Findings.ObserveGrouped(key, pod, d.Owner.GetUID(), d.Seen, time.Now())
}

// Track records a grouped pod and its workload in the workload metrics: the workload's plan
// (roles, GPUs, status) and the pod's role and phase. A pod with no role in the current plan (no
// component claims it, or its instance or replica is not in the plan: it is in KAI's default
// PodGroup, outside every gang) is not counted under any role, and one counted before (under a
// role the workload has since dropped) is forgotten, so gangmap_workload_role_pods never shows
// it under a role or gang the plan does not have.
func (o *Observer) Track(ctx context.Context, pod *corev1.Pod, d *decide.Decision) {
	if o.Metrics == nil || o.Planner == nil {
		return
	}
	plan, role, err := o.Planner.Role(ctx, d.Owner, pod)
	if err != nil {
		role = ""
	}
	if !o.Metrics.TrackPod(d.Owner.GetUID(), d.Kind.GroupKind().String(), plan, client.ObjectKeyFromObject(pod), role, pod.Status.Phase) {
		ctrl.LoggerFrom(ctx).V(2).Info("No workload metrics for the pod: no role in the plan", "error", err)
	}
}

// Forget drops a pod that is gone (deleted, or no longer gangmap's) from the findings, the
// metrics and the Book.
func (o *Observer) Forget(key types.NamespacedName) {
	if o.Findings != nil {
		o.Findings.Forget(key, time.Now())
	}
	if o.Metrics != nil {
		o.Metrics.ForgetPod(key)
	}
	o.Book.Forget(key)
}

// ForgetWorkload drops a deleted workload; its pods go as they are deleted.
func (o *Observer) ForgetWorkload(uid types.UID) {
	if o.Findings != nil {
		o.Findings.ForgetOwner(uid)
	}
	if o.Metrics != nil {
		o.Metrics.ForgetWorkload(uid)
	}
	o.Book.UngroupOwner(uid)
}

// statusKey names a workload whose status may have changed.
type statusKey struct {
	gvk schema.GroupVersionKind
	key types.NamespacedName
}

// statusKeeper keeps the status of the workloads gangmap groups current where users see it when
// only the workload's status changes (no pod event follows, and a status-only update does not
// regroup): it re-reads the workload, refreshes its workload metrics and sets the gangmap.io/status
// annotation of its PodGroups (not in dry-run). Updates are queued (deduplicated per workload,
// namespaces served in turn: fairqueue) and handled by one worker, off the informer's event
// handler.
type statusKeeper struct {
	client client.Client
	// owners gives a workload's own PodGroups (podgroup.ActualNames); nil: the namespace's.
	owners  podgroup.OwnerLister
	planner Planner
	metrics *workloadmetrics.Tracker
	dryRun  bool
	queue   workqueue.TypedRateLimitingInterface[statusKey]
}

var _ manager.Runnable = (*statusKeeper)(nil)

func newStatusKeeper(c client.Client, owners podgroup.OwnerLister, p Planner, m *workloadmetrics.Tracker, dryRun bool) *statusKeeper {
	return &statusKeeper{client: c, owners: owners, planner: p, metrics: m, dryRun: dryRun,
		queue: fairqueue.NewRateLimiting("gangmap-workload-status", workqueue.DefaultTypedControllerRateLimiter[statusKey](),
			func(k statusKey) string { return k.key.Namespace })}
}

// changed queues a workload gangmap groups (one with metrics).
func (s *statusKeeper) changed(obj *unstructured.Unstructured) {
	if s == nil || !s.metrics.Tracked(obj.GetUID()) {
		return
	}
	s.queue.Add(statusKey{gvk: obj.GroupVersionKind(), key: client.ObjectKeyFromObject(obj)})
}

// Start implements manager.Runnable: one worker until ctx ends.
func (s *statusKeeper) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	for {
		k, quit := s.queue.Get()
		if quit {
			return nil
		}
		if err := s.refresh(ctx, k); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Refreshing a workload's status", "workload", k.key, "kind", k.gvk.String())
			s.queue.AddRateLimited(k)
		} else {
			s.queue.Forget(k)
		}
		s.queue.Done(k)
	}
}

// refresh re-reads one workload, records its plan in the metrics and writes its status on its
// PodGroups. A workload gone or without a plan is left to the pod controller (which reports).
func (s *statusKeeper) refresh(ctx context.Context, k statusKey) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(k.gvk)
	if err := s.client.Get(ctx, k.key, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	plan, _, err := s.planner.Plan(ctx, obj)
	if err != nil {
		return nil
	}
	w := workloadmetrics.FromPlan(plan, obj.GetUID(), k.gvk.GroupKind().String())
	if !s.metrics.SetWorkload(w) || s.dryRun {
		return nil
	}
	status := plan.StatusText()
	// An alpha plan's name with a {key} placeholder stands for the PodGroups the pods' values
	// named (one per value): annotate those.
	names, _, err := podgroup.ActualNames(ctx, s.client, s.owners, k.key.Namespace, obj.GetUID(), w.PodGroups)
	if err != nil {
		return err
	}
	// gangmap.io/status goes on gangmap's PodGroups only, when it differs (a Conflict is retried
	// by the queue); a PodGroup not there yet is left alone.
	mine := func(pg *v2alpha2.PodGroup) bool { return isGangmaps(pg) && status != "" }
	for _, name := range names {
		updated, err := findings.SetAnnotation(ctx, s.client, types.NamespacedName{Namespace: k.key.Namespace, Name: name}, kaikeys.Status, status, mine)
		if err = client.IgnoreNotFound(err); err != nil {
			return err
		}
		if updated {
			ctrl.LoggerFrom(ctx).V(1).Info("PodGroup status annotation updated", "podGroup", klog.KRef(k.key.Namespace, name), "status", status)
		}
	}
	return nil
}
