package findings

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/podgrouper/runtime/podbook"
)

// BenchmarkReporterTick is one tick of the Reporter (dry-run) over 10,000 healthy workloads (the
// seed JobSet's plan, its 3 pods observed in their roles): what a tick allocates every Interval
// (2 s) when nothing is to be reported (B/op).
func BenchmarkReporterTick(b *testing.B) {
	const n = 10_000
	p := seedPlan(b, 2)
	tr := NewTrackerIn(podbook.New())
	now := time.Unix(1764590000, 0)
	for w := range n {
		pw := *p
		pw.Workload.UID = fmt.Sprintf("%08x-0000-4000-8000-%012x", w, w)
		pw.Workload.Name = fmt.Sprintf("w%05d", w)
		tr.SetPlan(&pw, Definition{Name: "jobset"}, now)
		for i, role := range []string{"leader", "workers", "workers"} {
			tr.Observe(pod(fmt.Sprintf("w%05d-%d", w, i)), Observation{Owner: types.UID(pw.Workload.UID), Role: role}, now)
		}
	}
	r := &Reporter{Tracker: tr, Config: cfg, DryRun: true, Now: func() time.Time { return now }}
	r.Tick(context.Background())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.Tick(context.Background())
	}
	if len(r.state) != 0 {
		b.Fatalf("%d workloads reported", len(r.state))
	}
}
