//go:build e2e

package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
)

// stormRuns numbers the storm benchmark's runs (b.N rounds over the calls), for unique
// namespace names.
var stormRuns atomic.Int64

// stormPods is the size of the workload whose annotations are patched in a loop.
const stormPods = 2000

// BenchmarkQuietNamespaceUnderStorm measures what one namespace's churn costs another: a JobSet
// of 2,000 pods in namespace "storm" has an annotation patched every 20 ms (each patch changes
// the workload's resourceVersion, so gangmap rebuilds its plan and re-enqueues its 2,000 pods:
// podgrouper/runtime/controller's workload watch), while a 2-pod JobSet is created in namespace
// "quiet". It reports the time from the quiet JobSet's first pod create until both of its pods
// carry their pod-group-name, with the storm (quiet-ms) and, before it starts, without
// (idle-ms), the pod controller's queue depth when the quiet pods are created
// (workqueue_depth{name="gangmap-pod-grouper"}), and the pod reconciles per patch of the storm
// (controller_runtime_reconcile_total).
func BenchmarkQuietNamespaceUnderStorm(b *testing.B) {
	ctx := context.Background()
	startGrouper(b)
	var idle, quiet time.Duration
	var depth, reconciles float64
	var patches atomic.Int64
	for range b.N {
		i := stormRuns.Add(1) // namespaces are not removed here (no namespace controller)
		idle += run(b, ctx, fmt.Sprintf("idle-%d", i), true, 2, false)
		storm := fmt.Sprintf("storm-%d", i)
		run(b, ctx, storm, true, stormPods, true)
		before, patchesBefore := gathered(b, "controller_runtime_reconcile_total", "controller", "gangmap-pod-grouper"), patches.Load()
		stop := patchLoop(ctx, b, storm, &patches)
		time.Sleep(2 * time.Second) // the backlog builds
		depth += gathered(b, "workqueue_depth", "name", "gangmap-pod-grouper")
		quiet += run(b, ctx, fmt.Sprintf("quiet-%d", i), true, 2, false)
		elapsed := stop()
		reconciles += (gathered(b, "controller_runtime_reconcile_total", "controller", "gangmap-pod-grouper") - before) / float64(patches.Load()-patchesBefore)
		b.Logf("storm: %d patches in %v", patches.Load()-patchesBefore, elapsed.Round(time.Millisecond))
		_ = cp.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: storm}})
	}
	b.ReportMetric(float64(idle.Milliseconds())/float64(b.N), "idle-ms")
	b.ReportMetric(float64(quiet.Milliseconds())/float64(b.N), "quiet-ms")
	b.ReportMetric(depth/float64(b.N), "storm-queue-depth")
	b.ReportMetric(reconciles/float64(b.N), "reconciles/patch")
}

// patchLoop patches an annotation of the JobSet of namespace ns every 20 ms, counting the
// patches, until the returned stop is called; stop returns how long the loop ran.
func patchLoop(ctx context.Context, b *testing.B, ns string, patches *atomic.Int64) (stop func() time.Duration) {
	js := &unstructured.Unstructured{}
	js.SetAPIVersion("jobset.x-k8s.io/v1alpha2")
	js.SetKind("JobSet")
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("jobset.x-k8s.io/v1alpha2")
	list.SetKind("JobSetList")
	if err := cp.Client.List(ctx, list, client.InNamespace(ns)); err != nil || len(list.Items) != 1 {
		b.Fatalf("the storm's JobSet in %s: %v (%d found)", ns, err, len(list.Items))
	}
	js.SetNamespace(ns)
	js.SetName(list.Items[0].GetName())
	done := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"example.com/storm":"%d"}}}`, n)
			if err := cp.Client.Patch(ctx, js, client.RawPatch(types.MergePatchType, []byte(patch))); err == nil {
				patches.Add(1)
			}
		}
	}()
	return func() time.Duration {
		close(done)
		wg.Wait()
		return time.Since(start)
	}
}

// gathered sums the series of the metric name whose labels include label="value", from the
// in-process grouper's registry (framework.GatherMetrics, as its metrics endpoint serves it).
func gathered(b *testing.B, name, label, value string) float64 {
	m, err := framework.GatherMetrics()
	if err != nil {
		b.Fatal(err)
	}
	sel := fmt.Sprintf("%s=%q", label, value)
	if !slices.ContainsFunc(slices.Collect(maps.Keys(m)), func(k string) bool { return strings.HasPrefix(k, name+"{") && strings.Contains(k, sel) }) {
		b.Fatalf("no %s{%s}", name, sel)
	}
	return framework.Sum(m, name, sel)
}
