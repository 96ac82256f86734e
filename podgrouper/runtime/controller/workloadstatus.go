package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/gangmap/gangmap/podgrouper/runtime/workloadmetrics"
)

// planner is the part of gangmap's grouper (workloadmap.Grouper) the workload metrics and status
// need: the cached plan of a workload, and a pod's role in it.
type planner interface {
	Plan(ctx context.Context, topOwner *unstructured.Unstructured) (*gang.Plan, *definitions.Compiled, error)
	Role(ctx context.Context, topOwner *unstructured.Unstructured, pod *corev1.Pod) (*gang.Plan, string, error)
}

// track records a grouped pod and its workload in the workload metrics: the workload's plan
// (roles, GPUs, status) and the pod's role and phase. A pod with no role in the current plan (no
// component claims it, or its instance or replica is not in the plan: it is in KAI's default
// PodGroup, outside every gang) is not counted under any role, and one counted before (under a
// role the workload has since dropped) is forgotten, so gangmap_workload_role_pods never shows
// it under a role or gang the plan does not have.
func (r *PodReconciler) track(ctx context.Context, pod *corev1.Pod, d *decide.Decision) {
	p, ok := r.Decider.Hub.Grouper.(planner)
	if r.Metrics == nil || !ok {
		return
	}
	plan, role, err := p.Role(ctx, d.Owner, pod)
	if err != nil {
		role = ""
	}
	if !r.Metrics.TrackPod(d.Owner.GetUID(), d.Kind.GroupKind().String(), plan, client.ObjectKeyFromObject(pod), role, pod.Status.Phase) {
		ctrl.LoggerFrom(ctx).V(2).Info("No workload metrics for the pod: no role in the plan", "error", err)
	}
}

// statusKey names a workload whose status may have changed.
type statusKey struct {
	gvk schema.GroupVersionKind
	key types.NamespacedName
}

// statusKeeper keeps the status of the workloads gangmap groups current where users see it when
// only the workload's status changes (no pod event follows, and a status-only update does not
// regroup): it re-reads the workload, refreshes its workload metrics and sets the gangmap.io/status
// annotation of its PodGroups (not in dry-run). Updates are queued (deduplicated per workload) and
// handled by one worker, off the informer's event handler.
type statusKeeper struct {
	client client.Client
	// owners gives a workload's own PodGroups (podgroup.ActualNames); nil: the namespace's.
	owners  podgroup.OwnerLister
	planner planner
	metrics *workloadmetrics.Tracker
	dryRun  bool
	queue   workqueue.TypedRateLimitingInterface[statusKey]
}

var _ manager.Runnable = (*statusKeeper)(nil)

func newStatusKeeper(c client.Client, owners podgroup.OwnerLister, p planner, m *workloadmetrics.Tracker, dryRun bool) *statusKeeper {
	return &statusKeeper{client: c, owners: owners, planner: p, metrics: m, dryRun: dryRun,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[statusKey](),
			workqueue.TypedRateLimitingQueueConfig[statusKey]{Name: "gangmap-workload-status"})}
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
	if !s.metrics.SetWorkload(workloadmetrics.FromPlan(plan, obj.GetUID(), k.gvk.GroupKind().String())) || s.dryRun {
		return nil
	}
	status := plan.StatusText()
	planned := make([]string, 0, len(plan.PodGroups))
	for _, pg := range plan.PodGroups {
		planned = append(planned, pg.Name)
	}
	// An alpha plan's name with a {key} placeholder stands for the PodGroups the pods' values
	// named (one per value): annotate those.
	names, _, err := podgroup.ActualNames(ctx, s.client, s.owners, k.key.Namespace, obj.GetUID(), planned)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := s.annotate(ctx, k.key.Namespace, name, status); err != nil {
			return err
		}
	}
	return nil
}

// annotate sets gangmap.io/status on one of gangmap's PodGroups when it differs (an Update of a
// copy of the cached PodGroup with that annotation changed: the verbs podgroup.Applier already
// needs; a Conflict is retried by the queue); a PodGroup not there yet, or not gangmap's, is left
// alone. The cached PodGroup is read without a deep copy (only read) and copied only to write.
func (s *statusKeeper) annotate(ctx context.Context, ns, name, status string) error {
	pg := &v2alpha2.PodGroup{}
	if err := s.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pg, client.UnsafeDisableDeepCopy); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !isGangmaps(pg) || status == "" || pg.Annotations[kaikeys.Status] == status {
		return nil
	}
	pg = pg.DeepCopy()
	pg.Annotations[kaikeys.Status] = status
	if err := s.client.Update(ctx, pg); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("PodGroup status annotation updated", "podGroup", klog.KObj(pg), "status", status)
	return nil
}
