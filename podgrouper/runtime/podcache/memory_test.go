package podcache

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gangmap/gangmap/internal/heapmeasure"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/podview"
)

// scalePod is pod i of `make bench-scale` (one namespace, CustomJobs of 10 pods: a coordinator
// and workers), as the API server sends it: before the grouper labels it, or after (its
// PodGroup annotation and sub-group label). Every string is the pod's own, as decoding makes it.
func scalePod(i int, labelled bool) *corev1.Pod {
	job, role := fmt.Sprintf("cj-%05d", i/10), "worker"
	if i%10 == 0 {
		role = "coordinator"
	}
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprint("scale-", 0), Name: fmt.Sprintf("%s-%s-%d", job, role, i%10),
			UID:             types.UID(fmt.Sprintf("8f0c61a4-3d5e-4a7b-9c1d-%012d", i)),
			ResourceVersion: fmt.Sprint(200000 + i), CreationTimestamp: metav1.Unix(1764590001, 0),
			Labels: map[string]string{"app": fmt.Sprint("custom-", "job"), "role": fmt.Sprint(role)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "e2e.example.com/v1", Kind: "CustomJob", Name: job,
				UID: types.UID(fmt.Sprintf("5b1e0c2d-7a3f-4e6b-8d9c-%012d", i/10)), Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec:   corev1.PodSpec{SchedulerName: "kai-scheduler"},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if labelled {
		p.Labels[kaikeys.SubGroupName] = fmt.Sprint(role)
		p.Annotations = map[string]string{kaikeys.PodGroupName: fmt.Sprintf("pg-%s-5b1e0c2d", job), kaikeys.SkipPodGrouper: "true"}
	}
	return p
}

// BenchmarkPodCacheBytes reports the live heap per cached pod of the pod cache at 100,000 pods of
// `make bench-scale`'s shape, each added and then changed once (the grouper's label), with the
// request of the pod's first event kept (as the work queue and the pod controller's
// bookkeeping keep it): "client-go-store" is the cache until session 6 (a SharedIndexInformer's
// store with the namespace index, requests split from a new "ns/name" key per event), "store"
// is the cache now (the same store; requests of the Record's strings).
func BenchmarkPodCacheBytes(b *testing.B) {
	const n = 100_000
	for _, tc := range []struct {
		name string
		run  func(b *testing.B) (kept any)
	}{{"client-go-store", clientGoStore}, {"store", ourStore}} {
		b.Run(tc.name, func(b *testing.B) {
			var per float64
			for range b.N {
				before := heapmeasure.Live()
				kept := tc.run(b)
				per = float64(heapmeasure.Live()-before) / n
				runtime.KeepAlive(kept)
			}
			b.ReportMetric(per, "bytes/pod")
			b.ReportMetric(per*n/(1<<20), "MiB/100k-pods")
		})
	}
}

// clientGoStore is the pod cache until session 6 (see BenchmarkPodCacheBytes).
func clientGoStore(b *testing.B) any {
	idx := toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	reqs := make([]reconcile.Request, 0, 100_000)
	for i := range 100_000 {
		for _, labelled := range []bool{false, true} {
			rec := podview.ToRecord(scalePod(i, labelled))
			if err := idx.Add(rec); err != nil {
				b.Fatal(err)
			}
			key, _ := toolscache.DeletionHandlingMetaNamespaceKeyFunc(rec)
			ns, name, _ := toolscache.SplitMetaNamespaceKey(key)
			if !labelled {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
			}
		}
	}
	return []any{idx, reqs}
}

// ourStore is the pod cache now, through its transform, its store and its requests.
func ourStore(b *testing.B) any {
	c, err := NewWithListWatch(nil, "kai-scheduler")
	if err != nil {
		b.Fatal(err)
	}
	reqs := make([]reconcile.Request, 0, 100_000)
	for i := range 100_000 {
		for _, labelled := range []bool{false, true} {
			obj, err := c.transform(scalePod(i, labelled))
			if err != nil {
				b.Fatal(err)
			}
			if err := c.informer.GetIndexer().Add(obj); err != nil {
				b.Fatal(err)
			}
			if req, ok := requestOf(obj); ok && !labelled {
				reqs = append(reqs, req)
			}
		}
	}
	return []any{c, reqs}
}

// BenchmarkListPeakBytes reports the highest live heap (sampled every millisecond) while the
// cache lists 20,000 pods of a realistic size (scalePod with 20 environment variables, a volume
// and a probe per container), per pod: "pages" is an API server that serves the cache's paged
// list (pagedList: resourceVersion "", 500 per page); "whole" one that answers with every pod at
// once, as the watch cache answers a reflector's resourceVersion "0" list (the cache until
// session 6, whose reflector decoded every pod before making any a Record).
func BenchmarkListPeakBytes(b *testing.B) {
	const n = 20_000
	for _, tc := range []struct {
		name      string
		pageLimit bool
	}{{"whole", false}, {"pages", true}} {
		b.Run(tc.name, func(b *testing.B) {
			var peak uint64
			for range b.N {
				lw := &toolscache.ListWatch{
					ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (k8sruntime.Object, error) {
						from, _ := strconv.Atoi(o.Continue)
						to := n
						if tc.pageLimit && from+int(o.Limit) < n {
							to = from + int(o.Limit)
						}
						list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}}
						for i := from; i < to; i++ {
							list.Items = append(list.Items, *bigPod(i))
						}
						if to < n {
							list.Continue = strconv.Itoa(to)
						}
						return list, nil
					},
					WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
				}
				c, err := NewWithListWatch(lw, "kai-scheduler")
				if err != nil {
					b.Fatal(err)
				}
				before := heapmeasure.Live()
				ctx, cancel := context.WithCancel(context.Background())
				go func() { _ = c.Start(ctx) }()
				peak = samplePeak(func() bool { return c.HasSynced() }) - before
				cancel()
			}
			b.ReportMetric(float64(peak)/n, "peak-bytes/pod")
			b.ReportMetric(float64(peak)*100_000/n/(1<<20), "peak-MiB/100k-pods")
		})
	}
}

// samplePeak returns the highest heap in use seen every millisecond until done.
func samplePeak(done func() bool) uint64 {
	var peak uint64
	var m runtime.MemStats
	for !done() {
		runtime.ReadMemStats(&m)
		peak = max(peak, m.HeapAlloc)
		time.Sleep(time.Millisecond)
	}
	return peak
}

// bigPod is scalePod i with what a real pod's spec carries beyond the Record's fields.
func bigPod(i int) *corev1.Pod {
	p := scalePod(i, true)
	c := corev1.Container{Name: "main", Image: fmt.Sprint("registry.example.com/train:v", i%3),
		Command:        []string{"python", "-m", "train", fmt.Sprint("--rank=", i)},
		VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz"}}}}
	for e := range 20 {
		c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprint("VAR_", e), Value: fmt.Sprint("value-", e, "-", i)})
	}
	p.Spec.Containers = []corev1.Container{c}
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	return p
}
