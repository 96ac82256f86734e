//go:build e2e

package scale

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// podTimes records, per pod of one namespace, when the writer sent its create and when the pod
// was first seen with a pod-group-name: in the create's response (the webhook), or through a
// watch of the namespace's pods' metadata (the controller's or KAI's patch, seen by the
// benchmark's own informer: the latency includes the watch's delivery, the same for every
// grouper). Safe for concurrent use; a nil *podTimes records nothing.
type podTimes struct {
	mu      sync.Mutex
	create  map[string]time.Time
	grouped map[string]time.Time
	stop    context.CancelFunc
}

// watchPodTimes starts recording the pods of ns (metadata only) until stop.
func watchPodTimes(ctx context.Context, ns string) (*podTimes, error) {
	mc, err := metadata.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	t := &podTimes{create: map[string]time.Time{}, grouped: map[string]time.Time{}}
	ctx, t.stop = context.WithCancel(ctx)
	f := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, ns, nil)
	inf := f.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Informer()
	seen := func(obj any) {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok && m.Annotations[kaikeys.PodGroupName] != "" {
			t.groupedAt(m.Name, time.Now())
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, n any) { seen(n) }}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.stop()
		return nil, fmt.Errorf("the pod-times informer of %s did not sync", ns)
	}
	return t, nil
}

// created records that pod's create was sent at start; admitted says its response already had
// a pod-group-name (grouped when the create returned).
func (t *podTimes) created(pod string, start time.Time, admitted bool) {
	if t == nil {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.create[pod] = start
	if g, ok := t.grouped[pod]; admitted && (!ok || now.Before(g)) {
		t.grouped[pod] = now
	}
}

func (t *podTimes) groupedAt(pod string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.grouped[pod]; !ok {
		t.grouped[pod] = at
	}
}

// Stop stops the watch.
func (t *podTimes) Stop() { t.stop() }

// latencies returns, over the pods whose create was recorded, how many were seen grouped, the
// p50 and p99 of create -> grouped, and when the last of them was grouped.
func (t *podTimes) latencies() (grouped int, p50, p99 time.Duration, last time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ds []time.Duration
	for pod, c := range t.create {
		g, ok := t.grouped[pod]
		if !ok {
			continue
		}
		if g.Before(c) {
			g = c // seen grouped before the create returned: the webhook's mutation
		}
		ds = append(ds, g.Sub(c))
		if g.After(last) {
			last = g
		}
	}
	if len(ds) == 0 {
		return 0, 0, 0, last
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return len(ds), at(0.50), at(0.99), last
}
