package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// TestPodGroupCacheHandlerPassesEveryPodGroup: the informer's add, update and delete of a
// PodGroup, and a deletion known only by its last state (client-go's DeletedFinalStateUnknown,
// which a watch that missed the delete delivers), each reach seen with that PodGroup; an object of
// another type does not.
func TestPodGroupCacheHandlerPassesEveryPodGroup(t *testing.T) {
	var got []string
	h := PodGroupCacheHandler(func(pg *v2alpha2.PodGroup) { got = append(got, pg.Namespace+"/"+pg.Name) })
	pg := func(name string) *v2alpha2.PodGroup {
		return &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}}
	}
	h.OnAdd(pg("added"), false)
	h.OnUpdate(pg("added"), pg("updated"))
	h.OnDelete(pg("deleted"))
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "team-a/tombstone", Obj: pg("tombstone")})
	h.OnAdd(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "a-pod"}}, false)
	want := []string{"team-a/added", "team-a/updated", "team-a/deleted", "team-a/tombstone"}
	if len(got) != len(want) {
		t.Fatalf("seen %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("seen %v, want %v", got, want)
		}
	}
}
