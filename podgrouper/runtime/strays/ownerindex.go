package strays

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// OwnerIndex holds the cached PodGroups by the namespace and UID of their only owner reference
// (a PodGroup with none or several is left out: never a stray, see isCandidate), for
// Collector.Owned and podgroup.ActualNames (a podgroup.OwnerLister). It is fed by the PodGroup
// informer's events (IndexOwnerUID) and keeps the informer's own objects, read-only, so a look
// costs the workload's own PodGroups, not its namespace's.
//
// An event costs O(1) whatever other namespaces hold, and a look the owner's own namespace's
// PodGroups, so PodGroups one namespace forges with another's owner UID cost it nothing
// (issue 28, TestOwnerIndexCostStaysInTheNamespace): an owner UID with several PodGroups keeps
// them by namespace, then by name. A namespaced owner's PodGroups are in its own namespace (an
// owner reference names an object of the dependent's namespace, or a cluster-scoped one), so
// Owned(namespace, uid) reads only that namespace's; a cluster-scoped owner's (Owned("", uid))
// are those of every namespace.
//
// A PodGroup costs one map entry (its owner UID string, which the PodGroup holds, and a
// pointer) while its workload has one PodGroup, as nearly every workload has
// (BenchmarkOwnerIndexBytes). The index follows the
// informer's handler, so it may lag the informer's store by the events not handled yet: the
// collector's delete carries the PodGroup's UID and resourceVersion as preconditions, and a
// stray missed now is found at the next look. Safe for concurrent use.
type OwnerIndex struct {
	mu  sync.RWMutex
	one map[types.UID]*v2alpha2.PodGroup
	// more holds the PodGroups of an owner UID with several, by namespace and then name.
	more map[types.UID]map[string]map[string]*v2alpha2.PodGroup
	// synced, when set, says whether the handler has seen the informer's initial list.
	synced func() bool
}

// ErrOwnerIndexNotSynced is Owned's error before the index has seen the informer's initial list.
var ErrOwnerIndexNotSynced = errors.New("the PodGroup owner index has not seen every cached PodGroup yet")

var _ toolscache.ResourceEventHandler = (*OwnerIndex)(nil)

// NewOwnerIndex returns an empty OwnerIndex, synced (a test feeds it with OnAdd).
func NewOwnerIndex() *OwnerIndex {
	return &OwnerIndex{one: map[types.UID]*v2alpha2.PodGroup{}, more: map[types.UID]map[string]map[string]*v2alpha2.PodGroup{}}
}

// IndexOwnerUID registers an OwnerIndex on the PodGroup informer of c (the manager's cache,
// before or after it starts) and returns it, for Collector.Owned (its Owned method) and the
// writers keyed by PodGroup (podgroup.ActualNames). Errors: the informer's.
func IndexOwnerUID(ctx context.Context, c ctrlcache.Cache) (*OwnerIndex, error) {
	inf, err := c.GetInformer(ctx, &v2alpha2.PodGroup{})
	if err != nil {
		return nil, fmt.Errorf("the PodGroup informer: %w", err)
	}
	idx := NewOwnerIndex()
	reg, err := inf.AddEventHandler(idx)
	if err != nil {
		return nil, fmt.Errorf("indexing PodGroups by owner UID: %w", err)
	}
	idx.synced = reg.HasSynced
	return idx, nil
}

