// Package podbook is the grouper's one record per pod, keyed by the pod's namespace and name. Three
// parts of the grouper keep something per pod: the pod controller (the top owner it grouped the
// pod under, so that a workload's change regroups its pods, and the UID of the pod it last
// repaired, so that a stale reconcile does not report a repair twice), the findings (the pod's
// observation against its workload's plan) and the workload metrics (the pod's role and phase).
// Each used to hold its own map by pod key (and the repairs an LRU of UIDs): about 680 bytes per
// grouped pod, measured by the controller's BenchmarkPodBookkeepingBytes. A Book holds all of it
// in one entry per pod, about 250 bytes, and the workloads' aggregates stay with their owners
// (findings' counters, the metrics' pods per role and phase).
//
// Each part owns its own fields of an entry and sees only those; an entry goes when every part
// has let go of the pod. Strings are the callers' (the pod cache's key and UID strings, the
// plan's role names), not copied.
package podbook

import (
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

// entry is one pod. A part's fields are unset when empty ("" owner, !hasFinding, !hasMetric).
type entry struct {
	// grouped is the top owner the pod controller grouped the pod under; pos its place in
	// Book.owners[grouped].
	grouped types.UID
	pos     int
	// repaired is the UID of the last pod of this key the controller repaired.
	repaired   types.UID
	finding    Finding
	metric     Metric
	hasFinding bool
	hasMetric  bool
}

func (e *entry) empty() bool {
	return e.grouped == "" && e.repaired == "" && !e.hasFinding && !e.hasMetric
}

// Book is the record of every pod. Safe for concurrent use; every method costs a map lookup
// under one mutex, and no method calls out while holding it (callers may hold their own lock).
// The zero value is ready to use.
type Book struct {
	mu   sync.Mutex
	pods map[types.NamespacedName]*entry
	// owners lists, per top owner, the pods grouped under it.
	owners map[types.UID][]types.NamespacedName
}

// New returns an empty Book.
func New() *Book { return &Book{} }

// get returns the pod's entry, made when create says so (nil otherwise when there is none).
func (b *Book) get(pod types.NamespacedName, create bool) *entry {
	e := b.pods[pod]
	if e == nil && create {
		if b.pods == nil {
			b.pods, b.owners = map[types.NamespacedName]*entry{}, map[types.UID][]types.NamespacedName{}
		}
		e = &entry{}
		b.pods[pod] = e
	}
	return e
}

// drop deletes the pod's entry when every part has let go of it.
func (b *Book) drop(pod types.NamespacedName, e *entry) {
	if e.empty() {
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
		b.ungroupLocked(e)
		delete(b.pods, pod)
	}
}
