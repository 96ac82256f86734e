package expr

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// builtinCost says how a builtin's output is charged to the evaluation's budget (jqmeter.go).
type builtinCost struct {
	// depth is how deep the builtin's output is new and charged by _gm_out (producedSize):
	// 1 for a new string, number or container whose elements are the input's, 2 for containers
	// of new containers, -1 for an entirely new tree (fromjson). 0 means the builtin produces
	// nothing new (it selects from its input, stops, or fails) and is not wrapped, so it keeps
	// working in path expressions (first, getpath, select, limit, ...).
	depth int
	// pre, when set, estimates before the builtin runs what it would produce (an upper bound,
	// in time linear in the input and without allocating), or refuses it with a reason: for
	// the builtins whose output is large before _gm_out can measure it, or whose own cost is
	// not linear in its output.
	pre func(g *guards, v any, args []any) (bytes, elems int64, refusal string)
	// values says the generated wrapper binds the arguments as values ($a0), for pre; otherwise
	// they stay filters, as the builtin takes them.
	values bool
	// handwritten says the prelude (jqPreludeSource) defines the builtin itself, guarded or in
	// jq so that its constructions are metered; no wrapper is generated.
	handwritten bool
}

// scalar is the cost of a builtin whose output is one number, boolean or short string.
var scalar = builtinCost{depth: 1}

// selects is the cost of a builtin that produces nothing new.
var selects = builtinCost{depth: 0}

// jqBuiltinCosts holds every builtin a definition may call (jqAllowed) and how its output is
// charged. A builtin that is allowed but has no entry fails closed: its wrapper refuses every
// call (meterOut), and TestEveryBuiltinHasACost fails.
var jqBuiltinCosts = func() map[string]builtinCost {
	m := map[string]builtinCost{
		// Selections, control and failures: nothing new.
		"empty/0": selects, "values/0": selects, "nulls/0": selects, "booleans/0": selects,
		"numbers/0": selects, "strings/0": selects, "arrays/0": selects, "objects/0": selects,
		"iterables/0": selects, "scalars/0": selects, "finites/0": selects, "normals/0": selects,
		"select/1": selects, "first/0": selects, "last/0": selects, "first/1": selects,
		"last/1": selects, "nth/1": selects, "nth/2": selects, "limit/2": selects, "skip/2": selects,
		"until/2": selects, "while/2": selects, "getpath/1": selects, "env/0": selects,
		"halt/0": selects, "halt_error/0": selects, "halt_error/1": selects, "error/0": selects,
		"error/1": selects, "path/1": selects, "min/0": {handwritten: true}, "max/0": {handwritten: true},
		// One scalar each.
		"not/0": scalar, "length/0": scalar, "utf8bytelength/0": scalar, "type/0": scalar,
		"has/1": scalar, "in/1": scalar, "isempty/1": scalar, "any/0": scalar, "any/1": scalar,
		"any/2": scalar, "all/0": scalar, "all/1": scalar, "all/2": scalar, "toboolean/0": scalar,
		"startswith/1": scalar, "endswith/1": scalar,
		// New containers of the input's elements, and substrings.
		"keys/0":          {depth: 1, pre: perElement(costArrayElem + costString)},
		"keys_unsorted/0": {depth: 1, pre: perElement(costArrayElem + costString)},
		"reverse/0":       {depth: 1, pre: perElement(costArrayElem)},
		"map_values/1":    {depth: 1, pre: perElement(costObjectEntry)},
		"toarray/0":       {depth: 1},
		"ltrimstr/1":      {depth: 1, values: true}, "rtrimstr/1": {depth: 1, values: true},
		"trimstr/1": {depth: 1, values: true}, "ltrim/0": {depth: 1}, "rtrim/0": {depth: 1},
		"trim/0":     {depth: 1},
		"split/1":    {depth: 1, pre: preSplit, values: true},
		"tonumber/0": {depth: 1, pre: preNumber},
		// Defined in jq by the prelude, so that their arrays and objects are charged as built.
		"map/1": {handwritten: true}, "to_entries/0": {handwritten: true},
		"from_entries/0": {handwritten: true}, "with_entries/1": {handwritten: true},
	}
	for ref := range jqMathBuiltins {
		m[ref] = scalar
	}
	for _, ref := range []string{"floor/0", "ceil/0", "round/0", "trunc/0", "fabs/0", "sqrt/0",
		"abs/0", "pow/2", "log/0", "log2/0", "log10/0", "exp/0", "exp2/0", "exp10/0",
		"significand/0", "infinite/0", "nan/0", "isinfinite/0", "isnan/0", "isnormal/0", "isfinite/0"} {
		m[ref] = scalar
	}
	// The guarded builtins (jqPreludeSource): guarded before they run (_gm_guard), charged
	// after (_gm_out, or inside _gm_match for the regex builtins, or by the arrays and
	// operators the definition is made of).
	for ref := range jqGuardedBuiltins {
		m[ref] = builtinCost{handwritten: true, depth: guardedDepths[ref]}
	}
	for _, ref := range []string{"_tohtml/0", "_touri/0", "_tourid/0", "_tocsv/0", "_totsv/0", "_tosh/0", "_tobase64/0", "_tobase64d/0"} {
		m[ref] = builtinCost{handwritten: true, depth: 1}
	}
	return m
}()

