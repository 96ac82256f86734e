package expr

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileObject is a workload whose author wrote long strings: 300 KB of "a." (150,000
// dot-separated words), a 1 MiB string, and a 64-element array to drive loops.
func hostileObject() map[string]any {
	items := make([]any, 64)
	for i := range items {
		items[i] = i
	}
	return map[string]any{
		"path":  strings.Repeat("a.", 150_000),
		"big":   strings.Repeat("x", 1<<20),
		"items": items,
		"n":     1_000_000_000,
	}
}

// TestJQBoundsPerBuiltinClass evaluates, per class of builtin that gojq runs without checking
// the deadline, an expression that would cost seconds to minutes of CPU or gigabytes on
// gojq's own builtins. Each must be refused by its bound (kind size or steps), never by the
// timeout: the timeout is a minute here, so a refusal proves the bound acted first.
func TestJQBoundsPerBuiltinClass(t *testing.T) {
	c := newTestCompiler(t, Limits{Timeout: time.Minute})
	// The step cases run with a tenth of the default step bound: the same bound acts, at a tenth
	// of the CPU (10M steps under -race on a loaded machine came close to the minute).
	cSteps := newTestCompiler(t, Limits{Timeout: time.Minute, MaxSteps: 1_000_000})
	in := Input{Object: hostileObject()}
	tests := []struct {
		class, src string
		kind       LimitKind
		detail     string
	}{
		{"regex: scan over 300 KB of user text", `[.path | scan("[^.]+")] | length`, LimitSize, "more than 10000 matches"},
		{"regex: test with a large pattern on 1 MiB", `.big | test("(x|y|z){1,100}q")`, LimitSize, "pattern instructions"},
		{"regex: gsub over 300 KB", `.path | gsub("\\."; "/")`, LimitSize, "more than 10000 matches"},
		{"regex: splits over 300 KB", `[.path | splits("\\.")] | length`, LimitSize, "more than 10000 matches"},
		{"regex: a pattern from the input", `"x" | test($variables.p)`, LimitSize, "pattern of"},
		{"repetition: string times a billion", `"x" * .n`, LimitSize, "string repetition"},
		{"repetition: 1 MiB times 8", `.big * 8`, LimitSize, "string repetition"},
		{"repetition: doubling by +", `reduce .items[] as $i ("xx"; . + .) | length`, LimitSize, `"+"`},
		{"repetition: doubling by +=", `reduce .items[] as $i ({s: "xx"}; .s += .s) | .s | length`, LimitSize, `"+"`},
		{"repetition: integer squaring", `reduce .items[] as $i (3; . * .)`, LimitSize, "integer product"},
		{"repetition: join of a shared string", `.big as $b | [.items[] | $b] | join("") | length`, LimitSize, "join"},
		{"explode: 1 MiB string", `.big | explode | length`, LimitSize, "explode"},
		{"indices: quadratic needle", `.big | indices(.[0:1000])`, LimitSize, "indices"},
		{"encoding: a shared value doubled 64 times", `reduce .items[] as $i ("x"; [., .]) | tojson | length`, LimitSize, "tojson"},
		{"comparison: a shared value doubled 64 times", `reduce .items[] as $i ("x"; [., .]) | . == .`, LimitSize, "comparing"},
		{"interpolation: a shared value", `reduce .items[] as $i ("x"; [., .]) | "\(.)" | length`, LimitSize, "tostring"},
		{"add: a shared string", `.big as $b | [.items[] | $b] | add | length`, LimitSize, "add"},
		{"setpath: a huge index", `setpath(["a", .n]; 1)`, LimitSize, "array index"},
		{"budget: unbounded recursion holds a frame per level", `def f: f; f`, LimitBudget, "function call refused"},
		{"budget: a recursive generator", `[limit(100000000; def g: ., (. + 1 | g); 0 | g)] | length`, LimitBudget, "refused"},
		{"steps: a long loop", `0 | until(false; .)`, LimitSteps, "steps"},
	}
	for _, tt := range tests {
		t.Run(tt.class, func(t *testing.T) {
			in := in
			if strings.Contains(tt.src, "$variables.p") {
				in.Variables = map[string]any{"p": strings.Repeat("a", 2000)}
			}
			cc := c
			if tt.kind == LimitSteps {
				cc = cSteps
			}
			got, err := evalExpr(t, cc, JQ, tt.src, Object, Action, in)
			assert.Nil(t, got)
			var le *LimitError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, tt.kind, le.Kind, "%v", err)
			assert.Contains(t, err.Error(), tt.detail)
		})
	}
}

