package expr

import (
	"context"
	"fmt"
	"math/big"
)

// jqBudget is the work one jq evaluation may still do. gojq calls the Done method of the
// evaluation context before every instruction, so jqBudget (which is that context) counts
// instructions there; the bounded builtins (jqbuiltins.go) charge their work to the same
// counter through the $__gm variable. When the count passes the limit, Done reports a closed
// channel and Err a *stepLimitError, and gojq stops at its next instruction.
//
// A jqBudget is used by one evaluation, on one goroutine (gojq's Next); it is not shared.
type jqBudget struct {
	context.Context
	steps, limit int64
	// bytes and elems are what the evaluation produced so far (jqmeter.go), at most maxBytes
	// and maxElems.
	bytes, elems, maxBytes, maxElems int64
	// over is set once the limit is passed or a builtin refused its input; err says why.
	over bool
	err  error
}

// closedDone is the Done channel of an exhausted budget.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// newJQBudget derives the evaluation context of one jq evaluation from parent, with the step
// and produced-value bounds of l.
func newJQBudget(parent context.Context, l Limits) *jqBudget {
	return &jqBudget{Context: parent, limit: l.MaxSteps, maxBytes: l.MaxProducedBytes, maxElems: l.MaxProducedElements}
}

// Done counts one instruction and reports the parent's Done channel, or a closed one once the
// budget is spent.
func (b *jqBudget) Done() <-chan struct{} {
	b.steps++
	if b.steps > b.limit && !b.over {
		b.stop(&stepLimitError{limit: b.limit})
	}
	if b.over {
		return closedDone
	}
	return b.Context.Done()
}

// Err returns the reason the budget stopped the evaluation, else the parent's error.
func (b *jqBudget) Err() error {
	if b.over {
		return b.err
	}
	return b.Context.Err()
}

// charge adds the work of a builtin call (in size units, see valueSize) to the step count: one
// step per 16 units, so a builtin that walks a large value costs as many steps as the
// instructions of a jq loop doing the same.
func (b *jqBudget) charge(units int64) {
	b.steps += units / 16
}

// stop ends the evaluation with err at the next instruction.
func (b *jqBudget) stop(err error) {
	if !b.over {
		b.over, b.err = true, err
	}
}

// stepLimitError is a jq evaluation that ran more instructions (and builtin work) than
// Limits.MaxSteps.
type stepLimitError struct{ limit int64 }

func (e *stepLimitError) Error() string {
	return fmt.Sprintf("more than %d steps", e.limit)
}

// sizeLimitError is a builtin or operator call refused before it ran, because its input, its
// arguments or its result would exceed a per-call bound (Limits.MaxValueSize and the regex
// bounds).
type sizeLimitError struct {
	// what names the call, e.g. `tojson`, `"*" (string repetition)`, `test (regex)`.
	what string
	// detail says which bound, e.g. "a value larger than 4194304 size units".
	detail string
}

func (e *sizeLimitError) Error() string {
	return fmt.Sprintf("%s refused: %s", e.what, e.detail)
}

// valueSize returns the size of v in size units, which follow its JSON encoding: a string
// counts its bytes plus 2, a number 8, true, false and null 4, an array or object 2 plus its
// elements (an object's keys counted as strings, plus 1 per separator). A value that occurs
// several times in a tree (jq shares values: [$x, $x]) counts each time, because that is what a
// builtin that walks or encodes the tree does. The walk stops once the size passes limit and
// then returns a value above limit, so the cost of valueSize is at most O(limit).
func valueSize(v any, limit int64) int64 {
	var n int64
	var walk func(v any) bool
	walk = func(v any) bool {
		switch t := v.(type) {
		case string:
			n += int64(len(t)) + 2
		case []any:
			n += 2
			for _, e := range t {
				n++
				if n > limit || !walk(e) {
					return false
				}
			}
		case map[string]any:
			n += 2
			for k, e := range t {
				n += int64(len(k)) + 4
				if n > limit || !walk(e) {
					return false
				}
			}
		case *big.Int:
			n += int64(t.BitLen()/3) + 8
		case nil, bool:
			n += 4
		default:
			n += 8
		}
		return n <= limit
	}
	walk(v)
	return n
}

// shallowSize is the size of v without its elements: a string's bytes, an array's or object's
// length, 8 for anything else. Builtins that only look at the top level (keys, length, join's
// separator) are charged this.
func shallowSize(v any) int64 {
	switch t := v.(type) {
	case string:
		return int64(len(t))
	case []any:
		return int64(len(t))
	case map[string]any:
		return int64(len(t))
	}
	return 8
}

// budgetOf returns the budget a bounded builtin was given as its first argument ($__gm). A
// builtin called without it (only possible through gangmap's own prelude) gets a budget that
// refuses everything, so a mistake there fails closed.
func budgetOf(v any) *jqBudget {
	if b, ok := v.(*jqBudget); ok {
		return b
	}
	b := &jqBudget{Context: context.Background()}
	b.stop(&sizeLimitError{what: "builtin", detail: "called without an evaluation budget"})
	return b
}

// defaultMaxSteps is Limits.MaxSteps by default: about a second of gojq instructions on an idle
// core, so that on a loaded machine the timeout and on an idle one the step count ends a
// runaway evaluation.
const defaultMaxSteps = 10_000_000

// defaultMaxValueSize is Limits.MaxValueSize by default, in size units (about bytes of JSON):
// above the largest object the API server stores (its request limit is 3 MiB), so any
// workload object can be encoded or compared whole.
const defaultMaxValueSize = 4 << 20

// defaultMaxProducedBytes and defaultMaxProducedElements are Limits.MaxProducedBytes and
// MaxProducedElements by default: ten times the largest input (a 3 MiB object), so that
// encoding, copying or reshaping a whole workload several times fits, and 1 Mi elements (a
// 3 MiB object holds at most about 750,000 values). With --max-concurrent-plans builds at once,
// what expressions can hold is at most that many budgets (docs/reliability.md).
const (
	defaultMaxProducedBytes    = 32 << 20
	defaultMaxProducedElements = 1 << 20
)

// defaultMaxInputSize is Limits.MaxInputSize by default, in size units: the API server's 3 MiB
// request limit, which no stored object exceeds.
const defaultMaxInputSize = 3 << 20

// regexBounds are the per-call bounds of the regex builtins (jqregex.go).
const (
	// maxRegexWork bounds len(subject) × the compiled pattern's instruction count: Go's regexp
	// runs in time linear in that product.
	maxRegexWork = 16 << 20
	// maxRegexPattern bounds the pattern's length in bytes.
	maxRegexPattern = 1 << 10
	// maxRegexMatches bounds the matches one call may return (each is a 4-key object).
	maxRegexMatches = 10_000
	// maxBigIntBits bounds the bit length of an arbitrary-precision integer product.
	maxBigIntBits = 1 << 16
)
