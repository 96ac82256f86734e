package podview

import (
	"bytes"
	"encoding/json"
	"os"
	"syscall"
	"testing"
)

// BenchmarkDecodeAdmitted compares the webhook's two ways to read a grouped pod (3.9 KB JobSet
// worker as the API server sends it): the owners then the whole pod, each scanning the document
// (DecodeOwners, DecodePod), and one scan (ScanPod, then Owners and Pod from its marks).
func BenchmarkDecodeAdmitted(b *testing.B) {
	pretty, err := os.ReadFile("../webhook/testdata/jobset-worker-pod.json")
	if err != nil {
		b.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, pretty); err != nil {
		b.Fatal(err)
	}
	raw := compact.Bytes()
	b.Run("owners-then-pod", func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU()
		for i := 0; i < b.N; i++ {
			if _, ok := DecodeOwners(raw); !ok {
				b.Fatal("DecodeOwners declines")
			}
			if _, err := DecodePod(raw); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
	})
	b.Run("one-scan", func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU()
		for i := 0; i < b.N; i++ {
			p := ScanPod(raw)
			if _, ok := p.Owners(); !ok {
				b.Fatal("Owners declines")
			}
			if _, err := p.Pod(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
	})
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