// TestJQBoundsKeepOrdinaryResults checks that the guarded builtins and operators give gojq's
// results on ordinary values (with a minute's timeout: the results, not the clock, are checked
// here, and the 300 KB split under -race on a loaded machine passed the default second).
func TestJQBoundsKeepOrdinaryResults(t *testing.T) {
	c := newTestCompiler(t, Limits{Timeout: time.Minute})
	in := Input{Object: map[string]any{"s": "a.b[0].c", "a": []any{1, 2, 3, 2}, "path": strings.Repeat("a.", 150_000)}}
	tests := []struct {
		src  string
		want []any
	}{
		{`[(1,2) + (10,20)]`, []any{[]any{11, 12, 21, 22}}},
		{`[(1,2) == (1,2)]`, []any{[]any{true, false, false, true}}},
		{`[.s | scan("[^.\\[\\]]+")]`, []any{[]any{"a", "b", "0", "c"}}},
		{`.s | gsub("(?<x>[a-z])"; "<\(.x)>")`, []any{"<a>.<b>[0].<c>"}},
		{`[.s | splits("\\.")]`, []any{[]any{"a", "b[0]", "c"}}},
		{`"éa b" | [match("[a-z]"; "g") | [.offset, .length]]`, []any{[]any{[]any{1, 1}, []any{3, 1}}}},
		{`.s | sub("\\."; "-")`, []any{"a-b[0].c"}},
		{`"xyz" | gsub(""; "-")`, []any{"-x-y-z-"}},
		{`.a | sort_by(-.)`, []any{[]any{3, 2, 2, 1}}},
		{`.a | indices(2)`, []any{[]any{1, 3}}},
		{`.s | indices(".")`, []any{[]any{1, 6}}},
		{`"ab" * 3`, []any{"ababab"}},
		{`@base64 "x\(.a)"`, []any{"xWzEsMiwzLDJd"}},
		{`2 | IN(1, 2)`, []any{true}},
		{`[2] | inside([1, 2])`, []any{true}},
		{`.path | length`, []any{300_000}},
		{`.path | split(".") | length`, []any{150_001}},
		{`[path(.a[] | select(. == 2))]`, []any{[]any{[]any{"a", 1}, []any{"a", 3}}}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			got, err := evalExpr(t, c, JQ, tt.src, Object, Read, in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestJQErrorTextBounded: error(v) of a value whose encoding is exponentially large renders a
// short message, without encoding it (gojq's own message would).
func TestJQErrorTextBounded(t *testing.T) {
	c := newTestCompiler(t, Limits{Timeout: time.Minute})
	in := Input{Object: hostileObject()}
	for _, src := range []string{
		`reduce .items[] as $i ("x"; [., .]) | error`,
		`error(.big)`,
		`.big | halt_error`,
	} {
		t.Run(src, func(t *testing.T) {
			_, err := evalExpr(t, c, JQ, src, Object, Read, in)
			var ee *EvalError
			require.ErrorAs(t, err, &ee)
			assert.Less(t, len(err.Error()), 1024, "message bounded")
		})
	}
}

// TestJQUnboundedBuiltinsDoNotCompile: builtins gangmap has not bounded are refused at compile
// time, and the prelude shadows them too, so a definition in another scope cannot reach them.
func TestJQUnboundedBuiltinsDoNotCompile(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	for _, src := range []string{`tostream`, `now`, `jn(1; 2)`, `_match("a"; null; false)`, `getpath(["a"]) | combinations`, `$__gm`, `def _gm_guard: 1; 1`} {
		_, err := c.Compile(JQ, src, Object, Read)
		var ce *CompileError
		require.ErrorAs(t, err, &ce, src)
	}
	p, err := c.Compile(JQ, `def f: def tostream: 1; tostream; [f, (try tostream catch .)]`, Object, Read)
	require.NoError(t, err, "a query may define a function of a builtin's name")
	got, err := p.Eval(t.Context(), Input{Object: map[string]any{}})
	require.NoError(t, err)
	assert.Equal(t, []any{[]any{1, "tostream/0 is not available in gangmap definitions"}}, got)
}

// TestJQInputTooLarge: an input above MaxInputSize is refused before evaluation.
func TestJQInputTooLarge(t *testing.T) {
	c := newTestCompiler(t, Limits{MaxInputSize: 1 << 20})
	_, err := evalExpr(t, c, JQ, `.big | length`, Object, Read, Input{Object: hostileObject()})
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, LimitInput, le.Kind)
	assert.Contains(t, err.Error(), "input too large")
	require.ErrorAs(t, CheckInput(hostileObject(), Limits{MaxInputSize: 1 << 20}), &le)
	assert.NoError(t, CheckInput(hostileObject(), Limits{}))
}

// TestCELStringGrowthBounded: CEL's string-growing functions are refused before they allocate
// a result above MaxValueSize; cel-go's cost (charged after the call) would come too late.
func TestCELStringGrowthBounded(t *testing.T) {
	c := newTestCompiler(t, Limits{Timeout: time.Minute})
	in := Input{Object: hostileObject()}
	for _, src := range []string{
		`object.big.replace('x', object.big).size()`,
		`object.path.replace('', 'yyyyyyyyyyyyyyyy').size()`,
		`lists.range(100).map(i, object.big).join('').size()`,
		`lists.range(2).map(i, object.big).join(object.big).size()`,
		`'%s%s%s%s%s'.format([object.big, object.big, object.big, object.big, object.big]).size()`,
		`strings.quote(object.big + object.big).size()`,
	} {
		t.Run(src, func(t *testing.T) {
			got, err := evalExpr(t, c, CEL, src, Object, Read, in)
			assert.Nil(t, got)
			var le *LimitError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, LimitSize, le.Kind, "%v", err)
		})
	}
	got, err := evalExpr(t, c, CEL, `object.path.replace('.', '/').size()`, Object, Read, in)
	require.NoError(t, err)
	assert.Equal(t, []any{300_000}, got, "an ordinary replace still works")
}