// Owned returns the indexed PodGroups of namespace whose only owner has UID uid: the
// informer's objects, read-only. namespace is the owner's: a namespaced owner's PodGroups are
// in its own namespace; "" is a cluster-scoped owner, whose PodGroups may be in any namespace.
// Errors: ErrOwnerIndexNotSynced.
func (x *OwnerIndex) Owned(namespace string, uid types.UID) ([]*v2alpha2.PodGroup, error) {
	if x.synced != nil && !x.synced() {
		return nil, ErrOwnerIndexNotSynced
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if pg, ok := x.one[uid]; ok {
		if namespace == "" || pg.Namespace == namespace {
			return []*v2alpha2.PodGroup{pg}, nil
		}
		return nil, nil
	}
	var out []*v2alpha2.PodGroup
	for ns, byName := range x.more[uid] {
		if namespace == "" || ns == namespace {
			out = slices.AppendSeq(out, maps.Values(byName))
		}
	}
	return out, nil
}

// OnAdd implements toolscache.ResourceEventHandler.
func (x *OwnerIndex) OnAdd(obj any, _ bool) {
	if pg, uid := indexed(obj); pg != nil {
		x.mu.Lock()
		defer x.mu.Unlock()
		x.add(uid, pg)
	}
}

// OnUpdate implements toolscache.ResourceEventHandler: the new object replaces the old one, under
// its new owner UID.
func (x *OwnerIndex) OnUpdate(oldObj, newObj any) {
	oldPG, oldUID := indexed(oldObj)
	newPG, newUID := indexed(newObj)
	x.mu.Lock()
	defer x.mu.Unlock()
	if oldPG != nil {
		x.remove(oldUID, oldPG)
	}
	if newPG != nil {
		x.add(newUID, newPG)
	}
}

// OnDelete implements toolscache.ResourceEventHandler (a tombstone's last known object too).
func (x *OwnerIndex) OnDelete(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if pg, uid := indexed(obj); pg != nil {
		x.mu.Lock()
		defer x.mu.Unlock()
		x.remove(uid, pg)
	}
}

// indexed returns obj as a PodGroup and the UID of its only owner reference; nil when obj is
// not a PodGroup or has none or several owner references.
func indexed(obj any) (*v2alpha2.PodGroup, types.UID) {
	pg, ok := obj.(*v2alpha2.PodGroup)
	if !ok || pg == nil || len(pg.OwnerReferences) != 1 || pg.OwnerReferences[0].UID == "" {
		return nil, ""
	}
	return pg, pg.OwnerReferences[0].UID
}

func sameKey(a, b *v2alpha2.PodGroup) bool {
	return a.Name == b.Name && a.Namespace == b.Namespace
}

// add indexes pg under uid, replacing the object of the same namespace and name: O(1).
func (x *OwnerIndex) add(uid types.UID, pg *v2alpha2.PodGroup) {
	byNS, several := x.more[uid]
	if !several {
		cur, ok := x.one[uid]
		if !ok || sameKey(cur, pg) {
			x.one[uid] = pg
			return
		}
		delete(x.one, uid)
		byNS = map[string]map[string]*v2alpha2.PodGroup{}
		x.more[uid] = byNS
		put(byNS, cur)
	}
	put(byNS, pg)
}

// put stores pg in byNS under its namespace and name.
func put(byNS map[string]map[string]*v2alpha2.PodGroup, pg *v2alpha2.PodGroup) {
	byName, ok := byNS[pg.Namespace]
	if !ok {
		byName = map[string]*v2alpha2.PodGroup{}
		byNS[pg.Namespace] = byName
	}
	byName[pg.Name] = pg
}

// remove drops the object of pg's namespace and name from under uid: O(1).
func (x *OwnerIndex) remove(uid types.UID, pg *v2alpha2.PodGroup) {
	if cur, ok := x.one[uid]; ok {
		if sameKey(cur, pg) {
			delete(x.one, uid)
		}
		return
	}
	byNS := x.more[uid]
	byName, ok := byNS[pg.Namespace]
	if !ok {
		return
	}
	delete(byName, pg.Name)
	if len(byName) == 0 {
		delete(byNS, pg.Namespace)
	}
	switch {
	case len(byNS) == 0:
		delete(x.more, uid)
	case len(byNS) == 1:
		for _, last := range byNS {
			if len(last) == 1 {
				delete(x.more, uid)
				for _, only := range last {
					x.one[uid] = only
				}
			}
		}
	}
}
