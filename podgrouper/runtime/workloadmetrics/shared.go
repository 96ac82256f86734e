package workloadmetrics

import (
	"hash/maphash"
	"math"
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// maxShapes bounds each table of shapes: past it, the table is emptied (the copies handed out
// stay valid; only the sharing of later ones restarts).
const maxShapes = 1024

// shapes holds one copy of what many tracked workloads have alike: their kind (Kind.group, a
// string the controller makes for every update), their status words and their roles (names and
// GPUs: the same for every workload of one template). 10,000 alike workloads keep one copy of
// each instead of 10,000 (112 bytes each for the scale benchmark's CustomJobs). A list is found
// by a 64-bit hash of its content and confirmed equal, so a collision only loses the sharing.
// The lists handed out are shared: never written (nothing writes a tracked Workload's lists).
type shapes struct {
	seed   maphash.Seed
	kinds  map[string]string
	status map[uint64][]string
	roles  map[uint64][]Role
}

// kind returns the table's copy of the kind.
func (s *shapes) kind(k string) string {
	if c, ok := s.kinds[k]; ok {
		return c
	}
	s.kinds = bounded(s.kinds)
	s.kinds[k] = k
	return k
}

// statusWords returns the table's list equal to words (nil for none).
func (s *shapes) statusWords(words []string) []string {
	return shareList(s.seed, &s.status, words, func(h *maphash.Hash, w string) {
		h.WriteString(w)
		h.WriteByte(0)
	}, func(a, b string) bool { return a == b })
}

// roleList returns the table's list equal to roles (nil for none); GPUs are compared by their
// bits.
func (s *shapes) roleList(roles []Role) []Role {
	return shareList(s.seed, &s.roles, roles, func(h *maphash.Hash, r Role) {
		h.WriteString(r.Name)
		h.WriteByte(0)
		writeFloat(h, r.GPUs)
		writeFloat(h, r.GangGPUs)
		h.WriteByte(byte(r.Segments))
	}, sameRole)
}

// shareList returns the list of *table equal to list (its elements hashed by write, compared by
// equal), else records list in the table (bounded) and returns it; nil for an empty list.
func shareList[T any](seed maphash.Seed, table *map[uint64][]T, list []T, write func(*maphash.Hash, T), equal func(a, b T) bool) []T {
	if len(list) == 0 {
		return nil
	}
	var h maphash.Hash
	h.SetSeed(seed)
	for _, e := range list {
		write(&h, e)
	}
	sum := h.Sum64()
	if c, ok := (*table)[sum]; ok && slices.EqualFunc(c, list, equal) {
		return c
	}
	*table = bounded(*table)
	(*table)[sum] = list
	return list
}

func sameRole(a, b Role) bool {
	return a.Name == b.Name && math.Float64bits(a.GPUs) == math.Float64bits(b.GPUs) &&
		math.Float64bits(a.GangGPUs) == math.Float64bits(b.GangGPUs) && a.Segments == b.Segments
}

func writeFloat(h *maphash.Hash, f float64) {
	bits := math.Float64bits(f)
	for i := range 8 {
		h.WriteByte(byte(bits >> (8 * i)))
	}
}

// bounded returns m, made when nil and emptied when it holds maxShapes entries.
func bounded[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return make(map[K]V)
	}
	if len(m) >= maxShapes {
		clear(m)
	}
	return m
}

// goneSize is how many forgotten workloads a Tracker remembers.
const goneSize = 4096

// goneSet remembers the last goneSize forgotten workloads by a 64-bit hash of their UID: a ring
// of hashes and a set of them, about 26 bytes per workload where an LRU of UIDs (k8s.io/utils/lru)
// kept about 197 (its list element, entry, boxed key and the UID string:
// BenchmarkForgottenWorkloadBytes). Two UIDs of one hash (one chance in 2^64 per pair) would make
// a new workload look forgotten: it would get no series until goneSize others are forgotten.
type goneSet struct {
	seed maphash.Seed
	ring []uint64
	next int
	set  map[uint64]struct{}
}

// add remembers the UID, forgetting the oldest past goneSize.
func (g *goneSet) add(uid types.UID) {
	sum := maphash.String(g.seed, string(uid))
	if _, ok := g.set[sum]; ok {
		return
	}
	if g.ring == nil {
		g.ring, g.set = make([]uint64, 0, goneSize), make(map[uint64]struct{}, goneSize)
	}
	if len(g.ring) < goneSize {
		g.ring = append(g.ring, sum)
	} else {
		delete(g.set, g.ring[g.next])
		g.ring[g.next] = sum
		g.next = (g.next + 1) % goneSize
	}
	g.set[sum] = struct{}{}
}

// has reports whether the UID is remembered.
func (g *goneSet) has(uid types.UID) bool {
	if g.set == nil {
		return false
	}
	_, ok := g.set[maphash.String(g.seed, string(uid))]
	return ok
}
