package strays_test

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gangmap/gangmap/podgrouper/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/strays"
)

// TestOwnerIndexFollowsTheStore: random event sequences as an informer delivers them (adds,
// updates that change a PodGroup's owner, give it a second owner, take all its owners away or
// change nothing (a resync), deletes and tombstones of the last known object), over PodGroups of
// two namespaces with equal names: after every event, the index's Owned(uid) is exactly the
// store's PodGroups whose only owner reference has that UID, and Len counts them. This is the
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
				var want []string
				for k, pg := range store {
					if len(pg.OwnerReferences) == 1 && pg.OwnerReferences[0].UID == uid {
						want = append(want, k+"@"+pg.ResourceVersion)
					}
				}
				got, err := idx.Owned(uid)
				require.NoError(t, err)
				var names []string
				for _, pg := range got {
					names = append(names, pg.Namespace+"/"+pg.Name+"@"+pg.ResourceVersion)
				}
				sort.Strings(want)
				sort.Strings(names)
				require.Equal(t, want, names, "sequence %d step %d owner %s", seq, step, uid)
				total += len(want)
			}
			require.Equal(t, total, idx.Len(), "sequence %d step %d", seq, step)
		}
	}
}
