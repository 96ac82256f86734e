package podbook

import (
	"k8s.io/apimachinery/pkg/types"
)

// Group records that the pod controller grouped the pod under the top owner with this UID (it
// replaces an earlier owner; "" ungroups).
func (b *Book) Group(pod types.NamespacedName, owner types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if owner == "" {
		b.ungroupPodLocked(pod)
		return
	}
	s, e := b.get(pod, true)
	if e.grouped != 0 && b.owners.str(e.grouped) == string(owner) {
		return
	}
	b.ungroupLocked(s, e)
	e.grouped = b.owners.ref(string(owner))
	// The pod goes first in the owner's list.
	head := &b.owners.recs[e.grouped].head
	e.next = *head
	if *head != 0 {
		b.slots.at(*head).prev = s
	}
	*head = s
}

// Ungroup forgets the pod's top owner (the pod is no longer gangmap's); its other parts stay.
func (b *Book) Ungroup(pod types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ungroupPodLocked(pod)
}

func (b *Book) ungroupPodLocked(pod types.NamespacedName) {
	if s, e := b.get(pod, false); e != nil {
		b.ungroupLocked(s, e)
		b.drop(s, e)
	}
}

// ungroupLocked takes the pod (slot s) off its owner's list.
func (b *Book) ungroupLocked(s slot, e *entry) {
	if e.grouped == 0 {
		return
	}
	if e.prev != 0 {
		b.slots.at(e.prev).next = e.next
	} else {
		b.owners.recs[e.grouped].head = e.next
	}
	if e.next != 0 {
		b.slots.at(e.next).prev = e.prev
	}
	b.owners.unref(e.grouped)
	e.grouped, e.prev, e.next = 0, 0, 0
}

// UngroupOwner forgets the top owner (deleted) and that any pod was grouped under it.
func (b *Book) UngroupOwner(owner types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.owners.lookup(string(owner))
	if id == 0 {
		return
	}
	s := b.owners.recs[id].head
	b.owners.recs[id].head = 0
	for s != 0 {
		e := b.slots.at(s)
		next := e.next
		e.grouped, e.prev, e.next = 0, 0, 0
		b.owners.unref(id)
		b.drop(s, e)
		s = next
	}
}

// Grouped returns the pods grouped under the top owner (a copy).
func (b *Book) Grouped(owner types.UID) []types.NamespacedName {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.owners.lookup(string(owner))
	if id == 0 {
		return nil
	}
	var out []types.NamespacedName
	for s := b.owners.recs[id].head; s != 0; {
		e := b.slots.at(s)
		out = append(out, e.key)
		s = e.next
	}
	return out
}

// FirstRepair records that the pod controller repaired the pod with this key and UID, and reports
// whether it is the first repair of that pod (a stale reconcile of a pod already repaired is not).
// A new pod of the same name has another UID, so it is reported again.
func (b *Book) FirstRepair(pod types.NamespacedName, uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, e := b.get(pod, uid != "")
	if e == nil || e.repaired == uid {
		return false
	}
	e.repaired = uid
	b.drop(s, e)
	return true
}

// SwapFinding sets the pod's finding (nil: none) and returns the previous one, if any.
func (b *Book) SwapFinding(pod types.NamespacedName, f *Finding) (old Finding, had bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, e := b.get(pod, f != nil)
	if e == nil {
		return Finding{}, false
	}
	old, had = b.finding(e)
	b.setFinding(e, f)
	b.drop(s, e)
	return old, had
}

func (b *Book) finding(e *entry) (Finding, bool) {
	if e.flags&hasFinding == 0 {
		return Finding{}, false
	}
	return Finding{Owner: types.UID(b.owners.str(e.findingOwner)), Role: b.words.str(e.findingRole),
		Unclaimed: e.flags&unclaimed != 0, Terminal: e.flags&terminal != 0}, true
}

// setFinding replaces the entry's finding (nil: none).
func (b *Book) setFinding(e *entry, f *Finding) {
	e.flags &^= hasFinding | unclaimed | terminal
	if f == nil {
		b.owners.unref(e.findingOwner)
		b.words.unref(e.findingRole)
		e.findingOwner, e.findingRole = 0, 0
		return
	}
	e.findingOwner = b.owners.swap(e.findingOwner, string(f.Owner))
	e.findingRole = b.words.swap(e.findingRole, f.Role)
	e.flags |= hasFinding
	if f.Unclaimed {
		e.flags |= unclaimed
	}
	if f.Terminal {
		e.flags |= terminal
	}
}

// SwapMetric sets the pod's metric record (nil: none) and returns the previous one, if any.
func (b *Book) SwapMetric(pod types.NamespacedName, m *Metric) (old Metric, had bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, e := b.get(pod, m != nil)
	if e == nil {
		return Metric{}, false
	}
	old, had = b.metric(e)
	b.setMetric(e, m)
	b.drop(s, e)
	return old, had
}

func (b *Book) metric(e *entry) (Metric, bool) {
	if e.flags&hasMetric == 0 {
		return Metric{}, false
	}
	return Metric{Owner: types.UID(b.owners.str(e.metricOwner)), Serial: e.serial,
		Role: b.words.str(e.metricRole), Phase: b.words.str(e.metricPhase)}, true
}

// setMetric replaces the entry's metric record (nil: none).
func (b *Book) setMetric(e *entry, m *Metric) {
	if m == nil {
		b.owners.unref(e.metricOwner)
		b.words.unref(e.metricRole)
		b.words.unref(e.metricPhase)
		e.metricOwner, e.metricRole, e.metricPhase, e.serial = 0, 0, 0, 0
		e.flags &^= hasMetric
		return
	}
	e.metricOwner = b.owners.swap(e.metricOwner, string(m.Owner))
	e.metricRole = b.words.swap(e.metricRole, m.Role)
	e.metricPhase = b.words.swap(e.metricPhase, m.Phase)
	e.serial = m.Serial
	e.flags |= hasMetric
}

// Metric returns the pod's metric record, if any.
func (b *Book) Metric(pod types.NamespacedName) (Metric, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, e := b.get(pod, false); e != nil {
		return b.metric(e)
	}
	return Metric{}, false
}
