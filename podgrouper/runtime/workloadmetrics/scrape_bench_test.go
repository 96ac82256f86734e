package workloadmetrics

import (
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/internal/heapmeasure"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// scaleTracker tracks n workloads shaped like the scale benchmark's CustomJobs (e2e/testdata:
// a coordinator of 1 pod and 9 workers, one GPU a pod, one PodGroup without KAI conditions,
// every pod running), as the pod controller records them: about 10 series per workload.
func scaleTracker(n int) *Tracker {
	store := &podGroupStore{}
	tr := &Tracker{MaxWorkloads: n, Reader: store}
	for w := range n {
		uid := types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", w, w))
		name := fmt.Sprintf("w%05d", w)
		tr.SetWorkload(Workload{UID: uid, Namespace: "scale", Kind: "CustomJob.e2e.example.com", Name: name,
			Status: []string{"running"}, GPUs: 10, GangGPUs: 10, PodGroups: []string{"pg-" + name},
			Roles: []Role{{Name: "coordinator", GPUs: 1, GangGPUs: 1}, {Name: "worker", GPUs: 9, GangGPUs: 9}}})
		store.add("scale", "pg-"+name, v2alpha2.PodGroupStatus{})
		setPod(tr, uid, types.NamespacedName{Namespace: "scale", Name: name + "-coordinator-0"}, "coordinator", "Running")
		for i := range 9 {
			setPod(tr, uid, types.NamespacedName{Namespace: "scale", Name: fmt.Sprintf("%s-worker-%d", name, i)}, "worker", "Running")
		}
	}
	return tr
}

// countingWriter counts the bytes written to it.
type countingWriter struct{ n int }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

var _ io.Writer = (*countingWriter)(nil)

// BenchmarkScrapeWorkloads is one scrape of the workload series of 10,000 tracked workloads (the
// chart's --max-workload-metrics default, the 100,000-pod scale run's): the registry's Gather
// (controller-runtime's registry is a prometheus.NewRegistry) and the text encoding promhttp
// does. It reports the bytes allocated per scrape and per series (testing's B/op counts the same
// allocations), and the live heap the gathered families hold until encoded (gathered-bytes: the
// scrape's contribution to the live heap at its peak, after a GC, above the tracker's own).
func BenchmarkScrapeWorkloads(b *testing.B) {
	const n = 10_000
	tr := scaleTracker(n)
	reg := prometheus.NewRegistry()
	reg.MustRegister(tr)
	var before, after runtime.MemStats
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		base := heapmeasure.Live()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		mfs, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		runtime.ReadMemStats(&after)
		gatherAlloc := after.TotalAlloc - before.TotalAlloc
		gathered := heapmeasure.Live() - base
		runtime.ReadMemStats(&before)
		b.StartTimer()
		w := &countingWriter{}
		enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
		series := 0
		for _, mf := range mfs {
			series += len(mf.Metric)
			if err := enc.Encode(mf); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		runtime.ReadMemStats(&after)
		alloc := float64(gatherAlloc + after.TotalAlloc - before.TotalAlloc)
		b.ReportMetric(alloc, "bytes/scrape")
		b.ReportMetric(alloc/float64(series), "bytes/series")
		b.ReportMetric(float64(gathered), "gathered-bytes")
		b.ReportMetric(float64(series), "series")
		b.ReportMetric(float64(w.n), "text-bytes")
		runtime.KeepAlive(mfs)
		b.StartTimer()
	}
}

// liveHeap is the live heap after a GC.

// BenchmarkForgottenWorkloadBytes measures what the tracker keeps of the workloads it forgot
// (the last 4,096 deleted, so that a late update does not bring their series back): live heap
// after a GC per forgotten workload, with 4,096 forgotten (their UID strings let go by the
// caller, as the workload cache lets go of deleted workloads).
func BenchmarkForgottenWorkloadBytes(b *testing.B) {
	const n = 4096
	for range b.N {
		tr := &Tracker{MaxWorkloads: n}
		tr.init()
		before := heapmeasure.Live()
		for w := range n {
			tr.ForgetWorkload(types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", w, w)))
		}
		after := heapmeasure.Live()
		b.ReportMetric(float64(after-before)/n, "bytes/forgotten")
		runtime.KeepAlive(tr)
	}
}
