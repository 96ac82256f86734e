package strays_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gangmap/gangmap/internal/podcachetest"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/podcache"
	"github.com/gangmap/gangmap/podgrouper/runtime/strays"
)

const ns = "team-a"

func owner() *unstructured.Unstructured {
	w := &unstructured.Unstructured{}
	w.SetAPIVersion("e2e.example.com/v1")
	w.SetKind("CustomJob")
	w.SetNamespace(ns)
	w.SetName("train")
	w.SetUID("uid-1")
	return w
}

func podGroup(name, ownerUID string, annotations map[string]string) *v2alpha2.PodGroup {
	return &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-of-" + name), Annotations: annotations,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "e2e.example.com/v1", Kind: "CustomJob", Name: "train", UID: types.UID(ownerUID)}}}}
}

// drain returns the Events recorded so far.
func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			sort.Strings(out)
			return out
		}
	}
}

func pod(name, pgName string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{kaikeys.PodGroupName: pgName}}}
}

// newIndexedClient returns a fake API server holding objs and the owner index the grouper's
// PodGroup informer would feed from it (strays.IndexOwnerUID): the PodGroups of objs as stored,
// and each PodGroup deleted through the client dropped from it.
func newIndexedClient(t *testing.T, objs ...client.Object) (client.Client, *strays.OwnerIndex) {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v2alpha2.AddToScheme(s))
	idx := strays.NewOwnerIndex()
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			err := c.Delete(ctx, obj, opts...)
			if err == nil {
				idx.OnDelete(obj)
			}
			return err
		}}).Build()
	stored := &v2alpha2.PodGroupList{}
	require.NoError(t, c.List(context.Background(), stored))
	for i := range stored.Items {
		idx.OnAdd(&stored.Items[i], true)
	}
	return c, idx
}

// newPodCache returns the grouper's pod cache (podcache.Cache), synced, holding pods, and the
// fake source that feeds it.
func newPodCache(t *testing.T, pods ...*corev1.Pod) (*podcache.Cache, *fcache.FakeControllerSource) {
	return podcachetest.Start(t, pods...)
}

// newCollector returns a collector of the PodGroups of c (through its owner index idx) and the
// pods of a pod cache holding pods, and the source of that cache.
func newCollector(t *testing.T, c client.Client, idx *strays.OwnerIndex, grace time.Duration, pods ...*corev1.Pod) (*strays.Collector, *fcache.FakeControllerSource) {
	t.Helper()
	cache, src := newPodCache(t, pods...)
	return &strays.Collector{Client: c, Pods: cache, Owned: idx.Owned, Grace: grace}, src
}

func names(t *testing.T, c client.Client) []string {
	t.Helper()
	list := &v2alpha2.PodGroupList{}
	require.NoError(t, c.List(context.Background(), list, client.InNamespace(ns)))
	var out []string
	for _, pg := range list.Items {
		out = append(out, pg.Name)
	}
	sort.Strings(out)
	return out
}

var (
	gangmaps = map[string]string{kaikeys.Definition: "customjob (cluster)"}
	kais     = map[string]string{kaikeys.TopOwnerMetadata: "name: train"}
)

