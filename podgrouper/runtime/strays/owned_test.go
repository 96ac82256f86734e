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

	"github.com/gangmap/gangmap/internal/heapmeasure"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/runtime/strays"
)

// Through the owner index (Collector.Owned) the collector never lists PodGroups, and never acts
// on a PodGroup of another namespace that names the same owner UID (a forged owner reference).
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
	}
	c, idx := newIndexedClient(t, objs...)
	rec := record.NewFakeRecorder(10)
	col, _ := newCollector(t, listsNoPodGroups{t: t, Client: c}, idx, 50*time.Millisecond, pod("p0", "pg-uid-1-customjob"), pod("p1", "pg-uid-1-named"))
	col.Recorder = rec
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
// field index (session 5: "namespace/uid" and "__all_namespaces/uid" keys, a set each), a
// client-go index keyed by the owner's UID string (session 6: a set per UID) and the OwnerIndex
// (session 7: a map entry per owner UID, fed by the informer's events).
func BenchmarkOwnerIndexBytes(b *testing.B) {
	const n = 10000
	pgs := make([]*v2alpha2.PodGroup, n)
	for i := range pgs {
		pgs[i] = &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "scale", Name: fmt.Sprintf("pg-%08x-0000-4000-8000-%012x-customjob", i, i),
			OwnerReferences: []metav1.OwnerReference{{UID: types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i))}}}}
	}
	ownerUID := func(obj any) []string {
		refs := obj.(client.Object).GetOwnerReferences()
		if len(refs) != 1 || refs[0].UID == "" {
			return nil
		}
		return []string{string(refs[0].UID)}
	}
	// controller-runtime's indexByField (pkg/cache/informer_cache.go) around ownerUID.
	fieldIndex := func(obj any) ([]string, error) {
		var out []string
		for _, v := range ownerUID(obj) {
			out = append(out, obj.(client.Object).GetNamespace()+"/"+v, "__all_namespaces/"+v)
		}
		return out, nil
	}
	rawIndex := func(obj any) ([]string, error) { return ownerUID(obj), nil }
	for _, tc := range []struct {
		name  string
		idx   toolscache.Indexers
		owner bool
	}{{"namespace-index-only", toolscache.Indexers{}, false},
		{"field-index", toolscache.Indexers{"field:owner": fieldIndex}, false},
		{"client-go-owner-uid-index", toolscache.Indexers{"owner": rawIndex}, false},
		{"owner-index", toolscache.Indexers{}, true}} {
		b.Run(tc.name, func(b *testing.B) {
			tc.idx[toolscache.NamespaceIndex] = toolscache.MetaNamespaceIndexFunc
			var per float64
			for range b.N {
				before := heapmeasure.Live()
				s := toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, tc.idx)
				var owners *strays.OwnerIndex
				if tc.owner {
					owners = strays.NewOwnerIndex()
				}
				for _, pg := range pgs {
					require.NoError(b, s.Add(pg))
					if owners != nil {
						owners.OnAdd(pg, true)
					}
				}
				per = float64(heapmeasure.Live()-before) / n
				runtime.KeepAlive(s)
				runtime.KeepAlive(owners)
			}
			b.ReportMetric(per, "bytes/podgroup")
		})
	}
}
