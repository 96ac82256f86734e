package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/gangmap/gangmap/podgrouper/core/decide"
)

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
