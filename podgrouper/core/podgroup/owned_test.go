package podgroup_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
	"github.com/gangmap/gangmap/podgrouper/runtime/strays"
)

// storeReader lists PodGroups as controller-runtime's cache reader does (CacheReader.List:
// the store's namespace index, the stored objects without a deep copy, apimeta.SetList); with
// fail set every List fails. lists counts the List calls.
type storeReader struct {
	store toolscache.Indexer
	fail  bool
	lists int
}

var (
	_ client.Reader = (*storeReader)(nil)
	// The writers keyed by PodGroup look up a workload's own PodGroups in the stray collector's
	// owner index (strays cannot import podgroup: podgroup's own tests import strays).
	_ podgroup.OwnerLister = (*strays.OwnerIndex)(nil)
)

func (r *storeReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("storeReader: no Get")
}

func (r *storeReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.lists++
	if r.fail {
		return errors.New("storeReader: the namespace was listed")
	}
	o := client.ListOptions{}
	o.ApplyOptions(opts)
	items, err := r.store.ByIndex(toolscache.NamespaceIndex, o.Namespace)
	if err != nil {
		return err
	}
	objs := make([]runtime.Object, 0, len(items))
	for _, it := range items {
		objs = append(objs, it.(runtime.Object))
	}
	return apimeta.SetList(list, objs)
}

// notSynced is an owner lookup that cannot answer yet.
type notSynced struct{}

func (notSynced) Owned(string, types.UID) ([]*v2alpha2.PodGroup, error) {
	return nil, strays.ErrOwnerIndexNotSynced
}

// cachedPodGroups holds the same PodGroups in an informer's store (for the namespace list) and
// in an owner index fed with them (as the informer's handler feeds it).
type cachedPodGroups struct {
	store toolscache.Indexer
	index *strays.OwnerIndex
}

func newCachedPodGroups() *cachedPodGroups {
	return &cachedPodGroups{
		store: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}),
		index: strays.NewOwnerIndex(),
	}
}