// Only the workload's own PodGroups written by gangmap or KAI's pod-grouper, not planned and
// named by no pod, are deleted, and only once the grace period has passed.
func TestCollectDeletesOnlyStrays(t *testing.T) {
	ctx := context.Background()
	c, idx := newIndexedClient(t,
		podGroup("pg-uid-1-customjob", "uid-1", gangmaps),    // the current plan's, named
		podGroup("pg-uid-1-replica-1", "uid-1", gangmaps),    // planned, no pod yet
		podGroup("pg-uid-1-old", "uid-1", gangmaps),          // gangmap's, from an older definition
		podGroup("pg-train-uid-1", "uid-1", kais),            // KAI's one-pod PodGroup
		podGroup("pg-uid-1-named", "uid-1", kais),            // KAI's, still named by a pod
		podGroup("pg-uid-1-external", "uid-1", nil),          // someone else's (KAI external PodGroups)
		podGroup("pg-other-workload", "uid-other", gangmaps), // another workload's
	)
	rec := record.NewFakeRecorder(10)
	col, _ := newCollector(t, c, idx, 50*time.Millisecond, pod("p0", "pg-uid-1-customjob"), pod("p1", "pg-uid-1-named"))
	col.Recorder = rec
	w := strays.Workload{Owner: owner(), Keep: []string{"pg-uid-1-customjob", "pg-uid-1-replica-1"}}

	next, err := col.Collect(ctx, w)
	require.NoError(t, err)
	assert.Greater(t, next, time.Duration(0), "strays wait for the grace period")
	assert.Len(t, names(t, c), 7, "nothing deleted before the grace period")

	time.Sleep(60 * time.Millisecond)
	next, err = col.Collect(ctx, w)
	require.NoError(t, err)
	assert.Zero(t, next)
	assert.Equal(t, []string{"pg-other-workload", "pg-uid-1-customjob", "pg-uid-1-external", "pg-uid-1-named", "pg-uid-1-replica-1"}, names(t, c))
	events := drain(rec)
	assert.Equal(t, []string{
		"Normal GangmapStrayPodGroup deleted stray PodGroup pg-train-uid-1 (written by KAI's pod-grouper; no pod has named it for 50ms)",
		"Normal GangmapStrayPodGroup deleted stray PodGroup pg-uid-1-old (written by gangmap; no pod has named it for 50ms)",
	}, events)
}

// A PodGroup a pod names again within the grace period starts its grace period over.
func TestNamedAgainIsKept(t *testing.T) {
	ctx := context.Background()
	c, idx := newIndexedClient(t, podGroup("pg-train-uid-1", "uid-1", kais))
	col, pods := newCollector(t, c, idx, 50*time.Millisecond)
	w := strays.Workload{Owner: owner(), Keep: []string{"pg-uid-1-customjob"}}
	_, err := col.Collect(ctx, w)
	require.NoError(t, err)
	pods.Add(pod("p0", "pg-train-uid-1"))
	require.Eventually(t, func() bool { return len(col.Pods.AnnotationValues(ns, kaikeys.PodGroupName)) == 1 }, 10*time.Second, time.Millisecond)
	time.Sleep(60 * time.Millisecond)
	_, err = col.Collect(ctx, w)
	require.NoError(t, err)
	pods.Delete(pod("p0", ""))
	require.Eventually(t, func() bool { return len(col.Pods.AnnotationValues(ns, kaikeys.PodGroupName)) == 0 }, 10*time.Second, time.Millisecond)
	next, err := col.Collect(ctx, w)
	require.NoError(t, err)
	assert.Greater(t, next, time.Duration(0))
	assert.Equal(t, []string{"pg-train-uid-1"}, names(t, c), "unnamed again only now: a new grace period")
}

// In dry-run a stray is reported once (Event) and never deleted.
func TestDryRunReportsOnly(t *testing.T) {
	ctx := context.Background()
	c, idx := newIndexedClient(t, podGroup("pg-train-uid-1", "uid-1", kais))
	rec := record.NewFakeRecorder(10)
	col, _ := newCollector(t, c, idx, time.Nanosecond)
	col.DryRun, col.Recorder = true, rec
	w := strays.Workload{Owner: owner(), Keep: []string{"pg-uid-1-customjob"}}
	for i := 0; i < 3; i++ {
		_, err := col.Collect(ctx, w)
		require.NoError(t, err)
		time.Sleep(time.Millisecond)
	}
	assert.Equal(t, []string{"pg-train-uid-1"}, names(t, c))
	events := drain(rec)
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "dry-run: would delete stray PodGroup pg-train-uid-1")
}

