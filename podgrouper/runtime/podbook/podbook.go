// Package podbook is the grouper's one record per pod, keyed by the pod's namespace and name. Three
// parts of the grouper keep something per pod: the pod controller (the top owner it grouped the
// pod under, so that a workload's change regroups its pods, and the UID of the pod it last
// repaired, so that a stale reconcile does not report a repair twice), the findings (the pod's
// observation against its workload's plan) and the workload metrics (the pod's role and phase).
// The workloads' aggregates stay with their owners (findings' counters, the metrics' pods per
// role and phase).
//
// The Book is ordinary Go maps: one of entries by pod key, one of grouped pods per owner (against
// the packed store it replaced: bench/README.md, "Session 9").
//
// Each part owns its own fields of an entry and sees only those; an entry goes when every part
// has let go of the pod. Strings are the callers', not copied.
package podbook

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Finding is the findings' observation of a pod (findings.Observation): what the pod controller
// saw of one pod of a workload gangmap groups.
type Finding struct {
	// Owner is the top owner's UID.
	Owner types.UID
	// Role is the pod's role in the plan (its sub-group name), or "" when the definition places
	// the pod in no role (Unclaimed) or in a role that is in no gang.
	Role string
	// Unclaimed says no component's podSelector matched the pod.
	Unclaimed bool
	// OutsidePlan says a component claims the pod but its instance or replica is one the plan
	// does not count (gang.ErrNotInPlan, after the workload was read again): like an unclaimed
	// pod it waits in the gang's PodGroup in no sub-group (workloadmap.Grouper.GroupPod).
	OutsidePlan bool
	// Terminal says the pod has finished (phase Succeeded or Failed): it was created, but no
	// longer runs.
	Terminal bool
}

// Metric is the workload metrics' record of a pod: the top owner it counts under (and Serial, the
// metrics' number for that owner's entry, so that a pod counted under a forgotten entry is never
// taken off a newer one), its role and its phase.
type Metric struct {
	Owner  types.UID
	Serial uint64
	Role   string
	Phase  string
}

// entry is one pod. A part's fields are unset when empty (grouped "", repaired "", finding nil,
// metric nil).
type entry struct {
	// grouped is the top owner the pod controller grouped the pod under.
	grouped types.UID
	// repaired is the UID of the last pod of this key the controller repaired.
	repaired types.UID
	finding  *Finding
	metric   *Metric
}

// Book is the record of every pod. Safe for concurrent use; every method holds one mutex and
// calls out to nothing while holding it (callers may hold their own lock). Use New.
type Book struct {
	mu   sync.Mutex
	pods map[types.NamespacedName]*entry
	// grouped are the pods grouped under each top owner.
	grouped map[types.UID]sets.Set[types.NamespacedName]
}

// New returns an empty Book.
func New() *Book {
	return &Book{pods: map[types.NamespacedName]*entry{}, grouped: map[types.UID]sets.Set[types.NamespacedName]{}}
}

// get returns the pod's entry, made when create says so (nil otherwise when there is none).
func (b *Book) get(pod types.NamespacedName, create bool) *entry {
	e := b.pods[pod]
	if e == nil && create {
		e = &entry{}
		b.pods[pod] = e
	}
	return e
}

// drop deletes the pod's entry when every part has let go of it.
func (b *Book) drop(pod types.NamespacedName, e *entry) {
	if *e == (entry{}) {
		delete(b.pods, pod)
	}
}

// Len returns the number of pods with an entry.
func (b *Book) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pods)
}

// Forget drops everything of the pod (it is gone from the cluster).
func (b *Book) Forget(pod types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.pods[pod]; e != nil {
		b.ungroupLocked(pod, e)
		delete(b.pods, pod)
	}
}

// Group records that the pod controller grouped the pod under the top owner with this UID (it
// replaces an earlier owner; "" ungroups).
func (b *Book) Group(pod types.NamespacedName, owner types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.get(pod, owner != "")
	if e == nil || e.grouped == owner {
		return
	}
	b.ungroupLocked(pod, e)
	if owner == "" {
		b.drop(pod, e)
		return
	}
	e.grouped = owner
	if b.grouped[owner] == nil {
		b.grouped[owner] = sets.New[types.NamespacedName]()
	}
	b.grouped[owner].Insert(pod)
}

// Ungroup forgets the pod's top owner (the pod is no longer gangmap's); its other parts stay.
func (b *Book) Ungroup(pod types.NamespacedName) { b.Group(pod, "") }

// ungroupLocked takes the pod off its owner's set (none when it is grouped under none).
func (b *Book) ungroupLocked(pod types.NamespacedName, e *entry) {
	b.grouped[e.grouped].Delete(pod)
	if len(b.grouped[e.grouped]) == 0 {
		delete(b.grouped, e.grouped)
	}
	e.grouped = ""
}

// UngroupOwner forgets the top owner (deleted) and that any pod was grouped under it.
func (b *Book) UngroupOwner(owner types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for pod := range b.grouped[owner] {
		if e := b.pods[pod]; e != nil {
			e.grouped = ""
			b.drop(pod, e)
		}
	}
	delete(b.grouped, owner)
}

// Grouped returns the pods grouped under the top owner (a copy, in no order).
func (b *Book) Grouped(owner types.UID) []types.NamespacedName {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.grouped[owner].UnsortedList()
}

// FirstRepair records that the pod controller repaired the pod with this key and UID, and reports
// whether it is the first repair of that pod (a stale reconcile of a pod already repaired is not).
// A new pod of the same name has another UID, so it is reported again.
func (b *Book) FirstRepair(pod types.NamespacedName, uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.get(pod, uid != "")
	if e == nil || e.repaired == uid {
		return false
	}
	e.repaired = uid
	return true
}

// SwapFinding sets the pod's finding (nil: none) and returns the previous one, if any.
func (b *Book) SwapFinding(pod types.NamespacedName, f *Finding) (old Finding, had bool) {
	return swap(b, pod, f, func(e *entry) **Finding { return &e.finding })
}

// SwapMetric sets the pod's metric record (nil: none) and returns the previous one, if any.
func (b *Book) SwapMetric(pod types.NamespacedName, m *Metric) (old Metric, had bool) {
	return swap(b, pod, m, func(e *entry) **Metric { return &e.metric })
}

// swap sets the part of the pod's entry that field points to to a copy of v (nil: none) and
// returns the previous value, if any.
func swap[T any](b *Book, pod types.NamespacedName, v *T, field func(*entry) **T) (old T, had bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.get(pod, v != nil)
	if e == nil {
		return old, false
	}
	p := field(e)
	if *p != nil {
		old, had = **p, true
	}
	*p = nil
	if v != nil {
		c := *v // the Book never keeps a caller's pointer
		*p = &c
	}
	b.drop(pod, e)
	return old, had
}

// Metric returns the pod's metric record, if any.
func (b *Book) Metric(pod types.NamespacedName) (Metric, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.pods[pod]; e != nil && e.metric != nil {
		return *e.metric, true
	}
	return Metric{}, false
}
