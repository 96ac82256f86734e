package expr

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compileErr compiles src and returns its *CompileError (failing the test when there is none).
func compileErr(t *testing.T, c *Compiler, lang Language, src string, mode Mode) *CompileError {
	t.Helper()
	p, err := c.Compile(lang, src, Object, mode)
	require.Error(t, err, "compile %s", src)
	assert.Nil(t, p)
	var ce *CompileError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, lang, ce.Language)
	assert.Equal(t, src, ce.Source)
	return ce
}

func TestJQForbiddenConstructs(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	tests := []struct{ src, want string }{
		{`del(.spec)`, "function del/1"},
		{`[range(5)]`, "function range/1"},
		{`[range(0; 5)]`, "function range/2"},
		{`[range(0; 10; 2)]`, "function range/3"},
		{`[paths]`, "function paths/0"},
		{`[paths(type == "number")]`, "function paths/1"},
		{`recurse`, "function recurse/0"},
		{`recurse(.[]?)`, "function recurse/1"},
		{`recurse(.[]?; . != null)`, "function recurse/2"},
		{`walk(.)`, "function walk/1"},
		{`[limit(3; repeat(1))]`, "function repeat/1"},
		{`..`, "recursive descent (..)"},
		{`[.. | numbers]`, "recursive descent (..)"},
		{`..[]?`, "recursive descent (..)"},
		// nested in every kind of node
		{`if .a then [..] else 1 end`, "recursive descent"},
		{`if .a then 1 elif .b then range(3) else 2 end`, "function range/1"},
		{`if paths then 1 else 2 end`, "function paths/0"},
		{`if .a then 1 else walk(.) end`, "function walk/1"},
		{`reduce .[] as $x (0; . + ([$x | recurse] | length))`, "function recurse/0"},
		{`reduce range(3) as $x (0; . + $x)`, "function range/1"},
		{`reduce .[] as $x (del(.a); .)`, "function del/1"},
		{`foreach .[] as $x (0; . + 1; walk(.))`, "function walk/1"},
		{`foreach .[] as {(paths | tostring): $v} (0; . + 1)`, "function paths/0"},
		{`reduce .[] as [$a, {b: $c, (del(.x)): $d}] (0; .)`, "function del/1"},
		{`foreach .[] as $x (0; . + 1)  | ..`, "recursive descent"},
		{`{a: [paths]}`, "function paths/0"},
		{`{(del(.a) | tostring): 1}`, "function del/1"},
		{`{"\(range(2))": 1}`, "function range/1"},
		{`"\(range(3))"`, "function range/1"},
		{`@base64 "x\(paths)"`, "function paths/0"},
		{`.[range(1)]`, "function range/1"},
		{`.[range(1):2]`, "function range/1"},
		{`.[1:(repeat(1))]`, "function repeat/1"},
		{`.a["\(recurse)"]`, "function recurse/0"},
		{`.spec.replicatedJobs[range(1)]`, "function range/1"},
		{`map(recurse)`, "function recurse/0"},
		{`select(any(paths; true))`, "function paths/0"},
		{`def f: recurse; f`, "function recurse/0"},
		{`def f(g): g | ..; f(.)`, "recursive descent"},
		{`def range: 1; range`, "function range/0"},
		{`. as [$a] | recurse`, "function recurse/0"},
		{`range(1) as $x | $x`, "function range/1"},
		{`. as {(range(1) | tostring): $v} | $v`, "function range/1"},
		{`. as [$a] ?// {a: $a} | walk(.)`, "function walk/1"},
		{`try recurse catch 1`, "function recurse/0"},
		{`try 1 catch del(.)`, "function del/1"},
		{`label $out | repeat(1)`, "function repeat/1"},
		{`-(recurse)`, "function recurse/0"},
		{`[.[] | (.a | walk(.))]`, "function walk/1"},
		{`.a? // ..`, "recursive descent"},
		{`(.a, (.b | paths))`, "function paths/0"},
		{`.a and (recurse | not)`, "function recurse/0"},
		{`path(..)`, "recursive descent"},
	}
	for _, mode := range []Mode{Read, Action} {
		for _, tt := range tests {
			t.Run(tt.src, func(t *testing.T) {
				ce := compileErr(t, c, JQ, tt.src, mode)
				assert.Contains(t, ce.Reason, tt.want)
				assert.Contains(t, ce.Error(), tt.want)
			})
		}
	}
}