// A cluster-scoped top owner's pods may live in several namespaces, each with its own PodGroup of
// the same name (PodGroups are written in the pod's namespace). A pod of namespace team-b naming
// it keeps team-b's PodGroup only: team-a's, which no pod of team-a names, is still a stray.
func TestClusterScopedOwnerNamedPerNamespace(t *testing.T) {
	ctx := context.Background()
	inB := func(o client.Object) client.Object {
		o.SetNamespace("team-b")
		o.SetUID(o.GetUID() + "-b")
		return o
	}
	c, idx := newIndexedClient(t,
		podGroup("pg-uid-1-old", "uid-1", gangmaps),
		inB(podGroup("pg-uid-1-old", "uid-1", gangmaps)),
	)
	w := owner()
	w.SetNamespace("")
	col, _ := newCollector(t, c, idx, 10*time.Millisecond, inB(pod("p0", "pg-uid-1-old")).(*corev1.Pod))
	_, err := col.Collect(ctx, strays.Workload{Owner: w, Keep: []string{"pg-uid-1-customjob"}})
	require.NoError(t, err)
	time.Sleep(20 * time.Millisecond)
	_, err = col.Collect(ctx, strays.Workload{Owner: w, Keep: []string{"pg-uid-1-customjob"}})
	require.NoError(t, err)
	assert.Empty(t, names(t, c), "team-a's copy is a stray: no pod of team-a names it")
	kept := &v2alpha2.PodGroup{}
	assert.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "team-b", Name: "pg-uid-1-old"}, kept), "team-b's is named by team-b's pod")
}

// The owner index holds each PodGroup with a single owner under that owner's UID: a workload's
// 3 PodGroups among a thousand other workloads' come back alone; one with two owners is left
// out; an update that changes the owner moves it; a delete (or a tombstone's) drops it.
func TestOwnerIndexHoldsOwnPodGroups(t *testing.T) {
	idx := strays.NewOwnerIndex()
	own := []*v2alpha2.PodGroup{podGroup("pg-uid-1-customjob", "uid-1", gangmaps), podGroup("pg-uid-1-old", "uid-1", gangmaps),
		podGroup("pg-train-uid-1", "uid-1", kais)}
	for _, pg := range own {
		idx.OnAdd(pg, true)
	}
	for i := range 1000 {
		idx.OnAdd(podGroup(fmt.Sprint("pg-other-", i), fmt.Sprint("uid-other-", i), gangmaps), true)
	}
	two := podGroup("two-owners", "uid-1", gangmaps)
	two.OwnerReferences = append(two.OwnerReferences, two.OwnerReferences[0])
	idx.OnAdd(two, true)
	ownedNames := func(uid types.UID) []string {
		pgs, err := idx.Owned("", uid)
		require.NoError(t, err)
		var out []string
		for _, pg := range pgs {
			out = append(out, pg.Name)
		}
		sort.Strings(out)
		return out
	}
	assert.Equal(t, []string{"pg-train-uid-1", "pg-uid-1-customjob", "pg-uid-1-old"}, ownedNames("uid-1"))
	assert.Equal(t, []string{"pg-other-7"}, ownedNames("uid-other-7"))
	assert.Equal(t, 1003, idx.Len(), "the PodGroup with two owners is no workload's stray")

	// A newer version replaces the older one; a new owner moves it.
	newer := own[1].DeepCopy()
	newer.ResourceVersion = "2"
	idx.OnUpdate(own[1], newer)
	pgs, err := idx.Owned("", "uid-1")
	require.NoError(t, err)
	assert.Contains(t, pgs, newer)
	moved := newer.DeepCopy()
	moved.OwnerReferences[0].UID = "uid-other-7"
	idx.OnUpdate(newer, moved)
	assert.Equal(t, []string{"pg-train-uid-1", "pg-uid-1-customjob"}, ownedNames("uid-1"))
	assert.Equal(t, []string{"pg-other-7", "pg-uid-1-old"}, ownedNames("uid-other-7"))

	idx.OnDelete(own[0])
	idx.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "team-a/pg-train-uid-1", Obj: own[2]})
	assert.Empty(t, ownedNames("uid-1"))
	idx.OnDelete(moved)
	assert.Equal(t, []string{"pg-other-7"}, ownedNames("uid-other-7"))
	assert.Equal(t, 1000, idx.Len())
}

// A collector without the pod cache or the owner index refuses to start or look.
func TestCollectorNeedsPodCacheAndOwnerIndex(t *testing.T) {
	c, idx := newIndexedClient(t)
	pods, _ := newPodCache(t)
	for _, col := range []*strays.Collector{{Client: c, Owned: idx.Owned}, {Client: c, Pods: pods}} {
		_, err := col.Collect(context.Background(), strays.Workload{Owner: owner()})
		require.ErrorContains(t, err, "needs the pod cache (Collector.Pods) and the PodGroup owner index (Collector.Owned)")
		require.ErrorContains(t, col.Start(context.Background()), "needs the pod cache")
	}
}
