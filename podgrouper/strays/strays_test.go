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
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gangmap/gangmap/podgrouper/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/strays"
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

func newClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v2alpha2.AddToScheme(s))
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithIndex(&v2alpha2.PodGroup{}, strays.OwnerField, strays.OwnerUID).Build()
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
// Alike with the owner index (only the workload's own PodGroups listed) and without.
func TestCollectDeletesOnlyStrays(t *testing.T) {
	for _, indexed := range []bool{false, true} {
		t.Run(fmt.Sprint("indexed=", indexed), func(t *testing.T) { testCollectDeletesOnlyStrays(t, indexed) })
	}
}

func testCollectDeletesOnlyStrays(t *testing.T, indexed bool) {
	ctx := context.Background()
	c := newClient(t,
		podGroup("pg-uid-1-customjob", "uid-1", gangmaps),    // the current plan's, named
		podGroup("pg-uid-1-replica-1", "uid-1", gangmaps),    // planned, no pod yet
		podGroup("pg-uid-1-old", "uid-1", gangmaps),          // gangmap's, from an older definition
		podGroup("pg-train-uid-1", "uid-1", kais),            // KAI's one-pod PodGroup
		podGroup("pg-uid-1-named", "uid-1", kais),            // KAI's, still named by a pod
		podGroup("pg-uid-1-external", "uid-1", nil),          // someone else's (KAI external PodGroups)
		podGroup("pg-other-workload", "uid-other", gangmaps), // another workload's
		pod("p0", "pg-uid-1-customjob"), pod("p1", "pg-uid-1-named"),
	)
	rec := record.NewFakeRecorder(10)
	col := &strays.Collector{Client: c, Grace: 50 * time.Millisecond, Recorder: rec, OwnerIndexed: indexed}
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
	c := newClient(t, podGroup("pg-train-uid-1", "uid-1", kais))
	col := &strays.Collector{Client: c, Grace: 50 * time.Millisecond}
	w := strays.Workload{Owner: owner(), Keep: []string{"pg-uid-1-customjob"}}
	_, err := col.Collect(ctx, w)
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, pod("p0", "pg-train-uid-1")))
	time.Sleep(60 * time.Millisecond)
	_, err = col.Collect(ctx, w)
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, pod("p0", "")))
	next, err := col.Collect(ctx, w)
	require.NoError(t, err)
	assert.Greater(t, next, time.Duration(0))
	assert.Equal(t, []string{"pg-train-uid-1"}, names(t, c), "unnamed again only now: a new grace period")
}

// In dry-run a stray is reported once (Event) and never deleted.
func TestDryRunReportsOnly(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, podGroup("pg-train-uid-1", "uid-1", kais))
	rec := record.NewFakeRecorder(10)
	col := &strays.Collector{Client: c, Grace: time.Nanosecond, DryRun: true, Recorder: rec}
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
	for _, indexed := range []bool{false, true} {
		t.Run(fmt.Sprint("indexed=", indexed), func(t *testing.T) { testClusterScopedOwnerNamedPerNamespace(t, indexed) })
	}
}

func testClusterScopedOwnerNamedPerNamespace(t *testing.T, indexed bool) {
	ctx := context.Background()
	inB := func(o client.Object) client.Object {
		o.SetNamespace("team-b")
		o.SetUID(o.GetUID() + "-b")
		return o
	}
	c := newClient(t,
		podGroup("pg-uid-1-old", "uid-1", gangmaps),
		inB(podGroup("pg-uid-1-old", "uid-1", gangmaps)),
		inB(pod("p0", "pg-uid-1-old")),
	)
	w := owner()
	w.SetNamespace("")
	col := &strays.Collector{Client: c, Grace: 10 * time.Millisecond, OwnerIndexed: indexed}
	_, err := col.Collect(ctx, strays.Workload{Owner: w, Keep: []string{"pg-uid-1-customjob"}})
	require.NoError(t, err)
	time.Sleep(20 * time.Millisecond)
	_, err = col.Collect(ctx, strays.Workload{Owner: w, Keep: []string{"pg-uid-1-customjob"}})
	require.NoError(t, err)
	assert.Empty(t, names(t, c), "team-a's copy is a stray: no pod of team-a names it")
	kept := &v2alpha2.PodGroup{}
	assert.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "team-b", Name: "pg-uid-1-old"}, kept), "team-b's is named by team-b's pod")
}

// With the owner index a look lists only the workload's own PodGroups: 3 of the namespace's 1,003
// (a thousand other workloads' PodGroups cost nothing).
func TestIndexedLookListsOwnPodGroups(t *testing.T) {
	ctx := context.Background()
	objs := []client.Object{podGroup("pg-uid-1-customjob", "uid-1", gangmaps), podGroup("pg-uid-1-old", "uid-1", gangmaps),
		podGroup("pg-train-uid-1", "uid-1", kais)}
	for i := range 1000 {
		objs = append(objs, podGroup(fmt.Sprint("pg-other-", i), fmt.Sprint("uid-other-", i), gangmaps))
	}
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v2alpha2.AddToScheme(s))
	listed := 0
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithIndex(&v2alpha2.PodGroup{}, strays.OwnerField, strays.OwnerUID).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			err := c.List(ctx, list, opts...)
			if pgs, ok := list.(*v2alpha2.PodGroupList); ok {
				listed += len(pgs.Items)
			}
			return err
		}}).Build()
	col := &strays.Collector{Client: c, Grace: time.Hour, OwnerIndexed: true}
	next, err := col.Collect(ctx, strays.Workload{Owner: owner(), Keep: []string{"pg-uid-1-customjob"}})
	require.NoError(t, err)
	assert.Greater(t, next, time.Duration(0), "two strays wait for the grace period")
	assert.Equal(t, 3, listed)
	assert.Equal(t, []string{"uid-1"}, strays.OwnerUID(objs[0]))
	pg := podGroup("two-owners", "uid-1", gangmaps)
	pg.OwnerReferences = append(pg.OwnerReferences, pg.OwnerReferences[0])
	assert.Nil(t, strays.OwnerUID(pg), "a PodGroup with two owners is no workload's stray")
}
