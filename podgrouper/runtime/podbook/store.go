package podbook

import "k8s.io/apimachinery/pkg/types"

// slot numbers an entry in a slab: 1 is the first slot, 0 none.
type slot uint32

// chunkSize is the number of entries in one slab chunk (96 KiB).
const chunkSize = 1024

// slab holds the entries in chunks of chunkSize, so that growing never copies the entries nor
// holds two copies of them at once. Free slots are zeroed (they hold no string) and linked
// through next; the chunks stay at the high-water mark of pods (as a Go map's buckets do).
type slab struct {
	chunks [][]entry
	free   slot
	used   int
}

func (s *slab) at(n slot) *entry {
	i := int(n - 1)
	return &s.chunks[i/chunkSize][i%chunkSize]
}

// alloc returns a free, zeroed slot.
func (s *slab) alloc() slot {
	if s.free != 0 {
		n := s.free
		e := s.at(n)
		s.free, e.next = e.next, 0
		return n
	}
	if s.used == len(s.chunks)*chunkSize {
		s.chunks = append(s.chunks, make([]entry, chunkSize))
	}
	s.used++
	return slot(s.used)
}

// release zeroes the slot and puts it on the free list.
func (s *slab) release(n slot) {
	e := s.at(n)
	*e = entry{next: s.free}
	s.free = n
}

// index is an open-addressing hash table (linear probing) of slot numbers, keyed by the slots'
// entries' pod keys: 4 bytes a position, at most 3/4 full, halved when under 1/8 full.
type index struct {
	table []slot
	n     int
}

const minIndex = 64

// find returns the pod's slot (0: none).
func (x *index) find(s *slab, pod types.NamespacedName) slot {
	if x.n == 0 {
		return 0
	}
	mask := uint64(len(x.table) - 1)
	for i := hash(pod) & mask; ; i = (i + 1) & mask {
		n := x.table[i]
		if n == 0 || s.at(n).key == pod {
			return n
		}
	}
}

// insert adds slot n (its entry's key is not in the index yet).
func (x *index) insert(s *slab, n slot) {
	if (x.n+1)*4 > len(x.table)*3 {
		x.resize(s, max(minIndex, 2*len(x.table)))
	}
	x.place(s, n)
	x.n++
}

func (x *index) place(s *slab, n slot) {
	mask := uint64(len(x.table) - 1)
	i := hash(s.at(n).key) & mask
	for x.table[i] != 0 {
		i = (i + 1) & mask
	}
	x.table[i] = n
}

// remove deletes the pod's position, shifting back the positions after it that may move (so
// that no probe sequence has a hole; no tombstones).
func (x *index) remove(s *slab, pod types.NamespacedName) {
	mask := uint64(len(x.table) - 1)
	i := hash(pod) & mask
	for x.table[i] != 0 && s.at(x.table[i]).key != pod {
		i = (i + 1) & mask
	}
	if x.table[i] == 0 {
		return
	}
	for j := i; ; {
		x.table[i] = 0
		for {
			j = (j + 1) & mask
			if x.table[j] == 0 {
				x.n--
				if len(x.table) > minIndex && x.n*8 < len(x.table) {
					x.resize(s, len(x.table)/2)
				}
				return
			}
			home := hash(s.at(x.table[j]).key) & mask
			// The position j may move to i unless its home lies cyclically in (i, j].
			if (i < j && (home <= i || home > j)) || (i > j && home <= i && home > j) {
				break
			}
		}
		x.table[i] = x.table[j]
		i = j
	}
}

func (x *index) resize(s *slab, size int) {
	old := x.table
	x.table = make([]slot, size)
	for _, n := range old {
		if n != 0 {
			x.place(s, n)
		}
	}
}

// name numbers a string in a names table: 0 is "" (and none).
type name uint32

// nameTable stores strings once each with a count of their uses; a number is reused once its
// string has no use left. For an owner, head is the first slot of its list of grouped pods.
type nameTable struct {
	ids  map[string]name
	recs []nameRec
	free []name
}

type nameRec struct {
	s    string
	uses uint32
	head slot
}

// ref returns the string's number and counts one more use of it.
func (t *nameTable) ref(s string) name {
	if s == "" {
		return 0
	}
	id, ok := t.ids[s]
	if !ok {
		if t.ids == nil {
			t.ids, t.recs = map[string]name{}, make([]nameRec, 1)
		}
		if k := len(t.free); k > 0 {
			id, t.free = t.free[k-1], t.free[:k-1]
		} else {
			id = name(len(t.recs))
			t.recs = append(t.recs, nameRec{})
		}
		t.ids[s], t.recs[id] = id, nameRec{s: s}
	}
	t.recs[id].uses++
	return id
}

// unref counts one use less of the number's string, and forgets the string with its last use.
func (t *nameTable) unref(id name) {
	if id == 0 {
		return
	}
	r := &t.recs[id]
	if r.uses--; r.uses == 0 {
		delete(t.ids, r.s)
		*r = nameRec{}
		t.free = append(t.free, id)
	}
}

// lookup returns the string's number (0: not stored).
func (t *nameTable) lookup(s string) name {
	if s == "" {
		return 0
	}
	return t.ids[s]
}

func (t *nameTable) str(id name) string {
	if id == 0 {
		return ""
	}
	return t.recs[id].s
}

// swap counts one use of s and one less of old, and returns s's number.
func (t *nameTable) swap(old name, s string) name {
	id := t.ref(s)
	t.unref(old)
	return id
}
