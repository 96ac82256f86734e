package controller

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// informerCache stands in for the manager's cache: GetInformer gives the informer of a kind (an
// unstarted client-go informer whose store the test fills), synced or not.
type informerCache struct {
	cache.Cache
	informers map[schema.GroupVersionKind]*storeInformer
}

type storeInformer struct {
	toolscache.SharedIndexInformer
	synced bool
}

func (i *storeInformer) HasSynced() bool { return i.synced }

func (c *informerCache) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	inf, ok := c.informers[obj.GetObjectKind().GroupVersionKind()]
	if !ok {
		return nil, &cache.ErrResourceNotCached{}
	}
	return inf, nil
}

func newStoreInformer(synced bool, objs ...*unstructured.Unstructured) *storeInformer {
	inf := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &unstructured.Unstructured{}, 0, toolscache.Indexers{})
	for _, o := range objs {
		_ = inf.GetIndexer().Add(o)
	}
	return &storeInformer{SharedIndexInformer: inf, synced: synced}
}

func owner(gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// TestInformerOwnersGivesTheStoredObject: GetShared returns the informer's own object (no copy)
// for a namespaced or cluster-scoped key, and declines (the decider then reads a copy) when the
// kind has no informer, the informer has not synced, the object is not stored, or the stored
// object is of another version.
func TestInformerOwnersGivesTheStoredObject(t *testing.T) {
	jobSet := schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
	cluster := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "ClusterJob"}
	unsynced := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Late"}
	older := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Versioned"}
	js, cj := owner(jobSet, "ns", "train"), owner(cluster, "", "global")
	s := &InformerOwners{Cache: &informerCache{informers: map[schema.GroupVersionKind]*storeInformer{
		jobSet:   newStoreInformer(true, js),
		cluster:  newStoreInformer(true, cj),
		unsynced: newStoreInformer(false, owner(unsynced, "ns", "late")),
		older:    newStoreInformer(true, owner(older.GroupKind().WithVersion("v0"), "ns", "old")),
	}}}
	ctx := context.Background()
	if got, ok := s.GetShared(ctx, jobSet, types.NamespacedName{Namespace: "ns", Name: "train"}); !ok || got != js {
		t.Errorf("namespaced: got %p, %v; want the stored object %p", got, ok, js)
	}
	if got, ok := s.GetShared(ctx, cluster, types.NamespacedName{Name: "global"}); !ok || got != cj {
		t.Errorf("cluster scoped: got %p, %v; want the stored object %p", got, ok, cj)
	}
	for name, tc := range map[string]struct {
		gvk schema.GroupVersionKind
		key types.NamespacedName
	}{
		"no informer":     {schema.GroupVersionKind{Group: "x", Version: "v1", Kind: "None"}, types.NamespacedName{Namespace: "ns", Name: "a"}},
		"not synced":      {unsynced, types.NamespacedName{Namespace: "ns", Name: "late"}},
		"not stored":      {jobSet, types.NamespacedName{Namespace: "ns", Name: "other"}},
		"other namespace": {jobSet, types.NamespacedName{Namespace: "other", Name: "train"}},
		"other version":   {older, types.NamespacedName{Namespace: "ns", Name: "old"}},
	} {
		if got, ok := s.GetShared(ctx, tc.gvk, tc.key); ok {
			t.Errorf("%s: got %v; want no shared object", name, got)
		}
	}
}
