package app

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"
)

// cgroupMemoryFiles are where a container's memory limit is read: cgroup v2, then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// unmanagedReserve is what a container's memory limit must leave outside the Go runtime's soft
// limit: the resident memory the runtime does not count. Go's limit covers the heap, goroutine
// stacks and the runtime's own metadata (runtime/debug.SetMemoryLimit), not the pages of the
// binary mapped from its file, which the cgroup charges to the container too. The reserve is
// 80 MiB: the binary's file-backed pages (about 50 MiB resident) and the margin for the soft
// limit's overshoot (a metrics scrape of 10,000 workloads' series allocates tens of MB); see
// bench/README.md, "Session 7: the binary's resident pages" and "the heap's spans".
const unmanagedReserve = 80 << 20

// memoryLimit is the Go runtime's soft memory limit to set, in bytes, and where it comes from:
// --memory-limit; else none when $GOMEMLIMIT is set (the runtime applied it at start); else the
// container's cgroup memory limit less unmanagedReserve, and at least half of it (a 256 MiB
// container gets 176 MiB, a 512 MiB one 432 MiB, a 128 MiB one 64 MiB); else 0, no limit. Without
// a limit the garbage collector lets the heap grow to twice the live heap (GOGC=100), which at
// 100,000 cached pods is the difference between fitting a container's limit and being
// OOM-killed.
func (o *Options) memoryLimit() (int64, string) {
	if o.MemoryLimit != "" {
		q, err := resource.ParseQuantity(o.MemoryLimit)
		if err != nil {
			return 0, ""
		}
		return q.Value(), "--memory-limit"
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, "GOMEMLIMIT"
	}
	for _, f := range cgroupMemoryFiles {
		// A byte count, or "max" (v2) or a huge value (v1) for none.
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if b, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64); err == nil && b > 0 && b < 1<<50 {
			return max(b-unmanagedReserve, b/2), "the memory limit less 80Mi (binary, overshoot) of " + f
		}
	}
	return 0, ""
}

// applyMemoryLimit sets the runtime's soft memory limit (memoryLimit) and logs it.
func (o *Options) applyMemoryLimit(log logr.Logger) {
	limit, source := o.memoryLimit()
	switch {
	case limit > 0:
		debug.SetMemoryLimit(limit)
		log.Info("Go memory limit set", "bytes", limit, "source", source)
	case source != "":
		log.Info("Go memory limit set", "bytes", debug.SetMemoryLimit(-1), "source", source)
	}
}
