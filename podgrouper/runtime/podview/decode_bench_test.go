package podview

import (
	"bytes"
	"encoding/json"
	"os"
	"syscall"
	"testing"
)

// BenchmarkDecodePod decodes the webhook's 3.9 KB JobSet worker pod as the webhook does
// (DecodePod: sigs.k8s.io/json into the view's struct). Issue 32 compared it with the
// hand-written scanner it replaced (bench/README.md, "Session 9").
func BenchmarkDecodePod(b *testing.B) {
	pretty, err := os.ReadFile("../webhook/testdata/jobset-worker-pod.json")
	if err != nil {
		b.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, pretty); err != nil {
		b.Fatal(err)
	}
	raw := compact.Bytes()
	b.ReportAllocs()
	cpu := processCPU()
	for i := 0; i < b.N; i++ {
		d, err := DecodePod(raw)
		if err != nil {
			b.Fatal(err)
		}
		if len(d.Pod.OwnerReferences) == 0 {
			b.Fatal("no owner references")
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time (user and system) the process used so far, in nanoseconds: on a
// shared machine, wall time per operation counts the time other processes held the CPU.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
