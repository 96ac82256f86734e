//go:build e2e

// Package bench measures gangmap's grouping throughput on a real control plane
// (`make bench-e2e`): a 1,000-pod JobSet grouped by the grouper, against a baseline that only
// performs the same pod patches with a bare client.
package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	// A discarding logger: without one, controller-runtime's delegating logger keeps every
	// WithValues promise (it showed as the largest in-use heap item of this benchmark).
	ctrl.SetLogger(logr.Discard())
	var err error
	cp, err = framework.Start("../testdata/crds/jobset.x-k8s.io_jobsets.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = cp.Stop()
	os.Exit(code)
}

// counter counts the grouper's API requests by verb and resource.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		key := r.Method + " " + resourceOf(r.URL.Path)
		if r.URL.Query().Get("watch") == "true" {
			key = "WATCH " + resourceOf(r.URL.Path)
		}
		c.mu.Lock()
		c.n[key]++
		c.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// resourceOf reduces an API path to its resource (pods, podgroups, jobsets, events, ...).
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if i > 0 && parts[i-1] == "namespaces" {
			continue
		}
		if p := parts[i]; p != "" && (i == len(parts)-1 || i == len(parts)-2) && !strings.Contains(p, "-") {
			return p
		}
	}
	return path
}

const pods = 1000

// BenchmarkGroupThousandPods creates a JobSet of 1,000 pods (1 leader + 999 workers) and
// measures the time from the first pod create until every pod carries its pod-group-name,
// against a baseline in the same run that creates the same pods and patches the same
// annotation with a bare client. It reports the ratio (goal <= 1.2), the grouper's API calls
// per pod and per gang, and the process's peak RSS.
func BenchmarkGroupThousandPods(b *testing.B) {
	ctx := context.Background()
	calls := startGrouper(b)
	var grouped, baseline time.Duration
	for i := 0; i < b.N; i++ {
		baseline += run(b, ctx, fmt.Sprintf("baseline-%d", i), false, pods, false)
		before := snapshot(calls)
		grouped += run(b, ctx, fmt.Sprintf("grouped-%d", i), true, pods, false)
		after := snapshot(calls)
		if i == 0 {
			for k, v := range after {
				if d := v - before[k]; d > 0 {
					b.Logf("grouper API calls for one 1000-pod gang: %-28s %5d (%.3f per pod)", k, d, float64(d)/pods)
				}
			}
			b.ReportMetric(float64(sum(after)-sum(before))/pods, "apicalls/pod")
			b.ReportMetric(float64(after["POST podgroups"]+after["PUT podgroups"]-before["POST podgroups"]-before["PUT podgroups"]), "podgroup-writes/gang")
		}
	}
	b.ReportMetric(grouped.Seconds()/float64(b.N), "s/gang")
	b.ReportMetric(baseline.Seconds()/float64(b.N), "baseline-s/gang")
	b.ReportMetric(grouped.Seconds()/baseline.Seconds(), "ratio")
	b.ReportMetric(float64(peakRSSKiB())/1024, "peak-RSS-MiB")
}

var (
	grouperOnce  sync.Once
	grouperCalls *counter
	grouperErr   error
)

// startGrouper starts, once for all the benchmarks of the run, the in-process grouper (built-in
// catalog, JobSet grouped by gangmap's definition, the shipped client rate limit: 50 QPS, burst
// 300) and returns the counter of its API requests.
func startGrouper(b *testing.B) *counter {
	grouperOnce.Do(func() {
		grouperCalls = &counter{n: map[string]int{}}
		cfg := rest.CopyConfig(cp.Config)
		cfg.WrapTransport = grouperCalls.wrap
		o := app.DefaultOptions()
		o.NativeKindsRemove = []string{"jobset.x-k8s.io/v1alpha2/JobSet"}
		o.MetricsAddr, o.ProbeAddr = "0", "0"
		mgrCP := *cp
		mgrCP.Config = cfg
		_, grouperErr = mgrCP.StartGrouper(context.Background(), o)
	})
	if grouperErr != nil {
		b.Fatal(grouperErr)
	}
	return grouperCalls
}

func snapshot(c *counter) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

func sum(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// run creates a namespace with the seed JobSet scaled to n pods (a leader and n-1 workers) and
// returns the time until every pod has a pod-group-name: set by the grouper (grouped) or patched
// by this client. The namespace is deleted at the end unless keep.
func run(b *testing.B, ctx context.Context, ns string, grouped bool, n int, keep bool) time.Duration {
	if err := cp.CreateNamespace(ctx, ns); err != nil {
		b.Fatal(err)
	}
	objs, err := cp.ApplyFile(ctx, "../../examples/jobset-leader-workers.yaml", ns)
	if err != nil {
		b.Fatal(err)
	}
	js := objs[0]
	rjs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	rjs[1].(map[string]any)["replicas"] = int64(n - 1)
	if err := unstructured.SetNestedSlice(js.Object, rjs, "spec", "replicatedJobs"); err != nil {
		b.Fatal(err)
	}
	if err := cp.Client.Update(ctx, js); err != nil {
		b.Fatal(err)
	}
	var done atomic.Int64
	start := time.Now()
	if !grouped {
		// The baseline client patches each pod as soon as it is created, as the grouper would.
		var wg sync.WaitGroup
		created := make(chan *corev1.Pod, n)
		for w := 0; w < 10; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for p := range created {
					patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:"pg-baseline"}}}`, kaikeys.PodGroupName))
					if err := cp.Client.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err == nil {
						done.Add(1)
					}
				}
			}()
		}
		podList, err := cp.RunJobSet(ctx, js)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range podList {
			created <- p
		}
		close(created)
		wg.Wait()
	} else if _, err := cp.RunJobSet(ctx, js); err != nil {
		b.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		var list corev1.PodList
		if err := cp.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		annotated := 0
		for _, p := range list.Items {
			if p.Annotations[kaikeys.PodGroupName] != "" {
				annotated++
			}
		}
		return annotated == n, nil
	})
	if err != nil {
		b.Fatalf("%s: not every pod got its PodGroup: %v", ns, err)
	}
	elapsed := time.Since(start)
	if !keep {
		_ = cp.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	return elapsed
}

// peakRSSKiB reads this process's peak resident set (VmHWM); the grouper runs in-process.
func peakRSSKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			var kib int64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")), "%d", &kib)
			return kib
		}
	}
	return 0
}
