package workloadmap

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/manifest"
	"github.com/gangmap/gangmap/podgrouper/core/defaultgrouper"
)

func newGrouper(t testing.TB) *Grouper {
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	reg := definitions.NewRegistry(c)
	require.NoError(t, catalog.Register(reg))
	return &Grouper{Registry: reg, Defaults: &defaultgrouper.Grouper{}}
}

func workload(t testing.TB, file string, mutate func(*unstructured.Unstructured)) *unstructured.Unstructured {
	objs, err := manifest.ReadFile("../../../gang/testdata/" + file)
	require.NoError(t, err)
	obj := objs[0]
	obj.SetNamespace("bench")
	obj.SetUID("11111111-2222-3333-4444-555555555555")
	obj.SetResourceVersion("1")
	if mutate != nil {
		mutate(obj)
	}
	return obj
}

func pod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bench", Labels: labels},
		Spec: corev1.PodSpec{SchedulerName: "kai-scheduler", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
}

// TestGetPodGroupMetadata checks the per-pod decision the benchmark measures.
func TestGetPodGroupMetadata(t *testing.T) {
	g := newGrouper(t)
	lws := workload(t, "lws-replicas2-size4-8gpu-limits.yaml", nil)
	md, err := g.GetPodGroupMetadata(context.Background(), lws, pod("w", map[string]string{
		"leaderworkerset.sigs.k8s.io/group-index": "1", "leaderworkerset.sigs.k8s.io/worker-index": "3"}))
	require.NoError(t, err)
	require.Equal(t, "pg-11111111-2222-3333-4444-555555555555-group-1", md.Name)
	require.Equal(t, "worker", md.FindSubGroupForPod("bench", "w").Name)
	require.Equal(t, "32", md.Annotations["gangmap.io/gpus"])
	require.Equal(t, "default-queue", md.Queue)
}

// BenchmarkDecidePod measures the grouper's per-pod decision for a pod of an already-planned
// workload (the plan is cached per workload resourceVersion): placing the pod by the
// definition's selectors, finding its PodGroup and sub-group, and building KAI's metadata.
// Goal (issue 8): <= 20µs and <= 50 allocations per pod, not growing with the gang.
func BenchmarkDecidePod(b *testing.B) {
	ctx := context.Background()
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		pod  *corev1.Pod
	}{
		{"jobset-3-roles", workload(b, "jobset-leader-workers.yaml", nil),
			pod("p", map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "workers", "jobset.sigs.k8s.io/job-index": "1"})},
		{"lws-100-groups", workload(b, "lws-replicas2-size4-8gpu-limits.yaml", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(100), "spec", "replicas")
		}), pod("p", map[string]string{"leaderworkerset.sigs.k8s.io/group-index": "57", "leaderworkerset.sigs.k8s.io/worker-index": "2"})},
		{"jobset-1000-pods", workload(b, "jobset-leader-workers.yaml", func(u *unstructured.Unstructured) {
			rjs, _, _ := unstructured.NestedSlice(u.Object, "spec", "replicatedJobs")
			rjs[1].(map[string]any)["replicas"] = int64(999)
			_ = unstructured.SetNestedSlice(u.Object, rjs, "spec", "replicatedJobs")
		}), pod("p", map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "workers", "jobset.sigs.k8s.io/job-index": "1"})},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			g := newGrouper(b)
			if _, err := g.GetPodGroupMetadata(ctx, tc.obj, tc.pod); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := g.GetPodGroupMetadata(ctx, tc.obj, tc.pod); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPlan measures a full plan (no cache) as the workload grows; time per pod should stay
