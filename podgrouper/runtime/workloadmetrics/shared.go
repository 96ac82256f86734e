package workloadmetrics

import (
	"hash/maphash"

	"k8s.io/apimachinery/pkg/types"
)

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
