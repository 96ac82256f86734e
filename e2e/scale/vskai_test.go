//go:build e2e

package scale

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// BenchmarkVsKAI (`make bench-vs-kai KAI_BIN=<dir>`, not in CI) groups the same pods with KAI's
// own pod-grouper (the real binary from KAI_BIN; kinds without a native plugin go to its Karta
// fallback, KAI's default) and with gangmap's grouper, controller only (--webhook-port=0: the
// controller labels every pod after creation) and through its webhook, each alone on the control
// plane, with the same CustomJob Karta (../testdata/customjob-karta.yaml with KAI's three index
// labels, so that KAI's Karta hub finds it). Each run creates GANGMAP_VSKAI_PODS pods (default
// 10,000) of CustomJobs of 10 pods (1 coordinator, 9 workers: one gang with a sub-group per
// role), by the scale benchmark's writer (eight clients, createWorkloads), in a namespace of its
// own, emptied after the run so that no grouper sees another's pods.
//
// It runs every grouper at each rate limit of GANGMAP_VSKAI_LIMITS (default "default,raised":
// each grouper's own default client QPS and burst, then GANGMAP_VSKAI_RAISED, default
// "--qps=1000 --burst=2000", on both) and prints, per rate limit, the table of wall time (first
// create until every pod was seen grouped), p50 and p99 create -> grouped, the grouper's API
// requests per pod (client-go's rest_client_requests_total, by verb), its CPU seconds per 1,000
// pods (process_cpu_seconds_total) and its peak RSS (VmHWM), each counted from the first create
// until the grouper is caught up (no request for 10 s: gangmap's repair Events of the last
// workloads come 5 s after their pods), with the machine's load average; then gangmap's ratios to
// KAI. It fails when the PodGroups (spec, name and owner, the workload UID replaced by its name)
// or the pods' PodGroup and sub-group differ from KAI's, or when a goal of issue 33 does not
// hold: controller only at most 0.5x KAI's requests and CPU per pod, the webhook at most 0.5
// requests per pod.
func BenchmarkVsKAI(b *testing.B) {
	ctx := context.Background()
	kaiBin, err := framework.KAIPodGrouperBinary()
	if err != nil {
		b.Fatal(err)
	}
	n := envInt(b, "GANGMAP_VSKAI_PODS", 10000)
	const per = 10
	if n%per != 0 {
		b.Fatalf("GANGMAP_VSKAI_PODS (%d) must be a multiple of %d", n, per)
	}
	limits := rateLimits(b)
	contenders := []contender{
		{key: "kai", name: "KAI's pod-grouper (Karta fallback)", start: func(ctx context.Context, b *testing.B, extra []string) (*framework.GrouperProcess, func()) {
			g, err := framework.StartRealKAIPodGrouper(ctx, kaiBin, cp.Kubeconfig, workDir, extra...)
			if err != nil {
				b.Fatal(err)
			}
			return g, func() {}
		}},
		{key: "gm-ctrl", name: "gangmap, controller only", start: func(ctx context.Context, b *testing.B, extra []string) (*framework.GrouperProcess, func()) {
			g, _ := startGrouper(ctx, b, false, extra...)
			return g, func() {}
		}},
		{key: "gm-hook", name: "gangmap, webhook", start: func(ctx context.Context, b *testing.B, extra []string) (*framework.GrouperProcess, func()) {
			g, _ := startGrouper(ctx, b, true, extra...)
			return g, func() { tearDownWebhook(ctx) }
		}},
	}
	for i := 0; i < b.N; i++ {
		for _, lim := range limits {
			var runs []*vsRun
			for _, c := range contenders {
				runs = append(runs, runContender(ctx, b, c, lim, n, per))
			}
			reportVsKAI(b, lim, n, runs)
		}
	}
}

// rateLimit is one client rate-limit setting of the comparison.
type rateLimit struct {
	key, name string
	// args are added to every grouper's flags (none: each grouper's own default).
	args []string
}

// rateLimits reads GANGMAP_VSKAI_LIMITS ("default", "raised" or both, comma-separated) and
// GANGMAP_VSKAI_RAISED (the raised limit's flags).
func rateLimits(b *testing.B) []rateLimit {
	raised := os.Getenv("GANGMAP_VSKAI_RAISED")
	if raised == "" {
		raised = "--qps=1000 --burst=2000"
	}
	want := os.Getenv("GANGMAP_VSKAI_LIMITS")
	if want == "" {
		want = "default,raised"
	}
	var out []rateLimit
	for _, k := range strings.Split(want, ",") {
		switch strings.TrimSpace(k) {
		case "default":
			out = append(out, rateLimit{key: "default", name: "each grouper's default rate limit"})
		case "raised":
			out = append(out, rateLimit{key: "raised", name: "raised rate limit " + raised, args: strings.Fields(raised)})
		default:
			b.Fatalf("GANGMAP_VSKAI_LIMITS=%q: want default, raised or default,raised", want)
		}
	}
	return out
}

// contender is one grouper of the comparison: start runs it with extra flags and returns it with
// what to undo after its run.
type contender struct {
	key, name string
	start     func(ctx context.Context, b *testing.B, extra []string) (*framework.GrouperProcess, func())
}

