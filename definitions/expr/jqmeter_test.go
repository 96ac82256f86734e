package expr

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// meterInput is a workload whose fields drive each builtin family to a known output size: a
// 10,000-word dotted path, a 64 KiB string, a 4,096-element array and a 4,096-key object.
func meterInput() map[string]any {
	items := make([]any, 4096)
	obj := make(map[string]any, 4096)
	for i := range items {
		items[i] = i
		obj[strings.Repeat("k", 8)+string(rune('a'+i%26))+strings.Repeat("x", i/26)] = i
	}
	return map[string]any{
		"path":  strings.Repeat("a.", 10_000),
		"big":   strings.Repeat("x", 64<<10),
		"items": items,
		"obj":   obj,
		"num":   strings.Repeat("7", 100),
	}
}

// evalCharged compiles src and evaluates it on in, returning the results and the budget it
// charged.
func evalCharged(t *testing.T, l Limits, src string, in map[string]any) ([]any, *jqBudget, error) {
	t.Helper()
	c := newTestCompiler(t, l)
	p, err := c.Compile(JQ, src, Object, Read)
	require.NoError(t, err, src)
	out, b, err := p.(*jqProgram).eval(context.Background(), Input{Object: in})
	require.NotNil(t, b, src)
	return out, b, err
}

// TestEveryBuiltinFamilyIsCharged evaluates, per family of builtins, an expression whose output
// size is known from jq's documented semantics, and checks that the evaluation's budget was
// charged at least that output (elements and bytes, jqmeter.go's costs): what a builtin makes
// counts, whichever builtin it is.
func TestEveryBuiltinFamilyIsCharged(t *testing.T) {
	tests := []struct {
		family, src string
		// minElems and minBytes are the least the output itself holds.
		minElems, minBytes int64
	}{
		{"split/1: one string per piece", `.path | split(".") | length`, 10_001, 10_001 * costArrayElem},
		{"string division: one string per piece", `.path / "." | length`, 10_001, 10_001 * costArrayElem},
		{"regex split/2", `[.path[0:2000] | splits("\\.")] | length`, 1001, 1001 * costArrayElem},
		{"regex match objects", `[.path[0:2000] | match("a"; "g")] | length`, 1000 * 7, 1000 * costObject},
		{"keys: one key per entry", `.obj | keys | length`, 4096, 4096 * costArrayElem},
		{"to_entries: an object per entry", `.obj | to_entries | length`, 3 * 4096, 4096 * costObject},
		{"map: one element per output", `.items | map(. + 1) | length`, 4096, 4096 * costArrayElem},
		{"array construction", `[.items[], .items[]] | length`, 8192, 8192 * costArrayElem},
		{"object construction", `[.items[] | {a: ., b: .}] | length`, 3 * 4096, 4096 * costObject},
		{"string concatenation", `.big + .big | length`, 0, 2 * 64 << 10},
		{"string interpolation", `"\(.big)\(.big)" | length`, 0, 2 * 64 << 10},
		{"case conversion", `.big | ascii_upcase | length`, 0, 64 << 10},
		{"encoding", `.items | tojson | length`, 0, 4096 * 2},
		{"decoding", `.items | tojson | fromjson | length`, 4096, 4096 * costArrayElem},
		{"explode", `.big[0:4096] | explode | length`, 4096, 4096 * costArrayElem},
		{"join", `.items | map(tostring) | join(",") | length`, 4096, 4096 * 2},
		{"sort", `.items | sort | length`, 4096, 4096 * costArrayElem},
		{"group_by", `.items | group_by(. % 7) | length`, 4096, 4096 * costArrayElem},
		{"reverse", `.items | reverse | length`, 4096, 4096 * costArrayElem},
		{"flatten", `[.items, .items] | flatten | length`, 8192, 8192 * costArrayElem},
		{"add", `[.items, .items] | add | length`, 8192, 8192 * costArrayElem},
		{"formats", `.big | @base64 | length`, 0, 64 << 10},
		{"substrings", `.big | ltrimstr("x") | length`, 0, 64<<10 - 1},
		{"repetition", `"ab" * 10000 | length`, 0, 20_000},
		{"setpath", `setpath(["a"]; .items) | length`, 1, costObject},
		{"number parsing", `.num | tonumber | type`, 0, costScalar},
		{"scalars", `[.items[] | length] | length`, 4096, 4096 * costScalar},
	}
	for _, tt := range tests {
		t.Run(tt.family, func(t *testing.T) {
			out, b, err := evalCharged(t, DefaultLimits(), tt.src, meterInput())
			require.NoError(t, err, tt.src)
			require.Len(t, out, 1)
			assert.GreaterOrEqual(t, b.elems, tt.minElems, "elements charged by %s", tt.src)
			assert.GreaterOrEqual(t, b.bytes, tt.minBytes, "bytes charged by %s", tt.src)
		})
	}
}

