package podcache

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gangmap/gangmap/podgrouper/runtime/podview"
)

func record(ns, name string, gen int) *podview.Record {
	return podview.ToRecord(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		UID: types.UID(fmt.Sprintf("%s-%s-%d", ns, name, gen))}})
}

// TestStoreBehavesAsClientGosStore applies the same random adds, updates, deletes (by Record and
// by tombstone, with and without its last object, of stored pods and of absent ones) and
// replaces to the store and to client-go's store with the namespace index (what the pod cache
// used, toolscache.NewIndexer with DeletionHandlingMetaNamespaceKeyFunc), and checks after each
// that both hold the same Records under the same keys, find the same by object and by key, and
// list the same per namespace.
func TestStoreBehavesAsClientGosStore(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 1))
	ours := newStore()
	theirs := toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	namespaces := []string{"a", "b", "c"}
	pick := func() (string, string) {
		return namespaces[rng.IntN(len(namespaces))], fmt.Sprintf("p%d", rng.IntN(12))
	}
	for step := range 5000 {
		ns, name := pick()
		var op string
		switch k := rng.IntN(20); {
		case k < 8:
			op = "add"
			r := record(ns, name, step)
			mustBoth(t, op, ours.Add(r), theirs.Add(r))
		case k < 12:
			op = "update"
			r := record(ns, name, step)
			mustBoth(t, op, ours.Update(r), theirs.Update(r))
		case k < 15:
			op = "delete"
			r := record(ns, name, step)
			mustBoth(t, op, ours.Delete(r), theirs.Delete(r))
		case k < 18:
			op = "tombstone"
			last, _, _ := theirs.GetByKey(ns + "/" + name)
			if rng.IntN(2) == 0 {
				last = nil
			}
			tomb := toolscache.DeletedFinalStateUnknown{Key: ns + "/" + name, Obj: last}
			mustBoth(t, op, ours.Delete(tomb), theirs.Delete(tomb))
		default:
			op = "replace"
			var list []any
			for range rng.IntN(10) {
				ns, name := pick()
				list = append(list, record(ns, name, step))
			}
			mustBoth(t, op, ours.Replace(slices.Clone(list), "1"), theirs.Replace(list, "1"))
		}
		sameContent(t, fmt.Sprintf("step %d (%s %s/%s)", step, op, ns, name), ours, theirs, namespaces)
		if t.Failed() {
			return
		}
	}
}

func mustBoth(t *testing.T, op string, ours, theirs error) {
	t.Helper()
	if ours != nil || theirs != nil {
		t.Fatalf("%s: ours %v, client-go's %v", op, ours, theirs)
	}
}

// sameContent checks that ours and theirs hold the same Records (pointers) under the same keys.
func sameContent(t *testing.T, at string, ours *store, theirs toolscache.Indexer, namespaces []string) {
	t.Helper()
	keys, want := ours.ListKeys(), theirs.ListKeys()
	slices.Sort(keys)
	slices.Sort(want)
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("%s: keys (-client-go +ours):\n%s", at, diff)
	}
	if n, m := len(ours.List()), len(theirs.List()); n != m {
		t.Errorf("%s: %d listed, client-go %d", at, n, m)
	}
	if n := len(ours.keys()); n != len(want) {
		t.Errorf("%s: keys() has %d, want %d", at, n, len(want))
	}
	for _, k := range want {
		w, _, _ := theirs.GetByKey(k)
		got, ok, err := ours.GetByKey(k)
		if err != nil || !ok || got != w {
			t.Errorf("%s: GetByKey(%s) = %v, %v, %v; want the Record client-go holds", at, k, got, ok, err)
		}
		if got, ok, err := ours.Get(w); err != nil || !ok || got != w {
			t.Errorf("%s: Get(%s's Record) = %v, %v, %v", at, k, got, ok, err)
		}
	}
	for _, ns := range namespaces {
		byIndex, err := theirs.ByIndex(toolscache.NamespaceIndex, ns)
		if err != nil {
			t.Fatal(err)
		}
		var got []any
		ours.each(ns, func(r *podview.Record) { got = append(got, r) })
		if !sameSet(got, byIndex) {
			t.Errorf("%s: namespace %s lists %d Records, client-go's index %d (or others)", at, ns, len(got), len(byIndex))
		}
	}
	if _, ok, _ := ours.GetByKey("a/absent"); ok {
		t.Errorf("%s: a/absent found", at)
	}
}

func sameSet(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	in := map[any]bool{}
	for _, x := range a {
		in[x] = true
	}
	for _, x := range b {
		if !in[x] {
			return false
		}
	}
	return true
}

// TestStoreRefusesWhatIsNotARecord: the store holds only Records; a pod or a malformed tombstone
// is an error, and a refused Replace changes nothing.
func TestStoreRefusesWhatIsNotARecord(t *testing.T) {
	s := newStore()
	r := record("a", "p1", 0)
	if err := s.Add(r); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(&corev1.Pod{}); err == nil {
		t.Error("a Pod was added")
	}
	if err := s.Delete(toolscache.DeletedFinalStateUnknown{Key: "a/b/c"}); err == nil {
		t.Error("a tombstone with key a/b/c was accepted")
	}
	if err := s.Replace([]any{record("b", "p2", 0), &corev1.Pod{}}, "2"); err == nil {
		t.Error("a Replace with a Pod was accepted")
	}
	if got, ok, _ := s.GetByKey("a/p1"); !ok || got != r || len(s.ListKeys()) != 1 {
		t.Errorf("after refused calls: a/p1 = %v, %v; keys %v", got, ok, s.ListKeys())
	}
}