// vsRun is what one grouper's run measured.
type vsRun struct {
	c                  contender
	pods, workloads    int
	wall, p50, p99     time.Duration
	idle, done         map[string]float64
	peakRSS            int64
	loadBefore, loadAt string
	// podGroups and assignments are the run's PodGroups and the pods' PodGroup and sub-group,
	// normalized (podGroupShapes).
	podGroups, assignments map[string]string
}

// runContender runs c at lim on n pods in a namespace of their own and measures it.
func runContender(ctx context.Context, b *testing.B, c contender, lim rateLimit, n, per int) *vsRun {
	ns := fmt.Sprintf("vskai-%s-%s", c.key, lim.key)
	if err := cp.CreateNamespace(ctx, ns); err != nil {
		b.Fatal(err)
	}
	applyKAIVisibleKarta(ctx, b)
	r := &vsRun{c: c, pods: n, workloads: n / per, loadBefore: loadAverage()}
	g, undo := c.start(ctx, b, lim.args)
	defer undo()
	defer func() { _ = g.Stop() }()
	var err error
	if r.idle, err = g.MetricsWithin(ctx, scrapeTimeout); err != nil {
		b.Fatal(err)
	}
	times, err := watchPodTimes(ctx, ns)
	if err != nil {
		b.Fatal(err)
	}
	defer times.Stop()
	start := time.Now()
	if _, err := createWorkloads(ctx, ns, r.workloads, per, times); err != nil {
		b.Fatal(err)
	}
	waitGrouped(ctx, b, ns, n, r.workloads)
	waitCaughtUp(ctx, b, g)
	if r.done, err = g.MetricsWithin(ctx, scrapeTimeout); err != nil {
		b.Fatal(err)
	}
	r.peakRSS, _ = g.PeakRSSBytes()
	r.loadAt = loadAverage()
	grouped, p50, p99, last := times.latencies()
	if grouped != n {
		b.Fatalf("%s: %d of %d pods seen grouped by the benchmark's watch", c.name, grouped, n)
	}
	r.wall, r.p50, r.p99 = last.Sub(start), p50, p99
	r.podGroups, r.assignments = podGroupShapes(ctx, b, ns)
	fmt.Printf("%s at %s: %d pods grouped in %v (p99 %v), %d PodGroups, %.2f API requests per pod (%s); load average %s -> %s\n",
		c.name, lim.name, n, r.wall.Round(time.Second), r.p99.Round(time.Millisecond), len(r.podGroups), r.perPod("rest_client_requests_total"), r.verbs(), r.loadBefore, r.loadAt)
	logErrors(b, g, 3)
	emptyNamespace(ctx, b, ns)
	return r
}

// applyKAIVisibleKarta applies the CustomJob Karta with KAI's index labels run.ai/karta-group,
// -version and -kind of its root kind (KAI v0.17 plugins/karta/hub.go getKartaForGvk lists
// Kartas by them), so that KAI's Karta fallback groups CustomJobs by it; gangmap uses it as ever.
func applyKAIVisibleKarta(ctx context.Context, b *testing.B) {
	k, err := framework.ReadObject("../testdata/customjob-karta.yaml")
	if err != nil {
		b.Fatal(err)
	}
	k.SetLabels(map[string]string{definitions.KAIKartaGroupLabel: "e2e.example.com", definitions.KAIKartaVersionLabel: "v1", definitions.KAIKartaKindLabel: "CustomJob"})
	if err := cp.Client.Patch(ctx, k, client.Apply, client.FieldOwner("gangmap-bench-vs-kai"), client.ForceOwnership); err != nil {
		b.Fatal(err)
	}
}

// waitCaughtUp waits until the grouper made no API request for 10 s with its work queues empty
// (scraped every 5 s), so that what it does after the last pod was grouped is counted too
// (gangmap's repair Events, 5 s after a workload's last repaired pod).
func waitCaughtUp(ctx context.Context, b *testing.B, g *framework.GrouperProcess) {
	last, since := -1.0, time.Now()
	err := wait.PollUntilContextTimeout(ctx, 5*time.Second, 30*time.Minute, true, func(ctx context.Context) (bool, error) {
		m, err := g.MetricsWithin(ctx, scrapeTimeout)
		if err != nil {
			return false, nil
		}
		reqs := framework.Sum(m, "rest_client_requests_total")
		if reqs != last || framework.Sum(m, "workqueue_depth") > 0 {
			last, since = reqs, time.Now()
			return false, nil
		}
		return time.Since(since) >= 10*time.Second, nil
	})
	if err != nil {
		b.Fatalf("the grouper did not settle: %v", err)
	}
}

// emptyNamespace deletes the run's pods, CustomJobs and PodGroups and waits until no pod is left
// (the control plane has no namespace controller: a deleted namespace would keep its pods, and
// the next grouper would list and reconcile them).
func emptyNamespace(ctx context.Context, b *testing.B, ns string) {
	job := &unstructured.Unstructured{}
	job.SetAPIVersion("e2e.example.com/v1")
	job.SetKind("CustomJob")
	for _, o := range []client.Object{&corev1.Pod{}, job, &v2alpha2.PodGroup{}} {
		if err := cp.Client.DeleteAllOf(ctx, o, client.InNamespace(ns), client.GracePeriodSeconds(0)); err != nil {
			b.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		left, err := groupedPodsAny(ctx, ns)
		return err == nil && left == 0, nil
	}); err != nil {
		b.Fatalf("the pods of %s were not deleted: %v", ns, err)
	}
}

// loadAverage is /proc/loadavg's 1, 5 and 15-minute load averages.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
