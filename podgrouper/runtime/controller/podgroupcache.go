package controller

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
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