// flat (linear cost).
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int64{10, 100, 1000, 10000} {
		obj := workload(b, "jobset-leader-workers.yaml", func(u *unstructured.Unstructured) {
			rjs, _, _ := unstructured.NestedSlice(u.Object, "spec", "replicatedJobs")
			rjs[1].(map[string]any)["replicas"] = n - 1
			_ = unstructured.SetNestedSlice(u.Object, rjs, "spec", "replicatedJobs")
		})
		b.Run(fmt.Sprintf("pods-%d", n), func(b *testing.B) {
			g := newGrouper(b)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				obj.SetResourceVersion(fmt.Sprint(i + 2))
				if _, _, err := g.Plan(context.Background(), obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A refused min-member override is told on the workload with a Warning Event, once per workload
// version (not per pod, nor per plan build).
func TestRefusedOverrideEvent(t *testing.T) {
	g := newGrouper(t)
	rec := record.NewFakeRecorder(10)
	g.Recorder = rec
	// Each LWS group's PodGroup has 4 pods: a minimum of 5 pods cannot be met.
	lws := workload(t, "lws-replicas2-size4-8gpu-limits.yaml", func(u *unstructured.Unstructured) {
		u.SetAnnotations(map[string]string{"gangmap.io/min-member": "5"})
	})
	_, _, err := g.Plan(context.Background(), lws)
	require.NoError(t, err)
	_, _, err = g.Plan(context.Background(), lws)
	require.NoError(t, err)
	require.Len(t, rec.Events, 1, "once per plan build, not per pod")
	ev := <-rec.Events
	require.Contains(t, ev, "Warning MinMemberOverrideRefused annotation gangmap.io/min-member=\"5\" not applied: 5 is above the 4 pods of PodGroup pg-11111111-2222-3333-4444-555555555555-group-0")

	// The plan evicted (as past PlanCacheSize) and built again: not told again.
	g.Forget(lws.GetNamespace(), lws.GetUID())
	_, _, err = g.Plan(context.Background(), lws)
	require.NoError(t, err)
	require.Equal(t, int64(2), g.builds.Load())
	require.Empty(t, rec.Events, "once per workload version, not per plan build")
	// A new version of the workload still refusing it: told again.
	lws.SetResourceVersion("2")
	_, _, err = g.Plan(context.Background(), lws)
	require.NoError(t, err)
	require.Len(t, rec.Events, 1)
}

// BenchmarkPlanLinearity plans LeaderWorkerSets of 100 and 10,000 pods (size 4: 25 and 2,500
// per-group gangs, the case whose cost does grow with the workload) and reports the time per
// pod at 10,000 over the time per pod at 100 (goal, issue 8: at most 1.1).
func BenchmarkPlanLinearity(b *testing.B) {
	perPod := func(pods int64) float64 {
		obj := workload(b, "lws-replicas2-size4-8gpu-limits.yaml", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, pods/4, "spec", "replicas")
		})
		g := newGrouper(b)
		const rounds = 20
		start := time.Now()
		for i := 0; i < rounds; i++ {
			obj.SetResourceVersion(fmt.Sprint(i + 2))
			if _, _, err := g.Plan(context.Background(), obj); err != nil {
				b.Fatal(err)
			}
		}
		return float64(time.Since(start)) / rounds / float64(pods)
	}
	var small, large float64
	for i := 0; i < b.N; i++ {
		small += perPod(100)
		large += perPod(10000)
	}
	b.ReportMetric(small/float64(b.N), "ns/pod@100")
	b.ReportMetric(large/float64(b.N), "ns/pod@10000")
	b.ReportMetric(large/small, "ratio")
}

// A failed plan is remembered for the workload version, so retries do not evaluate again.
func TestFailedPlanIsCached(t *testing.T) {
	g := newGrouper(t)
	lws := workload(t, "lws-replicas2-size4-8gpu-limits.yaml", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "two", "spec", "replicas")
	})
	_, _, err1 := g.Plan(context.Background(), lws)
	require.ErrorContains(t, err1, "replicasPath")
	_, _, err2 := g.Plan(context.Background(), lws)
	require.Same(t, err1, err2, "the second call returns the remembered error")
	lws.SetResourceVersion("2")
	_ = unstructured.SetNestedField(lws.Object, int64(2), "spec", "replicas")
	_, _, err := g.Plan(context.Background(), lws)
	require.NoError(t, err, "a new workload version is planned again")
}