// TestBudgetRefusesBeforeTheBuiltinRuns: the builtins whose output is large before it can be
// measured, or whose cost is not linear in it, are refused by their estimate before they run
// (the refusal names the builtin and the budget), with a timeout of a minute so that a refusal
// proves the bound acted, not the clock.
func TestBudgetRefusesBeforeTheBuiltinRuns(t *testing.T) {
	l := Limits{Timeout: time.Minute, MaxProducedBytes: 1 << 20, MaxProducedElements: 10_000}
	// Each case reads one field of these (together they pass the 3 MiB input bound).
	fields := map[string]string{
		"path":   strings.Repeat(".", 1_400_000),
		"digits": strings.Repeat("9", 1_400_000),
		"json":   "[" + strings.Repeat("9", 1_400_000) + "]",
		"big":    strings.Repeat("x", 1<<20),
	}
	tests := []struct {
		src    string
		kind   LimitKind
		detail string
	}{
		{`.path | split(".") | length`, LimitBudget, "split/1 refused"},
		{`.path / "." | length`, LimitBudget, `"/" refused`},
		{`.digits | tonumber`, LimitSize, "tonumber/0 refused: a numeric string of 1400000 bytes"},
		{`.json | fromjson`, LimitSize, "a number of 1400000 digits"},
		{`.big | explode | length`, LimitSize, "explode"},
		{`.big | tojson | length`, LimitBudget, "tojson refused"},
		{`[.big | splits("x")] | length`, LimitSize, "more than 10000 matches"},
		{`.big + .big | length`, LimitBudget, `"+" refused`},
		{`[(1,2,3,4,5,6,7,8,9,10) as $a | (1,2,3,4,5,6,7,8,9,10) as $b | (1,2,3,4,5,6,7,8,9,10) as $c | (1,2,3,4,5,6,7,8,9,10) | (., .)] | length`, LimitBudget, "array refused: the evaluation would produce 10001 elements"},
		{`def f: ., f; [limit(20000; .big | f)] | length`, LimitBudget, "function call refused"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			in := map[string]any{}
			for k, v := range fields {
				if strings.Contains(tt.src, "."+k) {
					in[k] = v
				}
			}
			start := time.Now()
			_, _, err := evalCharged(t, l, tt.src, in)
			var le *LimitError
			require.ErrorAs(t, err, &le, tt.src)
			assert.Equal(t, tt.kind, le.Kind, "%v", err)
			assert.Contains(t, err.Error(), tt.detail)
			assert.Less(t, time.Since(start), 5*time.Second, "refused late")
		})
	}
}

// TestEveryBuiltinHasACost: every builtin a definition may call has an entry in
// jqBuiltinCosts, every entry is an allowed builtin, and every entry that charges its output is
// reached through a prelude definition that calls _gm_out (generated or handwritten) or is
// charged by what it is made of.
func TestEveryBuiltinHasACost(t *testing.T) {
	for _, set := range []map[string]bool{jqSafeBuiltins, jqGuardedBuiltins, jqMathBuiltins} {
		for _, ref := range slices.Sorted(maps.Keys(set)) {
			_, ok := jqBuiltinCosts[ref]
			assert.True(t, ok, "allowed builtin %s has no cost entry", ref)
		}
	}
	defs := map[string]string{}
	for _, d := range jqPrelude {
		defs[d.key] = d.def.String()
	}
	for _, ref := range slices.Sorted(maps.Keys(jqBuiltinCosts)) {
		c := jqBuiltinCosts[ref]
		assert.True(t, jqAllowed(ref) || jqCompilerNames[ref], "cost entry %s is not an allowed builtin", ref)
		if c.depth != 0 {
			assert.Contains(t, defs[ref], `_gm_out($__gm; "`+ref+`")`, "%s is not charged by its prelude definition", ref)
		}
	}
}