func TestJQAssignmentOnlyInAction(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	tests := []struct{ src, op string }{
		{`.spec.suspend = true`, `"="`},
		{`.spec.suspend |= not`, `"|="`},
		{`.spec.replicas += 1`, `"+="`},
		{`.spec.replicas -= 1`, `"-="`},
		{`.spec.replicas *= 2`, `"*="`},
		{`.spec.replicas /= 2`, `"/="`},
		{`.spec.replicas %= 2`, `"%="`},
		{`.spec.replicas //= 1`, `"//="`},
		{`[.[] | .a |= 1]`, `"|="`},
		{`if true then .a = 1 else . end`, `"="`},
		{`{a: (.b += 1)}`, `"+="`},
		{`def f: .x = 1; f`, `"="`},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			ce := compileErr(t, c, JQ, tt.src, Read)
			assert.Contains(t, ce.Reason, "assignment operator "+tt.op)
			assert.Contains(t, ce.Reason, "read expression")

			p, err := c.Compile(JQ, tt.src, Object, Action)
			require.NoError(t, err)
			assert.Equal(t, tt.src, p.Source())
		})
	}
}

func TestJQCompileErrors(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	tests := []struct{ src, want string }{
		{`.spec[`, "parse error at offset 6"},
		{`.spec | `, "parse error at offset"},
		{`{a: }`, `parse error at offset 5 (after "{a: }"): unexpected token "}"`},
		{`"unterminated`, "parse error"},
		{`foo(1)`, "function not defined: foo/1"},
		{`$x`, "variable not defined: $x"},
		{`input`, "input"},
		{`[inputs]`, "input"},
		{`debug`, "debug"},
		{`import "a" as a; .`, "module"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			ce := compileErr(t, c, JQ, tt.src, Read)
			assert.Contains(t, ce.Reason, tt.want)
		})
	}
}

func TestCompileRejectsUnknownParameters(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	_, err := c.Compile("rego", `x`, Object, Read)
	var ce *CompileError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Reason, `unknown language "rego"`)

	_, err = c.Compile(JQ, `.`, Subject(7), Read)
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Reason, "unknown subject")

	_, err = c.Compile(JQ, `.`, Object, Mode(9))
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Reason, "unknown mode")
}

func TestNewCompilerLimits(t *testing.T) {
	c := newTestCompiler(t, Limits{MaxResults: 5})
	want := DefaultLimits()
	want.MaxResults = 5
	assert.Equal(t, want, c.Limits())

	_, err := NewCompiler(Limits{Timeout: -1})
	assert.Error(t, err)
}

// TestJQSizeAndDepthBounded: a jq expression longer than MaxJQSourceBytes is refused before it
// is parsed, and one nested deeper than MaxJQDepth (chained operators, parentheses, arrays,
// objects, pipes, unary minus, patterns) before it is compiled: `1+1+...+1` of 100,000 terms
// (200 KB) compiled for minutes and held 500 MB. Expressions at the bounds still compile.
func TestJQSizeAndDepthBounded(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	const n = 3000 // at most 12 KB of text, under MaxJQSourceBytes: refused for its depth
	deep := map[string]string{
		"additions":   "1" + strings.Repeat("+1", n),
		"parentheses": strings.Repeat("(", n) + ".a" + strings.Repeat(")", n),
		"arrays":      strings.Repeat("[", n) + "1" + strings.Repeat("]", n),
		"objects":     strings.Repeat("{a:", n) + "1" + strings.Repeat("}", n),
		"pipes":       ".a" + strings.Repeat("|.a", n),
		"commas":      "[" + strings.Repeat("1,", n) + "1]",
		"minus":       strings.Repeat("-", n) + "1",
		"patterns":    ". as " + strings.Repeat("[", n) + "$x" + strings.Repeat("]", n) + " | $x",
	}
	for name, src := range deep {
		t.Run(name, func(t *testing.T) {
			require.Less(t, len(src), MaxJQSourceBytes)
			ce := compileErr(t, c, JQ, src, Read)
			assert.Contains(t, ce.Reason, fmt.Sprintf("nests deeper than %d levels", MaxJQDepth))
			assert.Less(t, len(ce.Error()), 300, "the message quotes the expression's start only")
		})
	}

	long := ".a + " + strings.Repeat(" ", MaxJQSourceBytes) + "1"
	ce := compileErr(t, c, JQ, long, Read)
	assert.Equal(t, fmt.Sprintf("the expression is %d bytes long; at most %d are compiled (expr.MaxJQSourceBytes)", len(long), MaxJQSourceBytes), ce.Reason)

	// At the bounds: 100 chained additions (depth about 200) and a 16 KiB expression compile.
	p, err := c.Compile(JQ, "1"+strings.Repeat("+1", 100), Object, Read)
	require.NoError(t, err)
	out, err := p.Eval(context.Background(), Input{Object: map[string]any{}})
	require.NoError(t, err)
	assert.Equal(t, []any{101}, out)
	wide := ".a" + strings.Repeat(" ", MaxJQSourceBytes-len(".a"))
	require.Len(t, wide, MaxJQSourceBytes)
	_, err = c.Compile(JQ, wide, Object, Read)
	require.NoError(t, err)
}
