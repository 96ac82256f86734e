package podcache

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/podview"
)

func testPod(ns, name, pg string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name), Labels: map[string]string{"role": "worker"}},
		Spec:       corev1.PodSpec{SchedulerName: "kai-scheduler", PriorityClassName: "train", Containers: []corev1.Container{{Name: "c", Image: "img"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if pg != "" {
		p.Annotations = map[string]string{kaikeys.PodGroupName: pg}
	}
	return p
}

// TestCacheServesRecordsAndEvents: the cache stores each listed and watched pod as a Record, gives
// it back as a Pod with the scheduler name it is filtered by, lists keys and a namespace's
// pod-group names, and its source enqueues one request per pod event after the cache synced.
func TestCacheServesRecordsAndEvents(t *testing.T) {
	lw := fcache.NewFakeControllerSource()
	lw.Add(testPod("a", "p1", "pg-1"))
	lw.Add(testPod("a", "p2", ""))
	lw.Add(testPod("b", "p3", "pg-3"))
	c, err := NewWithListWatch(lw, "kai-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	src := c.Source()
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := src.WaitForSync(wctx); err != nil {
		t.Fatal(err)
	}

	got, ok := c.Get(types.NamespacedName{Namespace: "a", Name: "p1"})
	if !ok {
		t.Fatal("a/p1 not cached")
	}
	if got.Spec.SchedulerName != "kai-scheduler" || got.Spec.PriorityClassName != "train" || got.Status.Phase != corev1.PodRunning ||
		got.UID != "a-p1" || got.Labels["role"] != "worker" || got.Annotations[kaikeys.PodGroupName] != "pg-1" || len(got.Spec.Containers) != 0 {
		t.Errorf("a/p1 read back as %+v", got)
	}
	if _, ok := c.Get(types.NamespacedName{Namespace: "a", Name: "p3"}); ok {
		t.Error("a/p3 found; it is b/p3")
	}
	if diff := cmp.Diff([]types.NamespacedName{{Namespace: "a", Name: "pg-1"}}, c.AnnotationValues("a", kaikeys.PodGroupName)); diff != "" {
		t.Errorf("pod-group names of a (-want +got):\n%s", diff)
	}
	if n := len(c.Keys()); n != 3 {
		t.Errorf("%d keys, want 3", n)
	}

	lw.Modify(testPod("a", "p2", "pg-2"))
	lw.Delete(testPod("b", "p3", "pg-3"))
	want := map[types.NamespacedName]bool{{Namespace: "a", Name: "p1"}: true, {Namespace: "a", Name: "p2"}: true, {Namespace: "b", Name: "p3"}: true}
	seen := map[types.NamespacedName]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for len(seen) < len(want) && time.Now().Before(deadline) {
		if q.Len() == 0 {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		req, _ := q.Get()
		seen[req.NamespacedName] = true
		q.Done(req)
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if err := waitFor(func() bool { _, ok := c.Get(types.NamespacedName{Namespace: "b", Name: "p3"}); return !ok }); err != nil {
		t.Error("b/p3 still cached after its deletion")
	}
	if err := waitFor(func() bool { return len(c.AnnotationValues("a", kaikeys.PodGroupName)) == 2 }); err != nil {
		t.Errorf("a's pod-group names after the update: %v", c.AnnotationValues("a", kaikeys.PodGroupName))
	}
	if n := len(c.AnnotationValues("", kaikeys.PodGroupName)); n != 2 {
		t.Errorf("%d pod-group names in all namespaces, want 2 (b/p3 deleted)", n)
	}
}

func waitFor(cond func() bool) error {
	for i := 0; i < 1000; i++ {
		if cond() {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return context.DeadlineExceeded
}

// TestRequestOfATombstone: a deletion tombstone makes the request of its last Record, or of its
// key when it has none; a malformed key makes none.
func TestRequestOfATombstone(t *testing.T) {
	rec := podview.ToRecord(testPod("a", "p1", ""))
	for _, tc := range []struct {
		obj  any
		want string
	}{
		{toolscache.DeletedFinalStateUnknown{Key: "x/y", Obj: rec}, "a/p1"},
		{toolscache.DeletedFinalStateUnknown{Key: "b/p2"}, "b/p2"},
		{toolscache.DeletedFinalStateUnknown{Key: "a/b/c"}, ""},
	} {
		req, ok := requestOf(tc.obj)
		if got := map[bool]string{true: req.String()}[ok]; got != tc.want {
			t.Errorf("requestOf(%v) = %q, want %q", tc.obj, got, tc.want)
		}
	}
}

// TestTransformIsIdempotent: client-go may hand the transform an object it already transformed,
// or a deletion tombstone; both pass unchanged. A Record is keyed like its pod.
func TestTransformIsIdempotent(t *testing.T) {
	c, err := NewWithListWatch(nil, "kai-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	obj, err := c.transform(testPod("ns", "p", ""))
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.transform(obj)
	if err != nil || again != obj {
		t.Errorf("second transform: %v, %v; want the same record", again, err)
	}
	tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/p", Obj: obj}
	if out, err := c.transform(tomb); err != nil || out != any(tomb) {
		t.Errorf("tombstone: %v, %v", out, err)
	}
	key, err := toolscache.MetaNamespaceKeyFunc(obj)
	if err != nil || key != "ns/p" {
		t.Errorf("store key %q, %v; want ns/p", key, err)
	}
}
