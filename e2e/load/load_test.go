//go:build e2e

package load

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

const (
	workloads    = 50
	podsPerWork  = 100 // 1 coordinator + 99 workers
	totalPods    = workloads * podsPerWork
	groupWithin  = 4 * time.Minute
	peakRSSBound = 1 << 30 // 1 GiB
)

// loopJQ compiles (no forbidden function) but never terminates: every evaluation runs into the
// 1s timeout.
const loopJQ = "until(false; .)"

// TestLoad5000Pods: 50 CustomJobs of 100 pods each (one gang each: coordinator 1, worker 99) are
// created at once, with pods of two kinds whose definitions are broken created first: BrokenJob
// (its jq does not compile: the definition is invalid, its pods are not gangmap's) and LoopJob (its
// replicasPath compiles but loops: every plan of it times out after 1s). All 5000 CustomJob pods
// are grouped within groupWithin, the grouper's peak RSS stays under 1 GiB, and no pod of the
// broken kinds is grouped.
func TestLoad5000Pods(t *testing.T) {
	ctx := context.Background()
	ns, brokenNS := "load", "load-broken"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	require.NoError(t, cp.CreateNamespace(ctx, brokenNS))

	// Definitions: the CustomJob one, one that does not compile, one that loops.
	_, err := cp.ApplyFile(ctx, "../testdata/customjob-karta.yaml", "")
	require.NoError(t, err)
	_, err = cp.ApplyFile(ctx, "../testdata/broken-karta.yaml", "")
	require.NoError(t, err)
	loop, err := framework.KartaFor("../testdata/customjob-karta.yaml", "loop-example-com-v1-loopjob", "loop.example.com", "LoopJob")
	require.NoError(t, err)
	children, _, _ := unstructured.NestedSlice(loop.Object, "spec", "structureDefinition", "childComponents")
	require.NoError(t, unstructured.SetNestedField(children[1].(map[string]any), loopJQ, "scaleDefinition", "replicasPath"))
	require.NoError(t, unstructured.SetNestedSlice(loop.Object, children, "spec", "structureDefinition", "childComponents"))
	require.NoError(t, cp.Client.Create(ctx, loop))

	// The grouper's defaults (client QPS 50, burst 300; 10 reconciles at once): about one API
	// call per pod (the pod patch; owner reads are cached per UID), so QPS caps it near 50 pods/s.
	g, err := framework.StartGrouperProcess(ctx, grouperBin, cp.Kubeconfig, workDir)
	require.NoError(t, err)
	defer func() { _ = g.Stop() }()
	require.NoError(t, framework.WaitFor(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		m, err := g.Metrics(ctx)
		return err == nil && framework.Sum(m, "gangmap_definitions", `source="cluster"`) >= 3, nil
	}), "the grouper loaded the three cluster definitions")

	// Pods of the broken kinds first: they are in the grouper's queue before the others.
	var broken []*corev1.Pod
	for i, kind := range []struct{ group, kind string }{{"broken.example.com", "BrokenJob"}, {"loop.example.com", "LoopJob"}, {"loop.example.com", "LoopJob"}} {
		w := workload(t, brokenNS, fmt.Sprintf("%s-%d", strings.ToLower(kind.kind), i), 4)
		w.SetAPIVersion(kind.group + "/v1")
		w.SetKind(kind.kind)
		require.NoError(t, cp.Client.Create(ctx, w))
		ps, err := cp.RunRoles(ctx, w, 4, "coordinator", "worker")
		require.NoError(t, err)
		broken = append(broken, ps...)
	}

	// Peak memory: VmHWM is the kernel's high-water mark, sampled until the end.
	var peak int64
	var mu sync.Mutex
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if v, err := g.PeakRSSBytes(); err == nil {
				mu.Lock()
				peak = max(peak, v)
				mu.Unlock()
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()

	start := time.Now()
	jobs := make([]*unstructured.Unstructured, workloads)
	var pods []*corev1.Pod
	for i := range jobs {
		jobs[i] = workload(t, ns, fmt.Sprintf("w%02d", i), podsPerWork-1)
		require.NoError(t, cp.Client.Create(ctx, jobs[i]))
		for _, role := range []string{"coordinator", "worker"} {
			n, _, _ := unstructured.NestedInt64(jobs[i].Object, "spec", role, "replicas")
			for j := 0; j < int(n); j++ {
				p, err := framework.RolePod(jobs[i], role, j)
				require.NoError(t, err)
				pods = append(pods, p)
			}
		}
	}
	require.NoError(t, cp.CreatePods(ctx, pods, 16))
	createdIn := time.Since(start)

	var firstDone time.Duration
	var all []corev1.Pod
	err = framework.WaitFor(ctx, groupWithin, func(ctx context.Context) (bool, error) {
		var err error
		if all, err = cp.Pods(ctx, ns); err != nil {
			return false, err
		}
		done := map[string]int{}
		n := 0
		for _, p := range all {
			if p.Annotations[kaikeys.PodGroupName] != "" {
				n++
				done[p.OwnerReferences[0].Name]++
			}
		}
		if firstDone == 0 {
			for _, c := range done {
				if c == podsPerWork {
					firstDone = time.Since(start)
				}
			}
		}
		return n == totalPods, nil
	})
	groupedIn := time.Since(start)
	close(stopSampling)
	<-sampled
	if v, err := g.PeakRSSBytes(); err == nil {
		peak = max(peak, v)
	}
	m, merr := g.Metrics(ctx)
	require.NoError(t, merr)
	t.Logf("%d pods of %d workloads created in %v; the first workload fully grouped after %v, all %d pods after %v",
		totalPods, workloads, createdIn.Round(10*time.Millisecond), firstDone.Round(10*time.Millisecond), totalPods, groupedIn.Round(10*time.Millisecond))
	t.Logf("grouper peak RSS (VmHWM) %.1f MiB; PodGroup writes %v; grouping errors by reason: Plan %v, other %v",
		float64(peak)/(1<<20), framework.Sum(m, "gangmap_podgroup_writes_total"),
		framework.Sum(m, "gangmap_grouping_errors_total", `reason="Plan"`), framework.Sum(m, "gangmap_grouping_errors_total")-framework.Sum(m, "gangmap_grouping_errors_total", `reason="Plan"`))
	require.NoError(t, err, "all %d pods grouped within %v", totalPods, groupWithin)
	assert.Less(t, peak, int64(peakRSSBound), "peak RSS under 1 GiB")

	// One PodGroup per workload, with the whole gang.
	pgs, err := cp.PodGroups(ctx, ns)
	require.NoError(t, err)
	assert.Len(t, pgs, workloads)
	for _, pg := range pgs {
		assert.Equal(t, ptr.To[int32](2), pg.Spec.MinSubGroup, pg.Name)
		assert.Equal(t, []v2alpha2.SubGroup{{Name: "coordinator", MinMember: ptr.To[int32](1)}, {Name: "worker", MinMember: ptr.To[int32](podsPerWork - 1)}}, pg.Spec.SubGroups, pg.Name)
	}
	for _, p := range all {
		assert.Equal(t, fmt.Sprintf("pg-%s-customjob", p.OwnerReferences[0].UID), p.Annotations[kaikeys.PodGroupName], p.Name)
	}

	// The broken kinds' pods: none grouped, no PodGroup; the looping definition was evaluated
	// (and timed out) rather than skipped.
	bps, err := cp.Pods(ctx, brokenNS)
	require.NoError(t, err)
	require.Len(t, bps, len(broken))
	for _, p := range bps {
		assert.Empty(t, p.Annotations[kaikeys.PodGroupName], "%s (%s) is not grouped", p.Name, p.OwnerReferences[0].Kind)
	}
	bpgs, err := cp.PodGroups(ctx, brokenNS)
	require.NoError(t, err)
	assert.Empty(t, bpgs)
	timeouts := framework.Sum(m, "gangmap_grouping_errors_total", `reason="Plan"`)
	assert.Positive(t, timeouts, "the looping definition's plans failed (timeout)")
	// Each failed plan held one of the grouper's 10 reconcile workers for the 1s timeout; the
	// retries back off exponentially, so the looping kind takes a small, bounded share of them.
	share := timeouts * time.Second.Seconds() / (10 * groupedIn.Seconds())
	t.Logf("the looping definition held reconcile workers for %.0fs: %.1f%% of their time while the 5000 pods were grouped", timeouts, 100*share)
	assert.Less(t, share, 0.25, "the looping definition takes under a quarter of the workers")
}

// workload is ../testdata/customjob.yaml as name in ns with the given worker replicas (not
// created).
func workload(t *testing.T, ns, name string, workers int64) *unstructured.Unstructured {
	t.Helper()
	w, err := framework.ReadObject("../testdata/customjob.yaml")
	require.NoError(t, err)
	w.SetName(name)
	w.SetNamespace(ns)
	require.NoError(t, unstructured.SetNestedField(w.Object, workers, "spec", "worker", "replicas"))
	return w
}
