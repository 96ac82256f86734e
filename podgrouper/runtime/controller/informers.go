package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// PodGroupCacheHandler adapts seen (podgroup.Applier.CacheEvents) to an informer's event
// handler: every PodGroup the informer adds, updates or deletes is passed to seen, a deletion
// whose last state the informer missed (toolscache.DeletedFinalStateUnknown) with the last state
// it knew; objects of other types are ignored.
func PodGroupCacheHandler(seen func(*v2alpha2.PodGroup)) toolscache.ResourceEventHandler {
	observe := func(obj any) {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if pg, ok := obj.(*v2alpha2.PodGroup); ok {
			seen(pg)
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { observe(obj) },
		UpdateFunc: func(_, obj any) { observe(obj) },
		DeleteFunc: observe,
	}
}

// WatchPodGroupCache tells a, through the PodGroup informer of c (the cache a.Client reads
// from), when the cache shows a PodGroup it created, so the pods of a workload reconciled
// meanwhile send no second POST (podgroup.Applier.CacheEvents). Errors: the informer cannot be
// had, or the handler cannot be added.
func WatchPodGroupCache(ctx context.Context, c cache.Informers, a *podgroup.Applier) error {
	informer, err := c.GetInformer(ctx, &v2alpha2.PodGroup{})
	if err != nil {
		return fmt.Errorf("the PodGroup informer: %w", err)
	}
	if _, err := informer.AddEventHandler(PodGroupCacheHandler(a.CacheEvents())); err != nil {
		return fmt.Errorf("watching PodGroups for the Applier: %w", err)
	}
	return nil
}

// InformerOwners is the decide.SharedOwnerReader of a controller-runtime cache whose client reads
// unstructured objects through the cache (client.CacheOptions.Unstructured): it looks the owner
// up in the store of the kind's unstructured informer. The stored object is what the cache's
// transform kept (podview.Interner: its equal subtrees shared with other workloads) and what the cached client would return a deep
// copy of; client-go replaces stored objects on updates and never changes one in place, so a
// reader that does not write sees one consistent version.
type InformerOwners struct {
	Cache cache.Cache
}

var _ decide.SharedOwnerReader = (*InformerOwners)(nil)

// GetShared implements decide.SharedOwnerReader. It never waits for an informer to sync.
func (s *InformerOwners) GetShared(ctx context.Context, gvk schema.GroupVersionKind, key types.NamespacedName) (*unstructured.Unstructured, bool) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	inf, err := s.Cache.GetInformer(ctx, u, cache.BlockUntilSynced(false))
	if err != nil || !inf.HasSynced() {
		return nil, false
	}
	indexed, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, false
	}
	obj, exists, err := indexed.GetIndexer().GetByKey(toolscache.ObjectName(key).String())
	if err != nil || !exists {
		return nil, false
	}
	owner, ok := obj.(*unstructured.Unstructured)
	if !ok || owner.GroupVersionKind() != gvk {
		return nil, false
	}
	return owner, true
}
