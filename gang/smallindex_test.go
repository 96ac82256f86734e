package gang

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSmallIndexMatchesAMap sets random keys (fewer than smallIndexSize, then more, so the list
// turns into a map) and compares every get with a Go map's.
func TestSmallIndexMatchesAMap(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	var x smallIndex[gangKey, int]
	model := map[gangKey]int{}
	for step := range 2000 {
		keys := 6
		if step > 500 {
			keys = 40
		}
		k := gangKey{gang: fmt.Sprint("g", rng.Intn(3)), replica: fmt.Sprint(rng.Intn(keys / 3))}
		x.set(k, step)
		model[k] = step
		for probe := range 50 {
			pk := gangKey{gang: fmt.Sprint("g", probe%4), replica: fmt.Sprint(probe / 4)}
			require.Equal(t, model[pk], x.get(pk), "step %d key %v", step, pk)
		}
	}
	require.NotNil(t, x.m, "past smallIndexSize")
}
