//go:build e2e

package scale

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// envInt reads a positive integer from the environment, else def.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// BenchmarkGroupScale creates GANGMAP_SCALE_PODS pods (default 20,000) of CustomJobs of
// GANGMAP_SCALE_PODS_PER_WORKLOAD pods each (default 10: 1 coordinator and 9 workers, one gang
// each; 2,000 workloads by default) on a real control plane, with gangmap-grouper running as a
// process (its defaults: QPS 50, burst 300, 10 reconciles at once). By default the grouper serves
// its admission webhook, which the API server calls on every pod create as the chart installs it
// (see setUpWebhook), so pods carry their pod-group-name from creation; GANGMAP_SCALE_WEBHOOK=0
// runs it without the webhook, so its pod controller repairs every pod after creation. It reports
// the time from the first pod create until every pod carries its pod-group-name and every
// workload's PodGroup exists, how many pods carried it in the create's response, the grouper's API
// requests per pod by verb (client-go's rest_client_requests_total), its resident set (at the end, split
// into anonymous and file-backed pages, and the kernel's high-water mark when every pod was
// grouped and after the final metrics scrape), CPU and live heap, and the heap per cached pod: the growth of the live heap
// (go_memstats_heap_alloc_bytes after a forced GC) over the pods, which includes the workloads,
// PodGroups and plans cached with them. Run it once: `make bench-scale` (-benchtime 1x).
func BenchmarkGroupScale(b *testing.B) {
	ctx := context.Background()
	n := envInt(b, "GANGMAP_SCALE_PODS", 20000)
	per := envInt(b, "GANGMAP_SCALE_PODS_PER_WORKLOAD", 10)
	if per < 2 || n%per != 0 {
		b.Fatalf("GANGMAP_SCALE_PODS (%d) must be a multiple of GANGMAP_SCALE_PODS_PER_WORKLOAD (%d), at least 2", n, per)
	}
	m := n / per
	webhookOn := webhookMode(b)
	for i := 0; i < b.N; i++ {
		ns := fmt.Sprintf("scale-%d", i)
		if err := cp.CreateNamespace(ctx, ns); err != nil {
			b.Fatal(err)
		}
		if _, err := cp.ApplyFile(ctx, "../testdata/customjob-karta.yaml", ""); err != nil {
			b.Fatal(err)
		}
		g, pprofAddr := startGrouper(ctx, b, webhookOn)
		idle, err := g.Metrics(ctx)
		if err != nil {
			b.Fatal(err)
		}
		r := result{pods: n, workloads: m, webhook: webhookOn, heapBefore: liveHeap(ctx, b, g, pprofAddr)}

		start := time.Now()
		if r.admitted, err = createWorkloads(ctx, ns, m, per, nil); err != nil {
			b.Fatal(err)
		}
		r.created = time.Since(start)
		waitGrouped(ctx, b, ns, n, m)
		r.grouped = time.Since(start)
		r.peakRSS, _ = g.PeakRSSBytes()
		r.caughtUp = waitQueuesEmpty(ctx, b, g).Sub(start)
		if r.done, err = g.MetricsWithin(ctx, scrapeTimeout); err != nil {
			b.Fatal(err)
		}
		r.idle = idle
		r.rss, _ = g.RSSBytes()
		r.hwm, _ = g.PeakRSSBytes()
		if r.anon, r.file, err = g.ResidentParts(); err != nil {
			b.Fatal(err)
		}
		r.heapAfter = liveHeap(ctx, b, g, pprofAddr)
		writeHeapProfile(ctx, b, pprofAddr)
		r.report(b)
		logErrors(b, g, 5)
		_ = g.Stop()
		if webhookOn {
			tearDownWebhook(ctx)
		}
		_ = cp.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
}

// startGrouper starts the grouper process with grouperArgs and extra (and, with the webhook, the
// chart's webhook flags and configuration), waits until it has loaded the CustomJob definition and, with
// the webhook, until the API server's calls to it mutate pods.
func startGrouper(ctx context.Context, b *testing.B, webhookOn bool, extra ...string) (*framework.GrouperProcess, string) {
	args, pprofAddr := grouperArgs(b)
	args = append(args, extra...)
	if webhookOn {
		args = append(args, setUpWebhook(ctx, b)...)
	}
	b.Logf("grouper arguments: %q", args)
	g, err := framework.StartGrouperProcess(ctx, grouperBin, cp.Kubeconfig, workDir, args...)
	if err != nil {
		b.Fatal(err)
	}
	if err := framework.WaitFor(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		mt, err := g.Metrics(ctx)
		return err == nil && framework.Sum(mt, "gangmap_definitions", `source="cluster"`) >= 1, nil
	}); err != nil {
		b.Fatalf("the grouper did not load the CustomJob definition: %v", err)
	}
	if webhookOn {
		waitWebhookServes(ctx, b)
	}
	return g, pprofAddr
}

