// Package podcache is the grouper's cache of pods: an informer on the pods of gangmap's
// scheduler (a field selector on spec.schedulerName, as KAI's pod-grouper caches them) that stores
// each pod as a podview.Record, the few fields the pod controller's decisions read, instead of a
// typed Pod. At 100,000 cached pods this is what keeps the grouper within a few hundred MiB.
//
// Readers get copies (Get, Keys, InNamespace): the stored records are shared with the informer
// and never changed in place.
package podcache

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gangmap/gangmap/podgrouper/podview"
)

// Cache holds the podview.Record of every pod of one scheduler. Start it with the manager (it runs
// on every replica, leader or not, like controller-runtime's caches).
type Cache struct {
	schedulerName string
	informer      toolscache.SharedIndexInformer
}

var _ manager.Runnable = (*Cache)(nil)
var _ manager.LeaderElectionRunnable = (*Cache)(nil)

// New returns a Cache of the pods whose spec.schedulerName is schedulerName, listed and watched
// through cfg (full pods on the wire, as the API server serves no projection of a pod; each is
// made a Record as it arrives, before it is stored).
func New(cfg *rest.Config, schedulerName string) (*Cache, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("pod cache: %w", err)
	}
	sel := fields.OneTermEqualSelector("spec.schedulerName", schedulerName).String()
	lw := toolscache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "pods", metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.FieldSelector = sel })
	return NewWithListWatch(lw, schedulerName)
}

// NewWithListWatch is New on a given list and watch of pods (already limited to schedulerName's).
func NewWithListWatch(lw toolscache.ListerWatcher, schedulerName string) (*Cache, error) {
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	if err := inf.SetTransform(podview.TransformRecord); err != nil {
		return nil, fmt.Errorf("pod cache: %w", err)
	}
	return &Cache{schedulerName: schedulerName, informer: inf}, nil
}

// Start runs the informer until ctx is done.
func (c *Cache) Start(ctx context.Context) error {
	c.informer.RunWithContext(ctx)
	return nil
}

// NeedLeaderElection is false: every replica keeps its cache warm (the webhook does not read it,
// but a replica elected later starts with its pods listed).
func (c *Cache) NeedLeaderElection() bool { return false }

// Source is the controller's watch of the cache: a reconcile.Request per added, changed or deleted
// pod. The controller waits until the cache has listed every pod before its first reconcile.
func (c *Cache) Source() source.SyncingSource { return &podSource{informer: c.informer} }

// podSource is Cache.Source: controller-runtime's source.Informer needs client.Objects, which a
// podview.Record is not.
type podSource struct {
	informer toolscache.SharedIndexInformer
}

var _ source.SyncingSource = (*podSource)(nil)

// Start implements source.Source.
func (s *podSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	enqueue := func(obj any) {
		key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return
		}
		if ns, name, err := toolscache.SplitMetaNamespaceKey(key); err == nil {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
		}
	}
	_, err := s.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	return err
}

// WaitForSync implements source.SyncingSource.
func (s *podSource) WaitForSync(ctx context.Context) error {
	if !toolscache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
		return fmt.Errorf("pod cache: not synced: %w", ctx.Err())
	}
	return nil
}

// SchedulerName is the scheduler whose pods the cache holds.
func (c *Cache) SchedulerName() string { return c.schedulerName }

// Get returns the cached pod with key as a new Pod (podview.Record.Pod: metadata, scheduler
// name, priority class and phase), or false when the cache does not hold it.
func (c *Cache) Get(key types.NamespacedName) (*corev1.Pod, bool) {
	obj, ok, err := c.informer.GetIndexer().GetByKey(storeKey(key))
	if err != nil || !ok {
		return nil, false
	}
	r, ok := obj.(*podview.Record)
	if !ok {
		return nil, false
	}
	return r.Pod(c.schedulerName), true
}

// Keys returns the key of every cached pod.
func (c *Cache) Keys() []types.NamespacedName {
	keys := c.informer.GetIndexer().ListKeys()
	out := make([]types.NamespacedName, 0, len(keys))
	for _, k := range keys {
		ns, name, err := toolscache.SplitMetaNamespaceKey(k)
		if err == nil {
			out = append(out, types.NamespacedName{Namespace: ns, Name: name})
		}
	}
	return out
}

// AnnotationValues returns, for every cached pod of namespace ns (all namespaces when ns is "")
// that has annotation key, its namespace and the annotation's value.
func (c *Cache) AnnotationValues(ns, key string) []types.NamespacedName {
	var objs []any
	if ns == "" {
		objs = c.informer.GetIndexer().List()
	} else {
		var err error
		if objs, err = c.informer.GetIndexer().ByIndex(toolscache.NamespaceIndex, ns); err != nil {
			return nil
		}
	}
	var out []types.NamespacedName
	for _, o := range objs {
		if r, ok := o.(*podview.Record); ok {
			if v, has := r.Annotation(key); has {
				out = append(out, types.NamespacedName{Namespace: r.Namespace, Name: v})
			}
		}
	}
	return out
}

func storeKey(key types.NamespacedName) string {
	if key.Namespace == "" {
		return key.Name
	}
	return key.Namespace + "/" + key.Name
}
