//go:build e2e

package scale

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/kaikeys"
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
// process (its defaults: QPS 50, burst 300, 10 reconciles at once; no webhook, so the pod
// controller groups every pod). It reports the time from the first pod create until every pod
// carries its pod-group-name, the grouper's API requests per pod (client-go's
// rest_client_requests_total), its resident set (now and peak) and heap, and the heap per cached
// pod: the growth of the grouper's live heap (go_memstats_heap_alloc_bytes, lowest over 130s once
// idle, which spans a forced GC) over the pods, which includes the workloads, PodGroups and plans cached with
// them. Run it once: `make bench-scale` (-benchtime 1x).
func BenchmarkGroupScale(b *testing.B) {
	ctx := context.Background()
	n := envInt(b, "GANGMAP_SCALE_PODS", 20000)
	per := envInt(b, "GANGMAP_SCALE_PODS_PER_WORKLOAD", 10)
	if per < 2 || n%per != 0 {
		b.Fatalf("GANGMAP_SCALE_PODS (%d) must be a multiple of GANGMAP_SCALE_PODS_PER_WORKLOAD (%d), at least 2", n, per)
	}
	m := n / per
	for i := 0; i < b.N; i++ {
		ns := fmt.Sprintf("scale-%d", i)
		if err := cp.CreateNamespace(ctx, ns); err != nil {
			b.Fatal(err)
		}
		if _, err := cp.ApplyFile(ctx, "../testdata/customjob-karta.yaml", ""); err != nil {
			b.Fatal(err)
		}
		args, pprofAddr := grouperArgs(b)
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
		idle, err := g.Metrics(ctx)
		if err != nil {
			b.Fatal(err)
		}
		heapBefore := lowestHeap(ctx, b, g)

		peak := samplePeakRSS(g)
		start := time.Now()
		if err := createWorkloads(ctx, ns, m, per); err != nil {
			b.Fatal(err)
		}
		createdIn := time.Since(start)
		// Each poll lists the metadata of every pod (about 100 MB of JSON the API server encodes at
		// 100,000 pods), so polls come every 3s per 20,000 pods: the time to group all is known to
		// within that.
		poll := max(3*time.Second, time.Duration(n/20000)*3*time.Second)
		if err := wait.PollUntilContextTimeout(ctx, poll, 2*time.Hour, true, func(ctx context.Context) (bool, error) {
			grouped, err := groupedPods(ctx, ns)
			return grouped == n, err
		}); err != nil {
			b.Fatalf("not every pod was grouped: %v", err)
		}
		groupedIn := time.Since(start)
		peakRSS := peak()
		done, err := g.Metrics(ctx)
		if err != nil {
			b.Fatal(err)
		}
		rss, _ := g.RSSBytes()
		heapAfter := lowestHeap(ctx, b, g)
		writeHeapProfile(ctx, b, pprofAddr)
		calls := framework.Sum(done, "rest_client_requests_total") - framework.Sum(idle, "rest_client_requests_total")
		b.Logf("%d pods of %d CustomJobs created in %v, all grouped after %v; grouper: %.2f API requests per pod, RSS %.0f MiB (peak %.0f MiB), live heap %.0f MiB (%.0f MiB before the pods)",
			n, m, createdIn.Round(time.Second), groupedIn.Round(time.Second), calls/float64(n), float64(rss)/(1<<20), float64(peakRSS)/(1<<20), heapAfter/(1<<20), heapBefore/(1<<20))
		for k, v := range done {
			if d := v - idle[k]; d > 0 && len(k) > len("rest_client_requests_total") && k[:len("rest_client_requests_total")] == "rest_client_requests_total" {
				b.Logf("  %s +%.0f", k, d)
			}
		}
		b.ReportMetric(groupedIn.Seconds(), "s-to-group-all")
		b.ReportMetric(calls/float64(n), "apicalls/pod")
		b.ReportMetric(float64(rss)/(1<<20), "RSS-MiB")
		b.ReportMetric(float64(peakRSS)/(1<<20), "peak-RSS-MiB")
		b.ReportMetric(heapAfter/(1<<20), "heap-MiB")
		b.ReportMetric((heapAfter-heapBefore)/float64(n), "heap-bytes/pod")
		_ = g.Stop()
		_ = cp.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
}

// grouperArgs are the grouper's extra arguments: GANGMAP_SCALE_GROUPER_ARGS (space-separated,
// e.g. "--qps=500 --burst=1000" to lift the client rate limit the default run is bound by),
// --memory-limit GANGMAP_SCALE_MEMORY_LIMIT unless those arguments set one (the Makefile's
// default 230Mi: the soft limit a container limited to 256 MiB gets by default, so that the
// resident set follows the live heap rather than twice it) and, when GANGMAP_SCALE_HEAP_PROFILE
// names a file, --pprof-bind-address on a free localhost port, returned as pprofAddr ("" without
// a profile).
func grouperArgs(b *testing.B) (args []string, pprofAddr string) {
	args = strings.Fields(os.Getenv("GANGMAP_SCALE_GROUPER_ARGS"))
	if limit := os.Getenv("GANGMAP_SCALE_MEMORY_LIMIT"); limit != "" && !strings.Contains(strings.Join(args, " "), "--memory-limit") {
		args = append(args, "--memory-limit="+limit)
	}
	b.Logf("grouper arguments: %q", args)
	if os.Getenv("GANGMAP_SCALE_HEAP_PROFILE") == "" {
		return args, ""
	}
	port, err := framework.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	pprofAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return append(args, "--pprof-bind-address", pprofAddr), pprofAddr
}

// writeHeapProfile writes the grouper's heap profile, taken after a GC, to
// GANGMAP_SCALE_HEAP_PROFILE (read it with `go tool pprof -sample_index=inuse_space`).
func writeHeapProfile(ctx context.Context, b *testing.B, pprofAddr string) {
	if pprofAddr == "" {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pprofAddr+"/debug/pprof/heap?gc=1", nil)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatalf("heap profile: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("heap profile: %s %v", resp.Status, err)
	}
	if err := os.WriteFile(os.Getenv("GANGMAP_SCALE_HEAP_PROFILE"), data, 0o644); err != nil {
		b.Fatal(err)
	}
}

// createWorkloads creates m CustomJobs of per pods each in ns, and their pods (what the
// CustomJob's operator would create), eight workloads at a time.
func createWorkloads(ctx context.Context, ns string, m, per int) error {
	work := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for k := 0; k < 8; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range work {
				if err := createWorkload(ctx, ns, fmt.Sprintf("w%05d", w), per); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
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
	return err
}

func createWorkload(ctx context.Context, ns, name string, per int) error {
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
			if err := cp.Client.Create(ctx, p); err != nil {
				return fmt.Errorf("pod %s: %w", p.Name, err)
			}
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

// lowestHeap samples the grouper's go_memstats_heap_alloc_bytes every 5s for 130s and returns
// the lowest: an idle process allocates too little to start a GC, but the Go runtime forces one
// at least every 2 minutes, so the lowest sample is the live heap after a full collection.
func lowestHeap(ctx context.Context, b *testing.B, g *framework.GrouperProcess) float64 {
	low := -1.0
	for i := 0; i <= 26; i++ {
		mt, err := g.Metrics(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if v := framework.Sum(mt, "go_memstats_heap_alloc_bytes"); low < 0 || v < low {
			low = v
		}
		time.Sleep(5 * time.Second)
	}
	return low
}

// samplePeakRSS samples the grouper's peak resident set (VmHWM) every second until the returned
// function is called, which returns the highest seen.
func samplePeakRSS(g *framework.GrouperProcess) func() int64 {
	var mu sync.Mutex
	var peak int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if v, err := g.PeakRSSBytes(); err == nil {
				mu.Lock()
				peak = max(peak, v)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}