// guardedDepths are the output depths of the guarded builtins whose prelude definition ends in
// _gm_out; the others are charged by what they are made of (0 here).
var guardedDepths = map[string]int{
	"tojson/0": 1, "tostring/0": 1, "fromjson/0": -1, "ascii_downcase/0": 1, "ascii_upcase/0": 1,
	"explode/0": 1, "implode/0": 1, "add/0": 1, "join/1": 1, "flatten/0": 1, "flatten/1": 1,
	"sort/0": 1, "unique/0": 1, "sort_by/1": 1, "group_by/1": 2, "unique_by/1": 1,
	"contains/1": 1, "indices/1": 1, "index/1": 1, "rindex/1": 1, "setpath/2": 2, "format/1": 1,
}

// perElement estimates an output of perElem bytes per element (or byte) of the input.
func perElement(perElem int64) func(*guards, any, []any) (int64, int64, string) {
	return func(_ *guards, v any, _ []any) (int64, int64, string) {
		n := shallowSize(v)
		return costArray + perElem*n, n, ""
	}
}

// maxNumberText bounds the length, in bytes, of a string parsed as a number (tonumber,
// fromjson's numbers): gojq parses an integer beyond int64 with big.Int.SetString, whose time
// is quadratic in the digits (a 1.4M-digit annotation cost 3.8 s of CPU in one step, escaping
// both the step budget and the timeout). No number a workload means is longer; 1,024 digits
// parse in microseconds.
const maxNumberText = 1024

// preNumber refuses tonumber on a string longer than maxNumberText.
func preNumber(_ *guards, v any, _ []any) (int64, int64, string) {
	if s, ok := v.(string); ok && len(s) > maxNumberText {
		return 0, 0, fmt.Sprintf("a numeric string of %d bytes (more than %d, expr.maxNumberText)", len(s), maxNumberText)
	}
	return costScalar + 40, 0, ""
}

// preSplit estimates split/1 (strings.Split: one new string header per piece) by counting the
// separators, in linear time and without allocating.
func preSplit(_ *guards, v any, args []any) (int64, int64, string) {
	s, ok := v.(string)
	var sep string
	if len(args) > 0 {
		sep, _ = args[0].(string)
	}
	if !ok {
		return costScalar, 0, ""
	}
	n := splitCount(s, sep)
	return costArray + n*(costArrayElem+costString), n, ""
}

// splitCount is the number of pieces strings.Split(s, sep) returns (one per code point for an
// empty sep).
func splitCount(s, sep string) int64 {
	if sep == "" {
		return int64(len([]rune(s)))
	}
	return int64(strings.Count(s, sep)) + 1
}

// longestDigitRun is the length of the longest run of decimal digits in s: a number gojq's JSON
// decoder (fromjson) would parse is at most that long.
func longestDigitRun(s string) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// pre implements _gm_pre($__gm; ref; args): it refuses, before it runs, a call of the builtin
// ref whose estimated output does not fit in the budget, and returns the input v.
func (g *guards) pre(v any, args []any) any {
	b := budgetOf(args[0])
	ref, _ := args[1].(string)
	c, ok := jqBuiltinCosts[ref]
	if !ok || c.pre == nil {
		return refuse(b, ref, "no cost estimate for the builtin")
	}
	callArgs, _ := args[2].([]any)
	bytes, elems, refusal := c.pre(g, v, callArgs)
	if refusal != "" {
		return refuse(b, ref, "%s", refusal)
	}
	if err := b.fits(ref, bytes, elems); err != nil {
		return err
	}
	return v
}

// generatedPreludeSource is the prelude of every allowed builtin without a handwritten
// definition and with a depth: `def _gm_raw_N(a): N(a);` for all of them first (so each reaches
// gojq's own), then `def N(a): [_gm_pre(...) |] _gm_raw_N(a) | _gm_out($__gm; "N/k");`.
func generatedPreludeSource() string {
	var raws, wrappers strings.Builder
	for _, ref := range slices.Sorted(maps.Keys(jqBuiltinCosts)) {
		c := jqBuiltinCosts[ref]
		if c.handwritten || c.depth == 0 {
			continue
		}
		name, arity, _ := strings.Cut(ref, "/")
		var params, callArgs []string
		for i := range atoiOr0(arity) {
			p := fmt.Sprintf("a%d", i)
			if c.values {
				p = "$" + p
			}
			params, callArgs = append(params, p), append(callArgs, p)
		}
		sig, call := name, name
		if len(params) > 0 {
			sig = name + "(" + strings.Join(params, "; ") + ")"
			call = name + "(" + strings.Join(callArgs, "; ") + ")"
		}
		rawSig := strings.Replace(sig, name, jqGuardPrefix+"raw_"+name, 1)
		rawCall := strings.Replace(call, name, jqGuardPrefix+"raw_"+name, 1)
		fmt.Fprintf(&raws, "def %s: %s;\n", rawSig, call)
		pre := ""
		if c.pre != nil {
			vals := "null"
			if c.values && len(callArgs) > 0 {
				vals = "[" + strings.Join(callArgs, ", ") + "]"
			}
			pre = fmt.Sprintf("_gm_pre($__gm; %q; %s) | ", ref, vals)
		}
		fmt.Fprintf(&wrappers, "def %s: %s%s | _gm_out($__gm; %q);\n", sig, pre, rawCall, ref)
	}
	return raws.String() + wrappers.String()
}
