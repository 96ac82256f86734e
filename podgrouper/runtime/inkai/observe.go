package inkai

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/runtime/controller"
)

// Informers is where the Observer finds the informers of pods and of workload kinds: KAI's
// manager cache (crcache.Cache), which already holds a pod informer (pods of KAI's scheduler,
// cmd/podgrouper/app getCacheOptions) and an unstructured informer per top-owner kind KAI read.
type Informers interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...crcache.InformerGetOption) (crcache.Informer, error)
}

// Observer gives gangmap's findings and workload metrics their pods inside KAI's pod-grouper.
// KAI's pod controller (pkg/podgrouper/pod_controller.go Reconcile) calls gangmap's grouper for
// every event of a pod of a kind gangmap groups, so each decision is observed there
// (Grouper.Metadata calls Observe); but it returns at a pod's NotFound without asking any
// grouper, and never sees a workload's deletion. The Observer therefore also runs as a manager
// Runnable of its own (Start): a delete handler on KAI's cached pod informer forgets each deleted
// pod, and one on each observed workload kind's informer forgets a deleted workload, as the
// standalone grouper's pod controller and workload watches do. Safe for concurrent use.
type Observer struct {
	// Observer records the decisions as the standalone pod controller does (its Findings, the
	// Book and the Metrics, nil for none).
	controller.Observer
	// Informers is KAI's manager cache.
	Informers Informers
	// Log is the logger (the discard logger when unset).
	Log logr.Logger

	// kinds holds the workload kinds whose informer has the delete handler.
	kinds sync.Map
	// gone holds the UIDs of pods deleted within goneFor (see Observe).
	goneOnce sync.Once
	gone     *utilcache.Expiring
}

// goneFor is how long a deleted pod's UID is remembered: longer than any decision KAI's pod
// controller may have had in flight when the pod was deleted (DefaultTimeout bounds one).
const goneFor = time.Minute

var _ manager.Runnable = (*Observer)(nil)

// Observe records gangmap's decision on a pod: its observation against the plan (findings, with
// the pod's labels when no component claims it) and its role and phase (workload metrics), and
// watches its workload's kind for the workload's deletion. No API call: map updates and, the
// first time a kind is seen, an event handler on KAI's informer of it.
//
// A pod being deleted is forgotten instead, and so is a pod whose deletion was already seen: KAI
// may decide a pod it read from its cache just before the delete handler ran, and counting it
// then would keep it in the findings and metrics for good.
func (o *Observer) Observe(ctx context.Context, pod *corev1.Pod, d *decide.Decision) {
	key := client.ObjectKeyFromObject(pod)
	if _, gone := o.deleted().Get(pod.UID); gone || pod.DeletionTimestamp != nil {
		o.Forget(key)
		return
	}
	o.Book.Group(key, d.Owner.GetUID())
	o.Observer.Observe(key, pod, d)
	o.Track(ctx, pod, d)
	o.watchKind(ctx, d.Kind)
}

// Start implements manager.Runnable: it adds the pod delete handler to KAI's pod informer and
// waits for the manager to stop. Errors: the informer cannot be had.
func (o *Observer) Start(ctx context.Context) error {
	inf, err := o.Informers.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if m, ok := deletedObject(obj); ok {
			if m.GetUID() != "" {
				o.deleted().Set(m.GetUID(), nil, goneFor)
			}
			o.Forget(client.ObjectKeyFromObject(m))
		}
	}})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return inf.RemoveEventHandler(reg)
}

// watchKind adds, once per kind, a delete handler to KAI's informer of the workload kind (an
// unstructured informer: KAI's manager client reads top owners unstructured from its cache).
// Errors are logged: the workload then stays in the findings and metrics until its pods go.
func (o *Observer) watchKind(ctx context.Context, gvk schema.GroupVersionKind) {
	if _, loaded := o.kinds.LoadOrStore(gvk, true); loaded {
		return
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	inf, err := o.Informers.GetInformer(ctx, u, crcache.BlockUntilSynced(false))
	if err == nil {
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
			if m, ok := deletedObject(obj); ok {
				o.ForgetWorkload(m.GetUID())
			}
		}})
	}
	if err != nil {
		o.kinds.Delete(gvk)
		o.Log.Error(err, "Cannot watch the workload kind for deletions; a deleted workload's findings and metrics stay until its pods are gone", "kind", gvk.String())
	}
}

// deletedObject is the object of an informer's delete notification (also a tombstone's).
func deletedObject(obj any) (client.Object, bool) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(client.Object)
	return m, ok
}

// deleted returns the UIDs of pods deleted within goneFor.
func (o *Observer) deleted() *utilcache.Expiring {
	o.goneOnce.Do(func() { o.gone = utilcache.NewExpiring() })
	return o.gone
}
