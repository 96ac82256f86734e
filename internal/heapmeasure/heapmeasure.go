// Package heapmeasure reads the live heap for the memory benchmarks and tests of gangmap's
// caches (bytes per cached pod, PodGroup, workload, plan), so that each measures the same way.
package heapmeasure

import "runtime"

// Live returns the bytes of live heap objects (runtime.MemStats.HeapAlloc) after two garbage
// collections: the first frees what became unreachable, the second what only the first's
// finalizers and weak references kept. Callers take the difference of two readings around what
// they build, and keep what they measure reachable until the second reading.
func Live() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
