// Package podbook is the grouper's one record per pod, keyed by the pod's namespace and name. Three
// parts of the grouper keep something per pod: the pod controller (the top owner it grouped the
// pod under, so that a workload's change regroups its pods, and the UID of the pod it last
// repaired, so that a stale reconcile does not report a repair twice), the findings (the pod's
// observation against its workload's plan) and the workload metrics (the pod's role and phase).
// Each used to hold its own map by pod key (and the repairs an LRU of UIDs): about 680 bytes per
// grouped pod, measured by the controller's BenchmarkPodBookkeepingBytes; one map of entries by
// pod key made it about 400. The Book packs an entry into 96 bytes, stored in slabs of entries
// (no heap object per pod) and found through an open-addressing index of 4-byte slot numbers
// (no Go map of 32-byte keys); owners' UIDs and role and phase names are stored once each in
// tables with reference counts, and an entry holds their 4-byte numbers; an owner's grouped pods
// are a list linked through the entries (no slice per owner). The workloads' aggregates stay
// with their owners (findings' counters, the metrics' pods per role and phase).
//
// Each part owns its own fields of an entry and sees only those; an entry goes when every part
// has let go of the pod. Strings are the callers' (the pod cache's key and UID strings, the
// first caller's copy of an owner's UID, the plan's role names), not copied.
package podbook

import (
	"hash/maphash"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Finding is the findings' observation of a pod (see findings.Observation): its top owner, its
// role in the plan, whether no component claimed it and whether it has finished.
type Finding struct {
	Owner     types.UID
	Role      string
	Unclaimed bool
	Terminal  bool
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

// Flags of an entry.
const (
	hasFinding = 1 << iota
	hasMetric
	unclaimed
	terminal
)

// entry is one pod, in a slab slot. Owners are numbers in Book.owners, roles and phases numbers
// in Book.words (0: none, or ""). A part's fields are unset when empty (grouped 0, repaired "",
// no hasFinding, no hasMetric flag).
type entry struct {
	// key is the pod's key (zero while the slot is free).
	key types.NamespacedName
	// repaired is the UID of the last pod of this key the controller repaired.
	repaired types.UID
	// serial is Metric.Serial.
	serial uint64
	// prev and next link the pods grouped under the same owner (slot numbers, 0: none); next also
	// links the free slots.
	prev, next slot
	// grouped is the top owner the pod controller grouped the pod under.
	grouped name
	// The finding's owner and role, the metric's owner, role and phase.
	findingOwner, findingRole            name
	metricOwner, metricRole, metricPhase name
	flags                                uint8
}

func (e *entry) empty() bool {
	return e.grouped == 0 && e.repaired == "" && e.flags&(hasFinding|hasMetric) == 0
}

// Book is the record of every pod. Safe for concurrent use; every method costs a lookup in the
// index under one mutex, and no method calls out while holding it (callers may hold their own
// lock). The zero value is ready to use.
type Book struct {
	mu sync.Mutex
	// index finds a pod's slot; slots holds the entries.
	index index
	slots slab
	// owners are the owners' UIDs (with the head of each owner's list of grouped pods); words
	// the role and phase names.
	owners, words nameTable
}

// New returns an empty Book.
func New() *Book { return &Book{} }

// get returns the pod's slot and entry, made when create says so (0, nil otherwise when there
// is none).
func (b *Book) get(pod types.NamespacedName, create bool) (slot, *entry) {
	if s := b.index.find(&b.slots, pod); s != 0 {
		return s, b.slots.at(s)
	}
	if !create {
		return 0, nil
	}
	s := b.slots.alloc()
	e := b.slots.at(s)
	e.key = pod
	b.index.insert(&b.slots, s)
	return s, e
}

// drop deletes the pod's entry when every part has let go of it.
func (b *Book) drop(s slot, e *entry) {
	if e.empty() {
		b.index.remove(&b.slots, e.key)
		b.slots.release(s)
	}
}

// Len returns the number of pods with an entry.
func (b *Book) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.index.n
}

// Forget drops everything of the pod (it is gone from the cluster).
func (b *Book) Forget(pod types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, e := b.get(pod, false)
	if e == nil {
		return
	}
	b.ungroupLocked(s, e)
	e.repaired = ""
	b.setFinding(e, nil)
	b.setMetric(e, nil)
	b.drop(s, e)
}

// seed hashes the pod keys of every Book (a Book's index is never shared across processes).
var seed = maphash.MakeSeed()

func hash(pod types.NamespacedName) uint64 { return maphash.Comparable(seed, pod) }
