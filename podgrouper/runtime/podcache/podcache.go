// Package podcache is the grouper's cache of pods: an informer on the pods of gangmap's
// scheduler (a field selector on spec.schedulerName, as KAI's pod-grouper caches them) that stores
// each pod as a podview.Record, the few fields the pod controller's decisions read, instead of a
// typed Pod. At 100,000 cached pods this is what keeps the grouper within a few hundred MiB.
//
// The informer is client-go's low-level one (toolscache.New: a reflector feeding a RealFIFO, or a
// DeltaFIFO when the InOrderInformers feature is off, as a SharedIndexInformer chooses) over
// client-go's store with the namespace index; lists are read in pages, each made Records before
// the next is read (pagedList). Events become
// reconcile.Requests made of the stored Record's own strings, so the work queue's items and the
// pod controller's per-pod bookkeeping (podbook) share them; a pod's changed Record takes the
// key strings of the one it replaces (shareStrings). No resync.
//
// Readers get copies (Get, Keys, AnnotationValues): the stored records are shared with the
// informer and never changed in place.
package podcache

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientfeatures "k8s.io/client-go/features"
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
	store         toolscache.Indexer
	informer      toolscache.Controller

	// dispatch orders events and handlers: an event is stored and sent to every handler under it,
	// and a handler added later first gets every stored pod under it, so no handler misses a pod.
	dispatch sync.Mutex
	handlers map[int]func(reconcile.Request)
	nextID   int
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
	store := toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	c := &Cache{schedulerName: schedulerName, store: store, handlers: map[int]func(reconcile.Request){}}
	c.informer = toolscache.New(&toolscache.Config{
		Queue:             newQueue(c.store, c.transform),
		ListerWatcher:     &pagedList{inner: toolscache.ToListerWatcherWithContext(lw), toRecord: c.transform, pageSize: listPageSize},
		ObjectType:        &corev1.Pod{},
		ObjectDescription: "pods of " + schedulerName,
		Process:           c.process,
	})
	return c, nil
}

// newQueue is the FIFO a SharedIndexInformer would use (client-go's newQueueFIFO): a RealFIFO
// under the InOrderInformers feature (on by default), else a DeltaFIFO that reports relists as
// Replaced; known objects are the store's, so a relist deletes the pods it no longer lists.
func newQueue(known toolscache.KeyListerGetter, transform toolscache.TransformFunc) toolscache.Queue {
	if clientfeatures.FeatureGates().Enabled(clientfeatures.InOrderInformers) {
		return toolscache.NewRealFIFO(toolscache.MetaNamespaceKeyFunc, known, transform)
	}
	return toolscache.NewDeltaFIFOWithOptions(toolscache.DeltaFIFOOptions{KnownObjects: known, EmitDeltaTypeReplaced: true, Transformer: transform})
}

// transform is the FIFO's transform: a pod becomes its Record (podview.TransformRecord), which
// takes the namespace and name strings of the Record it will replace (shareStrings).
func (c *Cache) transform(obj any) (any, error) {
	out, err := podview.TransformRecord(obj)
	if err != nil {
		return nil, err
	}
	if r, ok := out.(*podview.Record); ok && r != obj {
		if old := c.get(types.NamespacedName{Namespace: r.Namespace, Name: r.Name}); old != nil {
			shareStrings(r, old)
		}
	}
	return out, nil
}

// shareStrings makes the new Record r of a pod use the namespace and name strings of old, its
// previous Record (equal: the same key): the work queue and the pod controller's bookkeeping keep
// the first Record's strings as the pod's key, so the pod's key strings exist once however often
// it changes. r is new (not yet stored or seen by anyone).
func shareStrings(r, old *podview.Record) {
	r.Namespace, r.Name = old.Namespace, old.Name
}

// process is the informer's ProcessFunc (client-go's processDeltas, with one handler for adds,
// updates and deletes): each delta is stored and sent to the handlers as a request.
func (c *Cache) process(obj any, _ bool) error {
	deltas, ok := obj.(toolscache.Deltas)
	if !ok {
		return fmt.Errorf("pod cache: %T given to process is not Deltas", obj)
	}
	c.dispatch.Lock()
	defer c.dispatch.Unlock()
	for _, d := range deltas {
		req, err := c.apply(d)
		if err != nil {
			return err
		}
		for _, h := range c.handlers {
			h(req)
		}
	}
	return nil
}

