package podbook

import (
	"k8s.io/apimachinery/pkg/types"
)

// Group records that the pod controller grouped the pod under the top owner with this UID (it
// replaces an earlier owner).
func (b *Book) Group(pod types.NamespacedName, owner types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.get(pod, true)
	if e.grouped == owner {
		return
	}
	b.ungroupLocked(e)
	e.grouped, e.pos = owner, len(b.owners[owner])
	b.owners[owner] = append(b.owners[owner], pod)
}

// Ungroup forgets the pod's top owner (the pod is no longer gangmap's); its other parts stay.
func (b *Book) Ungroup(pod types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.pods[pod]; e != nil {
		b.ungroupLocked(e)
		b.drop(pod, e)
	}
}

// ungroupLocked takes the pod off its owner's list: the last pod of the list takes its place.
func (b *Book) ungroupLocked(e *entry) {
	if e.grouped == "" {
		return
	}
	list := b.owners[e.grouped]
	last := len(list) - 1
	if e.pos != last {
		moved := list[last]
		list[e.pos] = moved
		b.pods[moved].pos = e.pos
	}
	list[last] = types.NamespacedName{}
	if last == 0 {
		delete(b.owners, e.grouped)
	} else {
		b.owners[e.grouped] = list[:last]
	}
	e.grouped, e.pos = "", 0
}

// UngroupOwner forgets the top owner (deleted) and that any pod was grouped under it.
func (b *Book) UngroupOwner(owner types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, pod := range b.owners[owner] {
		if e := b.pods[pod]; e != nil {
			e.grouped, e.pos = "", 0
			b.drop(pod, e)
		}
	}
	delete(b.owners, owner)
}

// Grouped returns the pods grouped under the top owner (a copy).
func (b *Book) Grouped(owner types.UID) []types.NamespacedName {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]types.NamespacedName(nil), b.owners[owner]...)
}

// FirstRepair records that the pod controller repaired the pod with this key and UID, and reports
// whether it is the first repair of that pod (a stale reconcile of a pod already repaired is not).
// A new pod of the same name has another UID, so it is reported again.
func (b *Book) FirstRepair(pod types.NamespacedName, uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.get(pod, true)
	if e.repaired == uid {
		return false
	}
	e.repaired = uid
	return true
}

// SwapFinding sets the pod's finding (nil: none) and returns the previous one, if any.
func (b *Book) SwapFinding(pod types.NamespacedName, f *Finding) (old Finding, had bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.get(pod, f != nil)
	if e == nil {
		return Finding{}, false
	}
	old, had = e.finding, e.hasFinding
	if f != nil {
		e.finding, e.hasFinding = *f, true
	} else {
		e.finding, e.hasFinding = Finding{}, false
		b.drop(pod, e)
	}
	return old, had
}

// SwapMetric sets the pod's metric record (nil: none) and returns the previous one, if any.
func (b *Book) SwapMetric(pod types.NamespacedName, m *Metric) (old Metric, had bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.get(pod, m != nil)
	if e == nil {
		return Metric{}, false
	}
	old, had = e.metric, e.hasMetric
	if m != nil {
		e.metric, e.hasMetric = *m, true
	} else {
		e.metric, e.hasMetric = Metric{}, false
		b.drop(pod, e)
	}
	return old, had
}

// Metric returns the pod's metric record, if any.
func (b *Book) Metric(pod types.NamespacedName) (Metric, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.pods[pod]; e != nil && e.hasMetric {
		return e.metric, true
	}
	return Metric{}, false
}
