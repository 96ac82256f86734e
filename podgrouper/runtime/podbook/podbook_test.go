package podbook

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

func names(pods []types.NamespacedName) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

func TestGroupedFollowsGroupAndUngroup(t *testing.T) {
	b := New()
	b.Group(key("a"), "w1")
	b.Group(key("b"), "w1")
	b.Group(key("c"), "w2")
	require.Equal(t, []string{"a", "b"}, names(b.Grouped("w1")))
	b.Group(key("a"), "w2") // moved to another owner
	require.Equal(t, []string{"b"}, names(b.Grouped("w1")))
	require.Equal(t, []string{"a", "c"}, names(b.Grouped("w2")))
	b.Ungroup(key("c"))
	require.Equal(t, []string{"a"}, names(b.Grouped("w2")))
	b.UngroupOwner("w1")
	require.Empty(t, b.Grouped("w1"))
	require.Equal(t, 1, b.Len(), "only a is left")
	b.Forget(key("a"))
	require.Equal(t, 0, b.Len())
	require.Empty(t, b.Grouped("w2"))
}

// TestGroupedMatchesAModel groups, moves and forgets random pods and compares every owner's
// list with a plain map of sets.
func TestGroupedMatchesAModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	b := New()
	model := map[string]types.UID{}
	for step := range 20000 {
		pod := fmt.Sprint("p", rng.Intn(200))
		owner := types.UID(fmt.Sprint("w", rng.Intn(10)))
		switch rng.Intn(5) {
		case 0:
			b.Ungroup(key(pod))
			delete(model, pod)
		case 1:
			if step%50 == 0 {
				b.UngroupOwner(owner)
				for p, o := range model {
					if o == owner {
						delete(model, p)
					}
				}
			}
		case 2:
			b.Forget(key(pod))
			delete(model, pod)
		default:
			b.Group(key(pod), owner)
			model[pod] = owner
		}
	}
	for w := range 10 {
		owner := types.UID(fmt.Sprint("w", w))
		var want []string
		for p, o := range model {
			if o == owner {
				want = append(want, p)
			}
		}
		sort.Strings(want)
		require.Equal(t, want, nonNil(names(b.Grouped(owner))), "owner %s", owner)
	}
	require.Equal(t, len(model), b.Len())
}

func nonNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestFirstRepairIsPerPodUID(t *testing.T) {
	b := New()
	require.True(t, b.FirstRepair(key("a"), "uid-1"))
	require.False(t, b.FirstRepair(key("a"), "uid-1"), "a stale reconcile of the same pod")
	b.Ungroup(key("a"))
	require.False(t, b.FirstRepair(key("a"), "uid-1"), "ungrouping keeps the repair")
	require.True(t, b.FirstRepair(key("a"), "uid-2"), "a new pod of the same name")
	b.Forget(key("a"))
	require.Equal(t, 0, b.Len())
	require.True(t, b.FirstRepair(key("a"), "uid-2"), "forgotten with the pod")
}

func TestPartsAreIndependent(t *testing.T) {
	b := New()
	old, had := b.SwapFinding(key("a"), &Finding{Owner: "w1", Role: "workers"})
	require.False(t, had)
	require.Equal(t, Finding{}, old)
	_, had = b.SwapMetric(key("a"), &Metric{Owner: "w1", Serial: 3, Role: "workers", Phase: "Pending"})
	require.False(t, had)
	b.Group(key("a"), "w1")

	old, had = b.SwapFinding(key("a"), nil)
	require.True(t, had)
	require.Equal(t, Finding{Owner: "w1", Role: "workers"}, old)
	m, ok := b.Metric(key("a"))
	require.True(t, ok, "the metric stays")
	require.Equal(t, Metric{Owner: "w1", Serial: 3, Role: "workers", Phase: "Pending"}, m)
	require.Equal(t, []string{"a"}, names(b.Grouped("w1")))

	old2, had := b.SwapMetric(key("a"), nil)
	require.True(t, had)
	require.Equal(t, "Pending", old2.Phase)
	require.Equal(t, 1, b.Len(), "still grouped")
	b.Ungroup(key("a"))
	require.Equal(t, 0, b.Len(), "the entry goes with its last part")

	_, had = b.SwapFinding(key("x"), nil)
	require.False(t, had)
	require.Equal(t, 0, b.Len(), "removing nothing makes no entry")
}
