package controller

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/internal/heapmeasure"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
	"github.com/gangmap/gangmap/podgrouper/runtime/podbook"
	"github.com/gangmap/gangmap/podgrouper/runtime/workloadmetrics"
)

// bookkeepingPods is one grouped pod as the reconciler records it: its key, UID, top owner and
// role. The strings are allocated before the measurement, as the pod cache holds them.
type bookkeepingPod struct {
	key   types.NamespacedName
	uid   types.UID
	owner types.UID
	role  string
}

// bookkeepingFixture returns n pods of n/perWorkload workloads (a coordinator and workers each, as
// the scale benchmark's CustomJobs) and one plan per workload.
func bookkeepingFixture(n, perWorkload int) ([]bookkeepingPod, []*gang.Plan) {
	pods := make([]bookkeepingPod, n)
	plans := make([]*gang.Plan, 0, n/perWorkload)
	for i := range pods {
		w := i / perWorkload
		if i%perWorkload == 0 {
			plans = append(plans, &gang.Plan{Workload: gang.WorkloadRef{UID: fmt.Sprintf("%08x-0000-4000-8000-%012x", w, w), Namespace: "scale", Name: fmt.Sprintf("job-%d", w)}})
		}
		role := "workers"
		if i%perWorkload == 0 {
			role = "coordinator"
		}
		pods[i] = bookkeepingPod{
			key:   types.NamespacedName{Namespace: "scale", Name: fmt.Sprintf("job-%d-%s-%d", w, role, i%perWorkload)},
			uid:   types.UID(fmt.Sprintf("%08x-1111-4000-8000-%012x", i, i)),
			owner: types.UID(plans[w].Workload.UID),
			role:  role,
		}
	}
	return pods, plans
}

// record does, for one grouped pod, the bookkeeping the reconciler does (reconcile, observe,
// track, labelPod): the owner index, the findings, the workload metrics and the repair mark.
func (r *PodReconciler) recordForBenchmark(p bookkeepingPod, plan *gang.Plan, now time.Time) {
	r.Book.Group(p.key, p.owner)
	r.Findings.SetPlan(plan, findings.Definition{Name: "customjob"}, now)
	r.Findings.Observe(p.key, findings.Observation{Owner: p.owner, Role: p.role}, now)
	r.Metrics.TrackPod(p.owner, "CustomJob.example.com", plan, p.key, p.role, corev1.PodPending)
	r.Book.FirstRepair(p.key, p.uid)
}

// BenchmarkPodBookkeepingBytes measures the live heap the pod controller's per-pod bookkeeping
// costs for 100,000 grouped pods of 10,000 workloads (owner index, findings, workload metrics,
// repaired pods, all in one podbook.Book as the grouper wires them), beyond the pods' own strings
// (held by the pod cache): bytes-per-pod. Before the Book (three maps by pod key and an LRU of
// repaired UIDs) it was 680 bytes per pod; with a Go map of 144-byte entries and a slice of pod
// keys per owner, 403; with the packed Book (96-byte entries in slabs, an index of slot numbers,
// owners and names stored once), 251, of which the Book is ~111 and the rest the findings' and
// metrics' state per workload (10 pods each); with roles and pod counts in lists instead of small
// Go maps, 198 (179 at session 8's end); with the Book made two ordinary Go maps again (issue 32,
// bench/README.md "Session 9"), 371.
func BenchmarkPodBookkeepingBytes(b *testing.B) {
	const n, perWorkload = 100_000, 10
	pods, plans := bookkeepingFixture(n, perWorkload)
	now := time.Now()
	for range b.N {
		before := heapmeasure.Live()
		book := podbook.New()
		r := &PodReconciler{Observer: Observer{Book: book, Findings: findings.NewTrackerIn(book), Metrics: &workloadmetrics.Tracker{MaxWorkloads: n, Pods: book}}}
		for i, p := range pods {
			r.recordForBenchmark(p, plans[i/perWorkload], now)
		}
		after := heapmeasure.Live()
		b.ReportMetric(float64(after-before)/n, "bytes/pod")
		runtime.KeepAlive(r)
	}
	runtime.KeepAlive(pods)
	runtime.KeepAlive(plans)
}
