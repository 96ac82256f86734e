// Package podcache is the grouper's cache of pods: an informer on the pods of gangmap's
// scheduler (a field selector on spec.schedulerName, as KAI's pod-grouper caches them) that stores
// each pod as a podview.Record, the few fields the pod controller's decisions read, instead of a
// typed Pod. At 100,000 cached pods this is what keeps the grouper within a few hundred MiB.
//
// The informer is client-go's SharedIndexInformer (no resync) with the namespace index and
// its transform making each pod a podview.Record; lists are read in pages, each made Records before
// the next is read (pagedList). Events become reconcile.Requests made of the stored Record's own
// strings, so the work queue's items and the pod controller's per-pod bookkeeping (podbook)
// share them; a pod's changed Record takes the key strings of the one it replaces (transform).
//
// Readers get copies (Get, Keys, AnnotationValues): the stored records are shared with the
// informer and never changed in place.
package podcache

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gangmap/gangmap/podgrouper/runtime/podview"
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
// made a Record as it arrives, before it is stored). Pods come as protobuf, as kube-scheduler and
// kube-controller-manager read them (JSON when cfg asks for a content type): decoding them was
// the grouper's largest CPU cost, 29% of its CPU in a 4,000-pod run without the webhook (each pod
// arrives twice, created and then labelled), and protobuf decodes a pod in a fraction of JSON's
// time.
func New(cfg *rest.Config, schedulerName string) (*Cache, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.ContentType == "" {
		cfg.ContentType = runtime.ContentTypeProtobuf
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
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
	c := &Cache{schedulerName: schedulerName}
	c.informer = toolscache.NewSharedIndexInformerWithOptions(
		pagedList(toolscache.ToListerWatcherWithContext(lw), c.transform, listPageSize),
		&corev1.Pod{}, toolscache.SharedIndexInformerOptions{
			Indexers:          toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc},
			ObjectDescription: "pods of " + schedulerName,
		})
	if err := c.informer.SetTransform(c.transform); err != nil {
		return nil, fmt.Errorf("pod cache: %w", err)
	}
	return c, nil
}

// transform is the informer's transform: a *corev1.Pod becomes its Record (podview.ToRecord),
// which takes the namespace and name strings of the Record it will replace (equal: the same key),
// so that the pod's key strings, which the work queue and the pod controller's bookkeeping keep,
// exist once however often it changes. Anything else (a Record, a deletion tombstone) passes
// unchanged, so it is idempotent, as client-go asks of a transform.
func (c *Cache) transform(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	r := podview.ToRecord(p)
	if old := c.get(types.NamespacedName{Namespace: r.Namespace, Name: r.Name}); old != nil {
		r.Namespace, r.Name = old.Namespace, old.Name
	}
	return r, nil
}

// Start runs the informer until ctx is done.
func (c *Cache) Start(ctx context.Context) error {
	c.informer.RunWithContext(ctx)
	return nil
}

// HasSynced reports whether the cache has stored every pod of its first list.
func (c *Cache) HasSynced() bool { return c.informer.HasSynced() }

// NeedLeaderElection is false: every replica keeps its cache warm (the webhook does not read it,
// but a replica elected later starts with its pods listed).
func (c *Cache) NeedLeaderElection() bool { return false }

// Source is the controller's watch of the cache: a reconcile.Request per cached pod when it
// starts, then per added, changed or deleted pod (a deleted pod's of its last Record, or of a
// tombstone's key). The controller waits until the cache has listed every pod before its first
// reconcile.
func (c *Cache) Source() source.SyncingSource { return &podSource{cache: c} }

// podSource is Cache.Source: controller-runtime's source.Informer needs client.Objects, which a
// podview.Record is not.
type podSource struct {
	cache *Cache
}

var _ source.SyncingSource = (*podSource)(nil)

// Start implements source.Source: a handler on the informer until ctx is done.
func (s *podSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	add := func(obj any) {
		if req, ok := requestOf(obj); ok {
			q.Add(req)
		}
	}
	reg, err := s.cache.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }, DeleteFunc: add,
	})
	if err != nil {
		return fmt.Errorf("pod cache: %w", err)
	}
	context.AfterFunc(ctx, func() { _ = s.cache.informer.RemoveEventHandler(reg) })
	return nil
}

// requestOf is the request of an event's object: of its Record's strings (a deleted pod's last
// Record's, else its tombstone's key).
func requestOf(obj any) (reconcile.Request, bool) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok && t.Obj != nil {
		obj = t.Obj
	}
	key, err := toolscache.DeletionHandlingObjectToName(obj)
	return reconcile.Request{NamespacedName: types.NamespacedName(key)}, err == nil
}

// WaitForSync implements source.SyncingSource.
func (s *podSource) WaitForSync(ctx context.Context) error {
	if !toolscache.WaitForCacheSync(ctx.Done(), s.cache.HasSynced) {
		return fmt.Errorf("pod cache: not synced: %w", ctx.Err())
	}
	return nil
}

// Get returns the cached pod with key as a new Pod (podview.Record.Pod: metadata, scheduler
// name, priority class and phase), or false when the cache does not hold it.
func (c *Cache) Get(key types.NamespacedName) (*corev1.Pod, bool) {
	r := c.get(key)
	if r == nil {
		return nil, false
	}
	return r.Pod(c.schedulerName), true
}

// Annotation returns the cached pod's annotation key, and whether the cache holds the pod and
// the pod has the annotation (no Pod is built).
func (c *Cache) Annotation(pod types.NamespacedName, key string) (string, bool) {
	r := c.get(pod)
	if r == nil {
		return "", false
	}
	return r.Annotation(key)
}

// Keys returns the key of every cached pod (sharing the cached strings).
func (c *Cache) Keys() []types.NamespacedName {
	var out []types.NamespacedName
	c.each("", func(r *podview.Record) { out = append(out, types.NamespacedName{Namespace: r.Namespace, Name: r.Name}) })
	return out
}

// AnnotationValues returns, for every cached pod of namespace ns (all namespaces when ns is "")
// that has annotation key, its namespace and the annotation's value.
func (c *Cache) AnnotationValues(ns, key string) []types.NamespacedName {
	var out []types.NamespacedName
	c.each(ns, func(r *podview.Record) {
		if v, has := r.Annotation(key); has {
			out = append(out, types.NamespacedName{Namespace: r.Namespace, Name: v})
		}
	})
	return out
}

// get returns the stored Record of the pod with key, nil when there is none.
func (c *Cache) get(key types.NamespacedName) *podview.Record {
	obj, ok, _ := c.informer.GetIndexer().GetByKey(toolscache.NewObjectName(key.Namespace, key.Name).String())
	if !ok {
		return nil
	}
	return obj.(*podview.Record)
}

// each calls f with every stored Record of namespace ns (every namespace when ns is "").
func (c *Cache) each(ns string, f func(*podview.Record)) {
	var objs []any
	if ns == "" {
		objs = c.informer.GetIndexer().List()
	} else {
		objs, _ = c.informer.GetIndexer().ByIndex(toolscache.NamespaceIndex, ns)
	}
	for _, o := range objs {
		f(o.(*podview.Record))
	}
}
