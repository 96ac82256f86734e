package podcache

import (
	"context"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

type requestQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// started starts c (its source on a new queue first when sourceFirst, else after the cache has
// synced) and returns the queue.
func started(t *testing.T, c *Cache, sourceFirst bool) requestQueue {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	src := c.Source()
	if sourceFirst {
		if err := src.Start(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := src.WaitForSync(wctx); err != nil {
		t.Fatal(err)
	}
	if !sourceFirst {
		if err := src.Start(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return q
}

// take returns the requests q holds or receives within 10 s until it has n of them (each marked
// done), in order.
func take(q requestQueue, n int) []reconcile.Request {
	var out []reconcile.Request
	deadline := time.Now().Add(10 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		if q.Len() == 0 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		req, _ := q.Get()
		out = append(out, req)
		q.Done(req)
	}
	return out
}

func names(reqs []reconcile.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.String()
	}
	return out
}

var sorted = cmpopts.SortSlices(func(a, b string) bool { return a < b })

// TestRelistStoresTheListAndDeletesTheRest: after the watch breaks and the events it missed are
// lost (a pod added, one changed, one deleted), the relist stores what the list has, deletes
// the pod it lacks (client-go's DeletedFinalStateUnknown tombstone from the FIFO's known objects,
// the store) and sends a request for each listed pod (as client-go's informer sends an update
// per listed object) and for the deleted one, with either FIFO client-go may use.
func TestRelistStoresTheListAndDeletesTheRest(t *testing.T) {
	for _, inOrder := range []bool{true, false} {
		t.Run(map[bool]string{true: "RealFIFO", false: "DeltaFIFO"}[inOrder], func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.InOrderInformers, inOrder)
			lw := fcache.NewFakeControllerSource()
			lw.Add(testPod("a", "p1", ""))
			lw.Add(testPod("a", "p2", ""))
			lw.Add(testPod("b", "p3", ""))
			c, err := NewWithListWatch(lw, "kai-scheduler")
			if err != nil {
				t.Fatal(err)
			}
			q := started(t, c, true)
			if got := take(q, 3); len(got) != 3 {
				t.Fatalf("initial requests %v, want 3", names(got))
			}

			lw.ModifyDropWatch(testPod("a", "p1", "pg-1"))
			lw.DeleteDropWatch(testPod("a", "p2", ""))
			lw.AddDropWatch(testPod("b", "p4", ""))
			lw.ResetWatch()
			if diff := cmp.Diff([]string{"a/p1", "a/p2", "b/p3", "b/p4"}, names(take(q, 4)), sorted); diff != "" {
				t.Errorf("requests after the relist (-want +got):\n%s", diff)
			}
			var keys []string
			for _, k := range c.Keys() {
				keys = append(keys, k.String())
			}
			if diff := cmp.Diff([]string{"a/p1", "b/p3", "b/p4"}, keys, sorted); diff != "" {
				t.Errorf("cached pods after the relist (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]types.NamespacedName{{Namespace: "a", Name: "pg-1"}}, c.AnnotationValues("a", kaikeys.PodGroupName)); diff != "" {
				t.Errorf("a's pod-group names after the relist (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLateSourceGetsEveryCachedPod: a source started after the cache synced (the controller of a
// replica elected leader later) gets a request per cached pod, then the events.
func TestLateSourceGetsEveryCachedPod(t *testing.T) {
	lw := fcache.NewFakeControllerSource()
	lw.Add(testPod("a", "p1", ""))
	lw.Add(testPod("b", "p2", ""))
	c, err := NewWithListWatch(lw, "kai-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	q := started(t, c, false)
	if diff := cmp.Diff([]string{"a/p1", "b/p2"}, names(take(q, 2)), sorted); diff != "" {
		t.Errorf("requests of the cached pods (-want +got):\n%s", diff)
	}
	lw.Delete(testPod("a", "p1", ""))
	if diff := cmp.Diff([]string{"a/p1"}, names(take(q, 1))); diff != "" {
		t.Errorf("request of the deletion (-want +got):\n%s", diff)
	}
}

// TestRequestsShareTheFirstRecordsStrings: a changed pod's Record takes the namespace and name
// strings of the Record it replaces, and requests are made of them, so the pod's key in the
// work queue (and in what the controller keys by request) is one string however often it changes.
func TestRequestsShareTheFirstRecordsStrings(t *testing.T) {
	version := func(pg string) *corev1.Pod {
		p := testPod("a", strings.Clone("p1"), pg) // a name decoded anew, as from each watch event
		return p
	}
	lw := fcache.NewFakeControllerSource()
	lw.Add(version(""))
	c, err := NewWithListWatch(lw, "kai-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	q := started(t, c, true)
	first := take(q, 1)
	if len(first) != 1 {
		t.Fatal("no request for a/p1")
	}
	key := types.NamespacedName{Namespace: "a", Name: "p1"}
	firstRecord := c.get(key)
	lw.Modify(version("pg-1"))
	lw.Modify(version("pg-2"))
	second := take(q, 1)
	if len(second) != 1 {
		t.Fatal("no request for a/p1's change")
	}
	if err := waitFor(func() bool {
		v := c.AnnotationValues("a", kaikeys.PodGroupName)
		return len(v) == 1 && v[0].Name == "pg-2"
	}); err != nil {
		t.Fatalf("a/p1's last change not cached: %v", c.AnnotationValues("a", kaikeys.PodGroupName))
	}
	last := c.get(key)
	if last == firstRecord {
		t.Fatal("the Record did not change")
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	if !same(last.Name, firstRecord.Name) || !same(last.Namespace, firstRecord.Namespace) {
		t.Error("the changed Record has strings of its own")
	}
	if !same(second[0].Name, firstRecord.Name) || !same(first[0].Name, firstRecord.Name) || !same(second[0].Namespace, firstRecord.Namespace) {
		t.Error("a request has strings other than the Record's")
	}
	if got, _ := c.Get(key); !same(got.Name, firstRecord.Name) || got.UID != "a-p1" {
		t.Errorf("Get's pod: name shared %v, UID %q; want the Record's name and a-p1", same(got.Name, firstRecord.Name), got.UID)
	}
}
