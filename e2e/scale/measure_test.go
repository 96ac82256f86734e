//go:build e2e

package scale

import (
	"context"
	"fmt"
	"io"
	"k8s.io/apimachinery/pkg/util/wait"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gangmap/gangmap/e2e/framework"
)

// result is what one benchmark run measured.
type result struct {
	pods, workloads int
	webhook         bool
	// admitted is how many pods carried a pod-group-name in their create's response.
	admitted int64
	// created, grouped and caughtUp are from the first create until every pod was created, until
	// every pod carried its pod-group-name and every PodGroup existed, and until the grouper's
	// work queues were first seen empty after that.
	created, grouped, caughtUp time.Duration
	// idle and done are the grouper's metrics before the first create and once caught up.
	idle, done map[string]float64
	// rss and peakRSS are the resident set once caught up and the kernel's high-water mark
	// (VmHWM) when every pod was grouped; hwm is the high-water mark once caught up, after the
	// final scrape of its metrics (the run's peak: a scrape of 10,000 workloads' series allocates
	// tens of MB).
	rss, peakRSS, hwm int64
	// anon and file split rss into anonymous pages (bounded by the Go memory limit) and
	// file-backed ones (the binary's pages, which the limit does not count).
	anon, file int64
	// heapBefore and heapAfter are the live heap before the first create and once caught up.
	heapBefore, heapAfter float64
}

// report logs the run and reports its metrics.
func (r *result) report(b *testing.B) {
	mode := "webhook (pods grouped at admission)"
	if !r.webhook {
		mode = "no webhook (the controller repairs every pod)"
	}
	calls := r.delta("rest_client_requests_total")
	cpu := r.delta("process_cpu_seconds_total")
	b.Logf("%s: %d pods of %d CustomJobs created in %v, %d of them with a pod-group-name in the create's response; all grouped after %v, the grouper's queues empty after %v",
		mode, r.pods, r.workloads, r.created.Round(time.Second), r.admitted, r.grouped.Round(time.Second), r.caughtUp.Round(time.Second))
	b.Logf("grouper: %.2f API requests per pod (%s), RSS %.0f MiB (anonymous %.0f, file-backed %.0f; high-water %.0f MiB when all were grouped, %.0f MiB after the last scrape), live heap %.0f MiB (%.0f MiB before the pods), %.0f B heap per pod, CPU %.0f s (%.2f ms per pod)",
		calls/float64(r.pods), r.perVerb(), mib(float64(r.rss)), mib(float64(r.anon)), mib(float64(r.file)),
		mib(float64(r.peakRSS)), mib(float64(r.hwm)), mib(r.heapAfter), mib(r.heapBefore),
		(r.heapAfter-r.heapBefore)/float64(r.pods), cpu, 1000*cpu/float64(r.pods))
	for _, k := range r.grew("gangmap_webhook_admissions_total", "gangmap_webhook_errors_total", "gangmap_plan_cache_lookups_total", "rest_client_requests_total") {
		b.Logf("  %s +%.0f", k, r.done[k]-r.idle[k])
	}
	b.ReportMetric(r.grouped.Seconds(), "s-to-group-all")
	b.ReportMetric(float64(int64(r.pods)-r.admitted), "pods-ungrouped-at-creation")
	b.ReportMetric(calls/float64(r.pods), "apicalls/pod")
	b.ReportMetric(mib(float64(r.rss)), "RSS-MiB")
	b.ReportMetric(mib(float64(r.peakRSS)), "peak-RSS-MiB")
	b.ReportMetric(mib(float64(r.hwm)), "hwm-RSS-MiB")
	b.ReportMetric(mib(float64(r.anon)), "anon-RSS-MiB")
	b.ReportMetric(mib(float64(r.file)), "file-RSS-MiB")
	b.ReportMetric(mib(r.heapAfter), "heap-MiB")
	b.ReportMetric((r.heapAfter-r.heapBefore)/float64(r.pods), "heap-bytes/pod")
}

func mib(v float64) float64 { return v / (1 << 20) }

// delta is how much the samples named name grew over the run.
func (r *result) delta(name string) float64 {
	return framework.Sum(r.done, name) - framework.Sum(r.idle, name)
}

