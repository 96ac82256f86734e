package controller

import (
	"context"
	goruntime "runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gangmap/gangmap/podgrouper/runtime/podcache"
)

// benchPodCache is the grouper's pod cache (podcache.Cache) for BenchmarkGrouperMemory and the
// reconciler's tests, fed
// through its own informer: an empty list, then a watch on which each pod arrives, as from the
// API server.
type benchPodCache struct {
	cache *podcache.Cache
	pods  *watch.FakeWatcher
	stop  context.CancelFunc
	done  chan struct{}
}

func newBenchPodCache(tb testing.TB) *benchPodCache {
	tb.Helper()
	fw := watch.NewFake()
	lw := &toolscache.ListWatch{
		ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil },
	}
	c, err := podcache.NewWithListWatch(lw, "kai-scheduler")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &benchPodCache{cache: c, pods: fw, stop: cancel, done: make(chan struct{})}
	go func() { _ = c.Start(ctx); close(p.done) }()
	if !toolscache.WaitForCacheSync(ctx.Done(), c.HasSynced) {
		tb.Fatal("pod cache not synced")
	}
	return p
}

// add sends pod (decoded, as the informer receives it) on the watch and returns the cached pod
// (podcache.Cache.Get: the Record as a Pod, its key strings the Record's) once it is cached.
func (p *benchPodCache) add(tb testing.TB, pod *corev1.Pod) *corev1.Pod {
	tb.Helper()
	p.pods.Add(pod)
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if got, ok := p.cache.Get(key); ok {
			return got
		}
		goruntime.Gosched()
	}
	tb.Fatalf("pod %s not cached", key)
	return nil
}

// close stops the informer, so that nothing but the caller holds the cache.
func (p *benchPodCache) close() {
	p.stop()
	p.pods.Stop()
	<-p.done
}
