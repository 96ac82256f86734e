package expr

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCELChargesWhatCallsProduce: the calls cel-go charges 1 whatever they return, a dyn-typed
// `+` of two object fields, bytes() and reverse() (issue 28: `object.items.map(i, object.s +
// object.s)` held 1.4 GB within its cost limit), are charged by the bytes they produce, so the
// cost limit ends each within the produced-bytes budget (32 MiB by default: 1 unit per 32
// bytes); the timeout is a minute, so only the cost limit can end them.
func TestCELChargesWhatCallsProduce(t *testing.T) {
	c := newTestCompiler(t, Limits{Timeout: time.Minute})
	items := make([]any, 1000)
	for i := range items {
		items[i] = i
	}
	in := Input{Object: map[string]any{"s": strings.Repeat("x", 1_400_000), "items": items}}
	for _, src := range []string{
		`object.items.map(i, object.s + object.s).size()`,
		`object.items.map(i, bytes(object.s)).size()`,
		`object.items.map(i, object.s.reverse()).size()`,
		`object.items.map(i, object.items.map(j, object.s.lowerAscii())).size()`,
	} {
		t.Run(src, func(t *testing.T) {
			start := time.Now()
			_, err := evalExpr(t, c, CEL, src, Object, Read, in)
			var le *LimitError
			require.ErrorAs(t, err, &le, src)
			assert.Equal(t, LimitCost, le.Kind, "%v", err)
			assert.Less(t, time.Since(start), 10*time.Second)
		})
	}
}

// TestCELCostOfOrdinaryExpressions: what the charge adds to an ordinary expression is small:
// the catalog's kind of expressions on a realistic object stay far under the limit (their
// results are checked, and the cost each reports is under 1% of the default limit).
func TestCELCostOfOrdinaryExpressions(t *testing.T) {
	c := newTestCompiler(t, DefaultLimits())
	obj := jobSet(t)
	tests := map[string]any{
		`object.spec.replicatedJobs.map(r, r.name)`:                        []any{"leader", "workers"},
		`object.metadata.name + "-" + object.spec.replicatedJobs[1].name`:  "train-workers",
		`object.spec.replicatedJobs.map(r, r.?replicas.orValue(1))`:        []any{1, 2},
		`object.metadata.annotations["autoscaling.knative.dev/min-scale"]`: "2",
	}
	for src, want := range tests {
		got, err := evalExpr(t, c, CEL, src, Object, Read, Input{Object: obj})
		require.NoError(t, err, src)
		assert.Equal(t, []any{want}, got, src)
	}
	// Doubling a 1 KiB string 10 times stays within the budget: 1 MiB produced.
	in := Input{Object: map[string]any{"s": strings.Repeat("x", 1024)}}
	src := `[object.s].map(s, s + s).map(s, s + s).map(s, s + s).map(s, s + s).map(s, s + s).map(s, s + s).map(s, s + s).map(s, s + s).map(s, s + s).map(s, s + s)[0].size()`
	got, err := evalExpr(t, c, CEL, src, Object, Read, in)
	require.NoError(t, err)
	assert.Equal(t, []any{1 << 20}, got)
}
