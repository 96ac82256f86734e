package strays

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/gangmap/gangmap/podgrouper/apis/scheduling/v2alpha2"
)

// OwnerIndex holds the cached PodGroups by the UID of their only owner reference (a PodGroup
// with none or several is left out: never a stray, see isCandidate), for Collector.Owned and
// podgroup.ActualNames (a podgroup.OwnerLister). It is
// fed by the PodGroup informer's events (IndexOwnerUID) and keeps the informer's own objects,
// read-only, so a look costs the workload's own PodGroups, not its namespace's.
//
// It replaces a client-go index on the informer (sets.String per owner UID: the index's map
// entry, a set header and a set group, about 240 B per cached PodGroup), and before that
// controller-runtime's field index (two new keys per PodGroup, "namespace/uid" and
// "__all_namespaces/uid", a set each). Here a PodGroup costs one map entry (its owner UID
// string, which the PodGroup holds, and a pointer) while its workload has one PodGroup, as
// nearly every workload has; the few with several keep a slice in a second map
// (BenchmarkOwnerIndexBytes). The index follows the informer's handler, so it may lag the
// informer's store by the events not handled yet: the collector's delete carries the PodGroup's
// UID and resourceVersion as preconditions, and a stray missed now is found at the next look.
// Safe for concurrent use.
type OwnerIndex struct {
	mu   sync.RWMutex
	one  map[types.UID]*v2alpha2.PodGroup
	more map[types.UID][]*v2alpha2.PodGroup
	// synced, when set, says whether the handler has seen the informer's initial list.
	synced func() bool
}

// ErrOwnerIndexNotSynced is Owned's error before the index has seen the informer's initial list.
var ErrOwnerIndexNotSynced = errors.New("the PodGroup owner index has not seen every cached PodGroup yet")

var _ toolscache.ResourceEventHandler = (*OwnerIndex)(nil)

// NewOwnerIndex returns an empty OwnerIndex, synced (a test feeds it with OnAdd).
func NewOwnerIndex() *OwnerIndex {
	return &OwnerIndex{one: map[types.UID]*v2alpha2.PodGroup{}, more: map[types.UID][]*v2alpha2.PodGroup{}}
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

// Owned returns the indexed PodGroups whose only owner has UID uid, in every namespace (the
// collector keeps the owner's own): the informer's objects, read-only. Errors:
// ErrOwnerIndexNotSynced.
func (x *OwnerIndex) Owned(uid types.UID) ([]*v2alpha2.PodGroup, error) {
	if x.synced != nil && !x.synced() {
		return nil, ErrOwnerIndexNotSynced
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if pg, ok := x.one[uid]; ok {
		return []*v2alpha2.PodGroup{pg}, nil
	}
	return append([]*v2alpha2.PodGroup(nil), x.more[uid]...), nil
}

// Len is the number of indexed PodGroups.
func (x *OwnerIndex) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := len(x.one)
	for _, l := range x.more {
		n += len(l)
	}
	return n
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

// indexed returns obj as a PodGroup and the UID of its only owner reference; nil when obj is not
// a PodGroup or has none or several owner references.
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

// add indexes pg under uid, replacing the object of the same namespace and name.
func (x *OwnerIndex) add(uid types.UID, pg *v2alpha2.PodGroup) {
	if cur, ok := x.one[uid]; ok {
		if sameKey(cur, pg) {
			x.one[uid] = pg
			return
		}
		delete(x.one, uid)
		x.more[uid] = []*v2alpha2.PodGroup{cur, pg}
		return
	}
	l, ok := x.more[uid]
	if !ok {
		x.one[uid] = pg
		return
	}
	for i, cur := range l {
		if sameKey(cur, pg) {
			l[i] = pg
			return
		}
	}
	x.more[uid] = append(l, pg)
}

// remove drops the object of pg's namespace and name from under uid.
func (x *OwnerIndex) remove(uid types.UID, pg *v2alpha2.PodGroup) {
	if cur, ok := x.one[uid]; ok {
		if sameKey(cur, pg) {
			delete(x.one, uid)
		}
		return
	}
	l := x.more[uid]
	for i, cur := range l {
		if !sameKey(cur, pg) {
			continue
		}
		l = append(l[:i:i], l[i+1:]...)
		switch len(l) {
		case 0:
			delete(x.more, uid)
		case 1:
			delete(x.more, uid)
			x.one[uid] = l[0]
		default:
			x.more[uid] = l
		}
		return
	}
}