// waitGrouped waits until every one of the n pods of ns carries a pod-group-name and the m
// workloads' PodGroups exist. Each poll lists the metadata of every pod (about 100 MB of JSON the
// API server encodes at 100,000 pods), so polls come every 3s per 20,000 pods: the time to group
// all is known to within that.
func waitGrouped(ctx context.Context, b *testing.B, ns string, n, m int) {
	poll := max(3*time.Second, time.Duration(n/20000)*3*time.Second)
	if err := wait.PollUntilContextTimeout(ctx, poll, 2*time.Hour, true, func(ctx context.Context) (bool, error) {
		grouped, err := groupedPods(ctx, ns)
		if err != nil || grouped < n {
			return false, err
		}
		groups, err := podGroups(ctx, ns)
		return groups >= m, err
	}); err != nil {
		b.Fatalf("not every pod was grouped: %v", err)
	}
}

// grouperArgs are the grouper's extra arguments: GANGMAP_SCALE_GROUPER_ARGS (space-separated,
// e.g. "--qps=500 --burst=1000" to lift the client rate limit the default run is bound by),
// --memory-limit GANGMAP_SCALE_MEMORY_LIMIT unless those arguments set one (the Makefile's
// default 176Mi: the soft limit a container limited to 256 MiB gets by default, so that the
// resident set follows the live heap rather than twice it) and --pprof-bind-address on a free
// localhost port, returned as pprofAddr: liveHeap forces a GC through it, and writeHeapProfile
// reads the heap profile from it when GANGMAP_SCALE_HEAP_PROFILE names a file.
func grouperArgs(b *testing.B) (args []string, pprofAddr string) {
	args = strings.Fields(os.Getenv("GANGMAP_SCALE_GROUPER_ARGS"))
	if limit := os.Getenv("GANGMAP_SCALE_MEMORY_LIMIT"); limit != "" && !strings.Contains(strings.Join(args, " "), "--memory-limit") {
		args = append(args, "--memory-limit="+limit)
	}
	port, err := framework.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	pprofAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return append(args, "--pprof-bind-address", pprofAddr), pprofAddr
}

// createWorkloads creates m CustomJobs of per pods each in ns, and their pods (what the
// CustomJob's operator would create), eight workloads at a time. It returns how many pods
// carried a pod-group-name in the create's response (set by the webhook at admission). times,
// when not nil, gets each pod's create (podTimes.created).
func createWorkloads(ctx context.Context, ns string, m, per int, times *podTimes) (admitted int64, err error) {
	var grouped atomic.Int64
	work := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for k := 0; k < 8; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range work {
				if err := createWorkload(ctx, ns, fmt.Sprintf("w%05d", w), per, &grouped, times); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
feed:
	for w := 0; w < m; w++ {
		select {
		case work <- w:
		case err = <-errs:
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return grouped.Load(), err
}

// createWorkload creates the CustomJob name and its pods, adding to grouped each pod that came
// back from its create with a pod-group-name, and telling times (when not nil) of each create.
func createWorkload(ctx context.Context, ns, name string, per int, grouped *atomic.Int64, times *podTimes) error {
	job, err := workload(ns, name, int64(per-1))
	if err != nil {
		return err
	}
	if err := cp.Client.Create(ctx, job); err != nil {
		return err
	}
	for _, role := range []string{"coordinator", "worker"} {
		r, _, _ := unstructured.NestedInt64(job.Object, "spec", role, "replicas")
		for j := 0; j < int(r); j++ {
			p, err := framework.RolePod(job, role, j)
			if err != nil {
				return err
			}
			start := time.Now()
			if err := cp.Client.Create(ctx, p); err != nil {
				return fmt.Errorf("pod %s: %w", p.Name, err)
			}
			admitted := p.Annotations[kaikeys.PodGroupName] != ""
			if admitted {
				grouped.Add(1)
			}
			times.created(p.Name, start, admitted)
		}
	}
	return nil
}

// workload is ../testdata/customjob.yaml as name in ns with the given worker replicas (not
// created).
func workload(ns, name string, workers int64) (*unstructured.Unstructured, error) {
	w, err := framework.ReadObject("../testdata/customjob.yaml")
	if err != nil {
		return nil, err
	}
	w.SetName(name)
	w.SetNamespace(ns)
	return w, unstructured.SetNestedField(w.Object, workers, "spec", "worker", "replicas")
}

// groupedPods counts the pods of ns carrying a pod-group-name, listing metadata only.
func groupedPods(ctx context.Context, ns string) (int, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "PodList"})
	if err := cp.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	n := 0
	for _, p := range list.Items {
		if p.Annotations[kaikeys.PodGroupName] != "" {
			n++
		}
	}
	return n, nil
}

// podGroups counts the PodGroups of ns, listing metadata only.
func podGroups(ctx context.Context, ns string) (int, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(v2alpha2.SchemeGroupVersion.WithKind("PodGroupList"))
	if err := cp.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	return len(list.Items), nil
}
