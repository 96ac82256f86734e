package strays_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/runtime/strays"
)

// TestOwnerIndexFollowsTheStore: random event sequences as an informer delivers them (adds,
// updates that change a PodGroup's owner, give it a second owner, take all its owners away or
// change nothing (a resync), deletes and tombstones of the last known object), over PodGroups of
// two namespaces with equal names: after every event, the index's Owned(namespace, uid) is
// exactly the store's PodGroups of that namespace whose only owner reference has that UID, and
// Owned("", uid) (a cluster-scoped owner's) those of every namespace, and Len counts them. This is the
// client-go index the OwnerIndex replaced, evaluated on the store (the stray collector's input).
func TestOwnerIndexFollowsTheStore(t *testing.T) {
	uids := []types.UID{"u0", "u1", "u2", "u3"}
	rng := rand.New(rand.NewPCG(7, 19))
	owners := func() []metav1.OwnerReference {
		ref := func() metav1.OwnerReference {
			return metav1.OwnerReference{APIVersion: "v1", Kind: "K", Name: "w", UID: uids[rng.IntN(len(uids))]}
		}
		switch rng.IntN(6) {
		case 0:
			return nil
		case 1:
			return []metav1.OwnerReference{ref(), ref()}
		case 2:
			return []metav1.OwnerReference{{APIVersion: "v1", Kind: "K", Name: "w"}} // no UID
		default:
			return []metav1.OwnerReference{ref()}
		}
	}
	for seq := range 200 {
		idx := strays.NewOwnerIndex()
		store := map[string]*v2alpha2.PodGroup{}
		for step := range 60 {
			key := fmt.Sprintf("ns-%d/pg-%d", rng.IntN(2), rng.IntN(5))
			cur := store[key]
			switch op := rng.IntN(4); {
			case cur == nil:
				pg := &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: key[:4], Name: key[5:], ResourceVersion: fmt.Sprint(step), OwnerReferences: owners()}}
				store[key] = pg
				idx.OnAdd(pg, false)
			case op == 0:
				idx.OnUpdate(cur, cur) // resync
			case op == 1:
				next := cur.DeepCopy()
				next.ResourceVersion, next.OwnerReferences = fmt.Sprint(step), owners()
				store[key] = next
				idx.OnUpdate(cur, next)
			case op == 2:
				delete(store, key)
				idx.OnDelete(cur)
			default:
				delete(store, key)
				idx.OnDelete(toolscache.DeletedFinalStateUnknown{Key: key, Obj: cur})
			}
			total := 0
			for _, uid := range uids {
				for _, ns := range []string{"", "ns-0", "ns-1"} {
					var want []string
					for k, pg := range store {
						if len(pg.OwnerReferences) == 1 && pg.OwnerReferences[0].UID == uid && (ns == "" || pg.Namespace == ns) {
							want = append(want, k+"@"+pg.ResourceVersion)
						}
					}
					got, err := idx.Owned(ns, uid)
					require.NoError(t, err)
					var names []string
					for _, pg := range got {
						names = append(names, pg.Namespace+"/"+pg.Name+"@"+pg.ResourceVersion)
					}
					sort.Strings(want)
					sort.Strings(names)
					require.Equal(t, want, names, "sequence %d step %d owner %s namespace %q", seq, step, uid, ns)
					if ns == "" {
						total += len(want)
					}
				}
			}
			require.Equal(t, total, idx.Len(), "sequence %d step %d", seq, step)
		}
	}
}

// TestOwnerIndexCostStaysInTheNamespace (issue 28): 50,000 PodGroups a user of namespace team-b
// created carrying the UID of a workload of team-a. Keyed by the UID alone, every add or remove
// copied the whole list under the write lock (42.8 s of CPU and 20 GB for one update each).
// Keyed by namespace and UID, an update of one of them, and of the workload's own PodGroup,
// allocates under a kilobyte (no copy of the 50,000), and the workload's look finds only its
// own PodGroup; the cluster-scoped look (namespace "") still finds them all.
func TestOwnerIndexCostStaysInTheNamespace(t *testing.T) {
	idx := strays.NewOwnerIndex()
	ref := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "uid-a"}}
	own := &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "pg-train", OwnerReferences: ref}}
	idx.OnAdd(own, true)
	var last *v2alpha2.PodGroup
	for i := range 50_000 {
		last = &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: fmt.Sprint("pg-", i), OwnerReferences: ref}}
		idx.OnAdd(last, true)
	}
	require.Equal(t, 50_001, idx.Len())
	next := last.DeepCopy()
	next.ResourceVersion = "2"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		idx.OnUpdate(last, next)
		idx.OnUpdate(next, last)
		idx.OnUpdate(own, own)
	}
	runtime.ReadMemStats(&after)
	perUpdate := float64(after.TotalAlloc-before.TotalAlloc) / 300
	require.Less(t, perUpdate, 1024.0, "bytes allocated per update: a copy of the 50,000 would be 400 KB")
	got, err := idx.Owned("team-a", "uid-a")
	require.NoError(t, err)
	require.Equal(t, []*v2alpha2.PodGroup{own}, got)
	all, err := idx.Owned("", "uid-a")
	require.NoError(t, err)
	require.Len(t, all, 50_001)
	idx.OnDelete(last)
	idx.OnDelete(own)
	all, err = idx.Owned("", "uid-a")
	require.NoError(t, err)
	require.Len(t, all, 49_999)
	got, err = idx.Owned("team-a", "uid-a")
	require.NoError(t, err)
	require.Empty(t, got)
}