// apply stores one delta and returns the request it makes: of the stored Record's strings, or of
// a deleted pod's last Record (the store's, else the tombstone's key).
func (c *Cache) apply(d toolscache.Delta) (reconcile.Request, error) {
	if d.Type == toolscache.Deleted {
		key, err := nameOf(d.Object)
		if err != nil {
			return reconcile.Request{}, err
		}
		if r := c.get(key); r != nil {
			key = types.NamespacedName{Namespace: r.Namespace, Name: r.Name}
			if err := c.store.Delete(r); err != nil {
				return reconcile.Request{}, err
			}
		}
		return reconcile.Request{NamespacedName: key}, nil
	}
	r, err := recordOf(d.Object)
	if err != nil {
		return reconcile.Request{}, err
	}
	if err := c.store.Add(r); err != nil {
		return reconcile.Request{}, err
	}
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.Namespace, Name: r.Name}}, nil
}

// addHandler sends h a request per stored pod, then one per event until ctx is done.
func (c *Cache) addHandler(ctx context.Context, h func(reconcile.Request)) {
	c.dispatch.Lock()
	defer c.dispatch.Unlock()
	c.each("", func(r *podview.Record) {
		h(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.Namespace, Name: r.Name}})
	})
	id := c.nextID
	c.nextID++
	c.handlers[id] = h
	context.AfterFunc(ctx, func() {
		c.dispatch.Lock()
		defer c.dispatch.Unlock()
		delete(c.handlers, id)
	})
}

// Start runs the informer until ctx is done.
func (c *Cache) Start(ctx context.Context) error {
	c.informer.RunWithContext(ctx)
	return nil
}

// HasSynced reports whether the cache has stored every pod of its first list (and sent each
// to the handlers added by then).
func (c *Cache) HasSynced() bool { return c.informer.HasSynced() }

// NeedLeaderElection is false: every replica keeps its cache warm (the webhook does not read it,
// but a replica elected later starts with its pods listed).
func (c *Cache) NeedLeaderElection() bool { return false }

// Source is the controller's watch of the cache: a reconcile.Request per cached pod when it
// starts, then per added, changed or deleted pod. The controller waits until the cache has
// listed every pod before its first reconcile.
func (c *Cache) Source() source.SyncingSource { return &podSource{cache: c} }

// podSource is Cache.Source: controller-runtime's source.Informer needs client.Objects, which a
// podview.Record is not.
type podSource struct {
	cache *Cache
}

var _ source.SyncingSource = (*podSource)(nil)

// Start implements source.Source.
func (s *podSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.cache.addHandler(ctx, q.Add)
	return nil
}

// WaitForSync implements source.SyncingSource.
func (s *podSource) WaitForSync(ctx context.Context) error {
	if !toolscache.WaitForCacheSync(ctx.Done(), s.cache.HasSynced) {
		return fmt.Errorf("pod cache: not synced: %w", ctx.Err())
	}
	return nil
}

// SchedulerName is the scheduler whose pods the cache holds.
func (c *Cache) SchedulerName() string { return c.schedulerName }

// Get returns the cached pod with key as a new Pod (podview.Record.Pod: metadata, scheduler
// name, priority class and phase), or false when the cache does not hold it.
func (c *Cache) Get(key types.NamespacedName) (*corev1.Pod, bool) {
	r := c.get(key)
	if r == nil {
		return nil, false
	}
	return r.Pod(c.schedulerName), true
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
	obj, ok, _ := c.store.GetByKey(toolscache.NewObjectName(key.Namespace, key.Name).String())
	if !ok {
		return nil
	}
	return obj.(*podview.Record)
}

// each calls f with every stored Record of namespace ns (every namespace when ns is "").
func (c *Cache) each(ns string, f func(*podview.Record)) {
	var objs []any
	if ns == "" {
		objs = c.store.List()
	} else {
		objs, _ = c.store.ByIndex(toolscache.NamespaceIndex, ns)
	}
	for _, o := range objs {
		f(o.(*podview.Record))
	}
}

// recordOf is obj as a Record, or an error naming what obj is.
func recordOf(obj any) (*podview.Record, error) {
	r, ok := obj.(*podview.Record)
	if !ok || r == nil {
		return nil, fmt.Errorf("pod cache: a %T is not a pod's record", obj)
	}
	return r, nil
}

// nameOf is the namespace and name of a Record or of a deletion tombstone (its key, "ns/name").
func nameOf(obj any) (types.NamespacedName, error) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		ns, name, err := toolscache.SplitMetaNamespaceKey(t.Key)
		if err != nil {
			return types.NamespacedName{}, fmt.Errorf("pod cache: tombstone: %w", err)
		}
		return types.NamespacedName{Namespace: ns, Name: name}, nil
	}
	r, err := recordOf(obj)
	if err != nil {
		return types.NamespacedName{}, err
	}
	return types.NamespacedName{Namespace: r.Namespace, Name: r.Name}, nil
}