// add stores a PodGroup with owner references to the given UIDs (none: no owner reference).
func (c *cachedPodGroups) add(tb testing.TB, ns, name string, owners ...types.UID) {
	pg := &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, uid := range owners {
		pg.OwnerReferences = append(pg.OwnerReferences, metav1.OwnerReference{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet", Name: "w", UID: uid})
	}
	require.NoError(tb, c.store.Add(pg))
	c.index.OnAdd(pg, true)
}

// addOthers stores n alpha PodGroups of n other workloads in ns (pg-<their UID>-train, each
// owned by its workload) and returns nothing: the haystack of the tests.
func (c *cachedPodGroups) addOthers(tb testing.TB, ns string, n int) {
	for i := range n {
		uid := types.UID(fmt.Sprintf("other-%05d", i))
		c.add(tb, ns, gang.KAIAlphaName(string(uid), "train"), uid)
	}
}

const workloadUID = types.UID("0f6c2a8e-lws")

var plannedByKey = gang.KAIAlphaName(string(workloadUID), `{.metadata.labels["leaderworkerset.sigs.k8s.io/group-index"]}`)

// TestActualNamesThroughOwnerIndex: a LeaderWorkerSet's alpha plan names its PodGroups by each
// pod's group index (pg-<UID>-{group index}); its namespace holds 5,000 PodGroups of other
// workloads. Through the owner index the answer is exactly the workload's own PodGroups of its
// namespace that the planned name can take (sorted, after the plain names), and the namespace is
// never listed. The namespace list (no index, or an index not synced yet) gives the same names
// plus the PodGroups that carry the workload's UID in their name but not the workload as their
// only owner; the owner index leaves those alone (better: no writer annotates an object that is
// not the workload's). Another namespace's PodGroup of the workload counts in neither.
func TestActualNamesThroughOwnerIndex(t *testing.T) {
	ctx := context.Background()
	c := newCachedPodGroups()
	c.addOthers(t, "ns", 5000)
	for _, v := range []string{"1", "0", "2"} {
		c.add(t, "ns", gang.KAIAlphaName(string(workloadUID), v), workloadUID)
	}
	c.add(t, "ns", "pg-w-"+string(workloadUID), workloadUID)                                // its default PodGroup: another name
	c.add(t, "other", gang.KAIAlphaName(string(workloadUID), "3"), workloadUID)             // another namespace
	c.add(t, "ns", gang.KAIAlphaName(string(workloadUID), "orphan"))                        // no owner
	c.add(t, "ns", gang.KAIAlphaName(string(workloadUID), "foreign"), "someone-else")       // another owner
	c.add(t, "ns", gang.KAIAlphaName(string(workloadUID), "shared"), workloadUID, "second") // two owners
	planned := []string{"pg-" + string(workloadUID) + "-leader", plannedByKey}
	own := []string{"pg-" + string(workloadUID) + "-leader", "pg-" + string(workloadUID) + "-0", "pg-" + string(workloadUID) + "-1", "pg-" + string(workloadUID) + "-2"}

	failing := &storeReader{store: c.store, fail: true}
	names, complete, err := podgroup.ActualNames(ctx, failing, c.index, "ns", workloadUID, planned)
	require.NoError(t, err)
	assert.True(t, complete)
	assert.Equal(t, own, names)
	assert.Zero(t, failing.lists, "the namespace is not listed")

	names, complete, err = podgroup.ActualNames(ctx, failing, c.index, "empty", workloadUID, planned)
	require.NoError(t, err)
	assert.False(t, complete, "no PodGroup of the workload in that namespace yet: the writer retries")
	assert.Equal(t, own[:1], names)
	assert.Zero(t, failing.lists)

	listed := append(own[:len(own):len(own)], "pg-"+string(workloadUID)+"-foreign", "pg-"+string(workloadUID)+"-orphan", "pg-"+string(workloadUID)+"-shared")
	for name, owned := range map[string]podgroup.OwnerLister{"no index": nil, "not synced": notSynced{}} {
		reader := &storeReader{store: c.store}
		names, complete, err = podgroup.ActualNames(ctx, reader, owned, "ns", workloadUID, planned)
		require.NoError(t, err, name)
		assert.True(t, complete, name)
		assert.Equal(t, []string{own[0]}, names[:1], name)
		assert.ElementsMatch(t, listed, names, name)
		assert.Equal(t, 1, reader.lists, name)
	}
	names, _, err = podgroup.ActualNames(ctx, &storeReader{store: c.store}, c.index, "ns", "", planned)
	require.NoError(t, err)
	assert.ElementsMatch(t, listed, names, "without the workload's UID the namespace is listed")

	_, complete, err = podgroup.ActualNames(ctx, failing, notSynced{}, "ns", workloadUID, planned)
	assert.EqualError(t, err, "storeReader: the namespace was listed", "the list's error")
	assert.False(t, complete)
}

// BenchmarkActualNames: one workload's look (as the findings reporter's tick, the status keeper
// and the workload metrics' scrape make per workload) in a namespace of 10,000 LeaderWorkerSets'
// PodGroups, one each: "list" lists and matches the namespace's PodGroups (before session 7's
// change), "owner" reads the workload's own from the owner index.
func BenchmarkActualNames(b *testing.B) {
	ctx := context.Background()
	c := newCachedPodGroups()
	c.addOthers(b, "ns", 9999)
	c.add(b, "ns", gang.KAIAlphaName(string(workloadUID), "0"), workloadUID)
	planned := []string{plannedByKey}
	for _, bc := range []struct {
		name  string
		owned podgroup.OwnerLister
	}{{"list", nil}, {"owner", c.index}} {
		b.Run(bc.name, func(b *testing.B) {
			reader := &storeReader{store: c.store}
			b.ReportAllocs()
			for b.Loop() {
				names, complete, err := podgroup.ActualNames(ctx, reader, bc.owned, "ns", workloadUID, planned)
				if err != nil || !complete || len(names) != 1 {
					b.Fatalf("names %v complete %v error %v", names, complete, err)
				}
			}
		})
	}
}