// grew lists the samples of the named metrics that grew over the run, sorted.
func (r *result) grew(names ...string) []string {
	var out []string
	for k, v := range r.done {
		base, _, _ := strings.Cut(k, "{")
		for _, n := range names {
			if base == n && v > r.idle[k] {
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// perVerb is the API requests per pod by HTTP method, each with its requests answered other
// than 2xx by code, e.g. "POST 0.33 (409: 0.14)".
func (r *result) perVerb() string {
	byVerb, byCode := map[string]float64{}, map[string]map[string]float64{}
	for _, k := range r.grew("rest_client_requests_total") {
		d := r.done[k] - r.idle[k]
		verb, code := label(k, "method"), label(k, "code")
		byVerb[verb] += d
		if !strings.HasPrefix(code, "2") {
			if byCode[verb] == nil {
				byCode[verb] = map[string]float64{}
			}
			byCode[verb][code] += d
		}
	}
	var verbs []string
	for v := range byVerb {
		verbs = append(verbs, v)
	}
	sort.Strings(verbs)
	var parts []string
	for _, v := range verbs {
		s := fmt.Sprintf("%s %.2f", v, byVerb[v]/float64(r.pods))
		var codes []string
		for c, d := range byCode[v] {
			codes = append(codes, fmt.Sprintf("%s: %.2f", c, d/float64(r.pods)))
		}
		if len(codes) > 0 {
			sort.Strings(codes)
			s += " (" + strings.Join(codes, ", ") + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// label is the value of the label key in a sample's printed name (`name{key="value",...}`).
func label(sample, key string) string {
	_, rest, ok := strings.Cut(sample, key+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// liveHeap is the grouper's live heap: go_memstats_heap_alloc_bytes right after a full
// collection, forced through pprof's /debug/pprof/heap?gc=1; the lowest of three (5s apart).
func liveHeap(ctx context.Context, b *testing.B, g *framework.GrouperProcess, pprofAddr string) float64 {
	low := -1.0
	for i := 0; i < 3; i++ {
		if i > 0 {
			time.Sleep(5 * time.Second)
		}
		if _, err := heapProfile(ctx, pprofAddr); err != nil {
			b.Fatal(err)
		}
		mt, err := g.MetricsWithin(ctx, scrapeTimeout)
		if err != nil {
			b.Fatal(err)
		}
		if v := framework.Sum(mt, "go_memstats_heap_alloc_bytes"); low < 0 || v < low {
			low = v
		}
	}
	return low
}

// scrapeTimeout is the benchmark's timeout for one scrape of the grouper's metrics (Prometheus'
// default scrape timeout is 10 s; a loaded 2-core machine serving 11 MB needs more).
const scrapeTimeout = time.Minute

// waitQueuesEmpty waits (up to 30 minutes) until the grouper's work queues hold nothing
// (workqueue_depth of every controller is 0) and returns when it saw that.
func waitQueuesEmpty(ctx context.Context, b *testing.B, g *framework.GrouperProcess) time.Time {
	var at time.Time
	// Scraped every 10 s with a minute's timeout, as Prometheus would: at 10,000 workloads the
	// metrics are about 11 MB, and scraping them back to back (every 100 ms, each abandoned after
	// 5 s but still served) made the grouper's resident set and CPU the harness's, not its own.
	err := wait.PollUntilContextTimeout(ctx, 10*time.Second, 30*time.Minute, true, func(ctx context.Context) (bool, error) {
		mt, err := g.MetricsWithin(ctx, scrapeTimeout)
		if err != nil || framework.Sum(mt, "workqueue_depth") > 0 {
			return false, nil
		}
		at = time.Now()
		return true, nil
	})
	if err != nil {
		b.Fatalf("the grouper's work queues did not empty: %v", err)
	}
	return at
}

// heapProfile reads the grouper's heap profile, taken after a forced GC.
func heapProfile(ctx context.Context, pprofAddr string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pprofAddr+"/debug/pprof/heap?gc=1", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("heap profile: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("heap profile: %s %v", resp.Status, err)
	}
	return data, nil
}

// writeHeapProfile writes the grouper's heap profile, taken after a GC, to
// GANGMAP_SCALE_HEAP_PROFILE (read it with `go tool pprof -sample_index=inuse_space`), if set.
func writeHeapProfile(ctx context.Context, b *testing.B, pprofAddr string) {
	path := os.Getenv("GANGMAP_SCALE_HEAP_PROFILE")
	if path == "" {
		return
	}
	data, err := heapProfile(ctx, pprofAddr)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
}

// logErrors logs the first max lines of the grouper's log at level error (JSON logs), so that a
// run whose pods were not all grouped at admission says why (e.g. a decision past the webhook's
// deadline), and how many there were.
func logErrors(b *testing.B, g *framework.GrouperProcess, max int) {
	data, err := os.ReadFile(g.LogPath)
	if err != nil {
		b.Logf("grouper log: %v", err)
		return
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, `"level":"error"`) {
			continue
		}
		if n < max {
			if len(line) > 600 {
				line = line[:600] + "..."
			}
			b.Logf("  grouper error: %s", line)
		}
		n++
	}
	b.Logf("grouper log: %d lines at level error", n)
}
