package podcache

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gangmap/gangmap/podgrouper/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/podview"
)

func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

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
// is the cache now (store: Records by namespace and name; requests of the Record's strings).
func BenchmarkPodCacheBytes(b *testing.B) {
	const n = 100_000
	for _, tc := range []struct {
		name string
		run  func(b *testing.B) (kept any)
	}{{"client-go-store", clientGoStore}, {"store", ourStore}} {
		b.Run(tc.name, func(b *testing.B) {
			var per float64
			for range b.N {
				before := liveHeap()
				kept := tc.run(b)
				per = float64(liveHeap()-before) / n
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
			rec, _ := podview.TransformRecord(scalePod(i, labelled))
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

// ourStore is the pod cache now, through its transform and its processing of events.
func ourStore(b *testing.B) any {
	c, err := NewWithListWatch(nil, "kai-scheduler")
	if err != nil {
		b.Fatal(err)
	}
	reqs := make([]reconcile.Request, 0, 100_000)
	first := true
	c.handlers[0] = func(r reconcile.Request) {
		if first {
			reqs = append(reqs, r)
		}
	}
	for i := range 100_000 {
		for _, labelled := range []bool{false, true} {
			obj, err := c.transform(scalePod(i, labelled))
			if err != nil {
				b.Fatal(err)
			}
			first = !labelled
			if err := c.process(toolscache.Deltas{{Type: toolscache.Added, Object: obj}}, false); err != nil {
				b.Fatal(err)
			}
		}
	}
	c.handlers = nil
	return []any{c, reqs}
}
