package controller

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/internal/heapmeasure"
	"github.com/gangmap/gangmap/podgrouper/core/grouper"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
	"github.com/gangmap/gangmap/podgrouper/runtime/podbook"
	"github.com/gangmap/gangmap/podgrouper/runtime/workloadmetrics"
)

// stateWorkload is one workload of BenchmarkWorkloadStateBytes: its cached object, its pods'
// keys (as the pod cache holds them) and roles, and what the grouper saw of it.
type stateWorkload struct {
	job   *unstructured.Unstructured
	pods  []types.NamespacedName
	roles []string
	seen  grouper.Seen
}

// stateFixture plans n of the scale benchmark's CustomJobs of per pods each with the grouper
// (the plans are the grouper's, which the caller drops before measuring).
func stateFixture(b *testing.B, n, per int) []stateWorkload {
	raw, err := os.ReadFile("../../../e2e/testdata/customjob.yaml")
	if err != nil {
		b.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		b.Fatal(err)
	}
	s := newSteadyState(b)
	defer s.pods.close()
	out := make([]stateWorkload, n)
	for w := range out {
		job := scaleCustomJob(b, s.interner, js, w, per-1)
		sw := stateWorkload{job: job}
		for i := range per {
			role, idx := "worker", i-1
			if i == 0 {
				role, idx = "coordinator", 0
			}
			pod := rolePod(b, job, role, idx)
			_, seen, err := s.grouper.GroupPod(context.Background(), job, pod)
			if err != nil {
				b.Fatal(err)
			}
			sw.seen = seen
			sw.pods = append(sw.pods, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
			sw.roles = append(sw.roles, seen.Role)
		}
		out[w] = sw
	}
	return out
}

// BenchmarkWorkloadStateBytes measures the live heap the findings (findings.Tracker, and the
// findings.Reporter's state after a tick) and the workload metrics (workloadmetrics.Tracker) hold
// per workload for 10,000 of the scale benchmark's CustomJobs (10 pods each, recorded as the pod
// controller records them), beyond the podbook.Book they share and the caches (the workloads
// and pod keys are the benchmark's; the plans are let go, as the plan cache lets go of all but
// 1,024 by default): bytes per workload of each part, and of all three (state-bytes/workload).
func BenchmarkWorkloadStateBytes(b *testing.B) {
	const n, per = 10_000, 10
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		fixture := stateFixture(b, n, per)
		b.StartTimer()
		book := podbook.New()
		f := findings.NewTrackerIn(book)
		m := &workloadmetrics.Tracker{MaxWorkloads: n, Pods: book}
		now := time.Now()
		for w := range fixture {
			sw := &fixture[w]
			uid := sw.job.GetUID()
			for i, key := range sw.pods {
				book.Group(key, uid)
				f.SetPlan(sw.seen.Plan, findings.DefinitionOf(sw.seen.Definition), now)
				f.Observe(key, findings.Observation{Owner: uid, Role: sw.roles[i]}, now)
				m.TrackPod(uid, sw.job.GroupVersionKind().GroupKind().String(), sw.seen.Plan, key, sw.roles[i], corev1.PodRunning)
			}
			sw.seen = grouper.Seen{} // the plan goes (the plan cache keeps 1,024 of 10,000 by default)
		}
		r := &findings.Reporter{Tracker: f, DryRun: true, Now: func() time.Time { return now }}
		r.Tick(ctx)
		all := heapmeasure.Live()
		runtime.KeepAlive(r)
		reporter := heapmeasure.Live()
		runtime.KeepAlive(m)
		metrics := heapmeasure.Live()
		runtime.KeepAlive(f)
		tracker := heapmeasure.Live()
		b.ReportMetric(float64(all-reporter)/n, "reporter-bytes/workload")
		b.ReportMetric(float64(reporter-metrics)/n, "metrics-bytes/workload")
		b.ReportMetric(float64(metrics-tracker)/n, "findings-bytes/workload")
		b.ReportMetric(float64(all-tracker)/n, "state-bytes/workload")
		runtime.KeepAlive(book)
		runtime.KeepAlive(fixture)
	}
}
