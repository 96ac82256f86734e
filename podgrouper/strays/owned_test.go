package strays_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/strays"
)

// ownedOf is IndexOwnerUID's lookup over a client-go indexer holding the PodGroups of objs, as the
// manager's PodGroup informer holds them.
func ownedOf(t *testing.T, objs ...client.Object) func(types.UID) ([]*v2alpha2.PodGroup, error) {
	t.Helper()
	idx := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, strays.OwnerUIDIndexers())
	for _, o := range objs {
		if pg, ok := o.(*v2alpha2.PodGroup); ok {
			require.NoError(t, idx.Add(pg.DeepCopy()))
		}
	}
	return strays.OwnedIn(idx)
}

// With the owner-UID lookup (Collector.Owned) the collector deletes the same strays as with a
// List of the namespace, never lists PodGroups, and never acts on a PodGroup of another namespace
// that names the same owner UID (a forged owner reference).
func TestCollectThroughOwnerUIDIndex(t *testing.T) {
	ctx := context.Background()
	forged := podGroup("pg-uid-1-old", "uid-1", gangmaps)
	forged.Namespace, forged.UID = "team-b", "forged"
	objs := []client.Object{
		podGroup("pg-uid-1-customjob", "uid-1", gangmaps),    // the current plan's, named
		podGroup("pg-uid-1-replica-1", "uid-1", gangmaps),    // planned, no pod yet
		podGroup("pg-uid-1-old", "uid-1", gangmaps),          // gangmap's, from an older definition
		podGroup("pg-train-uid-1", "uid-1", kais),            // KAI's one-pod PodGroup
		podGroup("pg-uid-1-named", "uid-1", kais),            // KAI's, still named by a pod
		podGroup("pg-uid-1-external", "uid-1", nil),          // someone else's (KAI external PodGroups)
		podGroup("pg-other-workload", "uid-other", gangmaps), // another workload's
		forged,
		pod("p0", "pg-uid-1-customjob"), pod("p1", "pg-uid-1-named"),
	}
	c := newClient(t, objs...)
	rec := record.NewFakeRecorder(10)
	col := &strays.Collector{Client: listsNoPodGroups{t: t, Client: c}, Owned: ownedOf(t, objs...), Grace: 50 * time.Millisecond, Recorder: rec}
	w := strays.Workload{Owner: owner(), Keep: []string{"pg-uid-1-customjob", "pg-uid-1-replica-1"}}
	next, err := col.Collect(ctx, w)
	require.NoError(t, err)
	assert.Greater(t, next, time.Duration(0))
	assert.Len(t, names(t, c), 7, "nothing is deleted before the grace period")
	time.Sleep(60 * time.Millisecond)
	_, err = col.Collect(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, []string{"pg-other-workload", "pg-uid-1-customjob", "pg-uid-1-external", "pg-uid-1-named", "pg-uid-1-replica-1"}, names(t, c))
	assert.Len(t, drain(rec), 2)
	kept := &v2alpha2.PodGroup{}
	assert.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "team-b", Name: "pg-uid-1-old"}, kept), "another namespace's PodGroup is never the namespaced workload's")
}

// listsNoPodGroups fails the test on a List of PodGroups.
type listsNoPodGroups struct {
	client.Client
	t *testing.T
}

func (l listsNoPodGroups) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*v2alpha2.PodGroupList); ok {
		l.t.Error("the collector listed PodGroups although it has the owner-UID lookup")
	}
	return l.Client.List(ctx, list, opts...)
}

// BenchmarkOwnerIndexBytes reports the live heap per cached PodGroup (10,000 PodGroups of the
// scale benchmark's shape, one workload each, in a client-go store with the namespace index as
// controller-runtime's cache has) of the index the stray collector reads: none, controller-runtime's
// field index (IndexOwner: "namespace/uid" and "__all_namespaces/uid" keys, a set each) and the
// owner-UID index (IndexOwnerUID: the PodGroup's own UID string as the key).
func BenchmarkOwnerIndexBytes(b *testing.B) {
	const n = 10000
	pgs := make([]*v2alpha2.PodGroup, n)
	for i := range pgs {
		pgs[i] = &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "scale", Name: fmt.Sprintf("pg-%08x-0000-4000-8000-%012x-customjob", i, i),
			OwnerReferences: []metav1.OwnerReference{{UID: types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i))}}}}
	}
	// controller-runtime's indexByField (pkg/cache/informer_cache.go) around strays.OwnerUID.
	fieldIndex := func(obj any) ([]string, error) {
		o := obj.(client.Object)
		var out []string
		for _, v := range strays.OwnerUID(o) {
			out = append(out, o.GetNamespace()+"/"+v, "__all_namespaces/"+v)
		}
		return out, nil
	}
	for _, tc := range []struct {
		name string
		idx  toolscache.Indexers
	}{{"namespace-index-only", toolscache.Indexers{}},
		{"field-index", toolscache.Indexers{"field:" + strays.OwnerField: fieldIndex}},
		{"owner-uid-index", strays.OwnerUIDIndexers()}} {
		b.Run(tc.name, func(b *testing.B) {
			tc.idx[toolscache.NamespaceIndex] = toolscache.MetaNamespaceIndexFunc
			var per float64
			for range b.N {
				before := liveHeap()
				s := toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, tc.idx)
				for _, pg := range pgs {
					require.NoError(b, s.Add(pg))
				}
				per = float64(liveHeap()-before) / n
				runtime.KeepAlive(s)
			}
			b.ReportMetric(per, "bytes/podgroup")
		})
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
