package workloadmetrics

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPodCountsMatchAMap adds and takes random pods of up to 20 states (past smallStates, so
// the list turns into a map) and compares the counts with a plain map's.
func TestPodCountsMatchAMap(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	var c podCounts
	model := map[podState]int{}
	for step := range 5000 {
		states := 4
		if step > 2000 {
			states = 20
		}
		s := podState{role: fmt.Sprint("r", rng.Intn(states)), phase: fmt.Sprint("P", rng.Intn(2))}
		n := 1
		if rng.Intn(2) == 0 {
			n = -1
		}
		c.add(s, n)
		if model[s] += n; model[s] <= 0 {
			delete(model, s)
		}
		got := map[podState]int{}
		c.each(func(s podState, n int) { got[s] = n })
		require.Equal(t, model, got, "step %d", step)
		require.Equal(t, len(model), c.len())
	}
	require.NotNil(t, c.big, "past smallStates")
}
