package podbook

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// modelPod is what a plain map keeps of one pod, for TestBookMatchesAModel.
type modelPod struct {
	grouped  types.UID
	repaired types.UID
	finding  *Finding
	metric   *Metric
}

func (m modelPod) empty() bool {
	return m.grouped == "" && m.repaired == "" && m.finding == nil && m.metric == nil
}

// TestBookMatchesAModel runs random operations of every part on a Book and on a map of plain
// records, and compares what each returns after every step, then everything the Book holds;
// forgetting every pod at the end leaves no entry and no owner behind.
func TestBookMatchesAModel(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	b := New()
	model := map[types.NamespacedName]*modelPod{}
	pick := func(prefix string, n int) string { return fmt.Sprint(prefix, rng.Intn(n)) }
	for step := range 60000 {
		pods := 300
		if step/10000%2 == 1 {
			pods = 3000 // a wave of pods, gone in the next 10,000 steps
		}
		pod := types.NamespacedName{Namespace: pick("ns", 3), Name: pick("p", pods)}
		m := model[pod]
		if m == nil {
			m = &modelPod{}
			model[pod] = m
		}
		owner := types.UID(pick("w", 12))
		switch op := rng.Intn(10); op {
		case 0:
			b.Group(pod, owner)
			m.grouped = owner
		case 1:
			b.Ungroup(pod)
			m.grouped = ""
		case 2:
			if step%97 == 0 {
				b.UngroupOwner(owner)
				for k, p := range model {
					if p.grouped == owner {
						p.grouped = ""
					}
					if p.empty() {
						delete(model, k)
					}
				}
			}
		case 3:
			b.Forget(pod)
			*m = modelPod{}
		case 4:
			uid := types.UID(pick("uid", 3))
			require.Equal(t, m.repaired != uid, b.FirstRepair(pod, uid), "step %d", step)
			m.repaired = uid
		case 5, 6:
			var f *Finding
			if op == 5 {
				f = &Finding{Owner: owner, Role: pick("role", 4), Unclaimed: rng.Intn(2) == 0, Terminal: rng.Intn(2) == 0}
				if rng.Intn(4) == 0 {
					f.Role = ""
				}
			}
			old, had := b.SwapFinding(pod, f)
			require.Equal(t, m.finding != nil, had, "step %d", step)
			if m.finding != nil {
				require.Equal(t, *m.finding, old, "step %d", step)
			}
			m.finding = f
		default:
			var mt *Metric
			if op != 9 {
				mt = &Metric{Owner: owner, Serial: uint64(rng.Intn(5)), Role: pick("role", 4), Phase: pick("Phase", 3)}
			}
			old, had := b.SwapMetric(pod, mt)
			require.Equal(t, m.metric != nil, had, "step %d", step)
			if m.metric != nil {
				require.Equal(t, *m.metric, old, "step %d", step)
			}
			m.metric = mt
		}
		if m.empty() {
			delete(model, pod)
		}
		if step%5000 == 0 || step == 59999 {
			requireBookIs(t, b, model)
		}
	}
	for pod := range model {
		b.Forget(pod)
	}
	require.Equal(t, 0, b.Len())
	require.Empty(t, b.grouped, "no owner left")
}

// requireBookIs compares everything the Book holds with the model.
func requireBookIs(t *testing.T, b *Book, model map[types.NamespacedName]*modelPod) {
	t.Helper()
	require.Equal(t, len(model), b.Len())
	grouped := map[types.UID][]string{}
	for pod, m := range model {
		if m.grouped != "" {
			grouped[m.grouped] = append(grouped[m.grouped], pod.String())
		}
		mt, ok := b.Metric(pod)
		require.Equal(t, m.metric != nil, ok, "pod %s", pod)
		if ok {
			require.Equal(t, *m.metric, mt, "pod %s", pod)
		}
	}
	for w := range 12 {
		owner := types.UID(fmt.Sprint("w", w))
		var got []string
		for _, p := range b.Grouped(owner) {
			got = append(got, p.String())
		}
		sort.Strings(got)
		want := grouped[owner]
		sort.Strings(want)
		require.Equal(t, want, got, "owner %s", owner)
	}
}
