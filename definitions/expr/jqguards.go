package expr

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"

	"github.com/itchyny/gojq"
)

// jqGuardOptions registers the guards the prelude calls. Each returns its input (or, for
// _gm_op, its two operands as an array) when the call is within bounds, and otherwise an error
// that also stops the evaluation's budget, so a `try` in the expression cannot swallow a
// refused call and go on.
func jqGuardOptions(l Limits) []gojq.CompilerOption {
	g := &guards{maxValue: int64(l.MaxValueSize)}
	return append([]gojq.CompilerOption{
		gojq.WithFunction("_gm_guard", 2, 3, g.guard),
		gojq.WithFunction("_gm_op", 4, 4, g.op),
		gojq.WithFunction("_gm_match", 4, 4, g.match),
	}, meterOptions(g)...)
}

// guards holds the per-call bounds of one Compiler's programs.
type guards struct {
	// maxValue bounds, in size units (valueSize), the input, arguments and result of one call.
	maxValue int64
}

// maxWork bounds the work of one call whose cost is a product (contains, indices, array
// subtraction): four times maxValue.
func (g *guards) maxWork() int64 { return 4 * g.maxValue }

// refuse stops the budget with a *sizeLimitError and returns it as the call's result.
func refuse(b *jqBudget, what, format string, args ...any) error {
	err := &sizeLimitError{what: what, detail: fmt.Sprintf(format, args...)}
	b.stop(err)
	return err
}

// guard checks a named builtin's input v and optional argument; see jqPreludeSource.
func (g *guards) guard(v any, args []any) any {
	b := budgetOf(args[0])
	name, _ := args[1].(string)
	var arg any
	if len(args) > 2 {
		arg = args[2]
	}
	cost, err := g.cost(b, name, v, arg)
	if err != nil {
		return err
	}
	b.charge(cost)
	if bytes, elems := g.estimate(name, v, arg, cost); bytes > 0 || elems > 0 {
		if err := b.fits(name, bytes, elems); err != nil {
			return err
		}
	}
	return v
}

// estimate bounds, before the named guarded builtin runs, what it would produce (bytes and
// elements, jqmeter.go), from its input v, its argument and its work (cost, about the input's
// size in size units): checked against the budget so that no call allocates past it.
func (g *guards) estimate(name string, v, arg any, cost int64) (bytes, elems int64) {
	switch name {
	case "explode":
		n := shallowSize(v)
		return costArray + n*(costArrayElem+costScalar), n
	case "implode":
		return costString + 4*shallowSize(v), 0
	case "join":
		return costString + cost, 0
	case "sort":
		n := shallowSize(v)
		return costArray + 2*n*costArrayElem, n
	case "tojson", "tostring", "format", "@html", "@uri", "@csv", "@tsv", "@sh", "@base64":
		return costString + 6*cost, 0 // \u00XX: at most 6 bytes out per byte in
	case "fromjson":
		return 16 * cost, cost / 2 // "[1,1,...]": an element (32 B) per 2 bytes
	}
	return 0, 0
}

// cost returns the work of one call of the named builtin, or the error refusing it.
func (g *guards) cost(b *jqBudget, name string, v, arg any) (int64, error) {
	switch name {
	case "explode", "implode":
		// 16 to 24 bytes per code point: bound the string (or array) to an eighth of maxValue.
		if n := shallowSize(v); n > g.maxValue/8 {
			return 0, refuse(b, name, "an input of length %d (more than %d)", n, g.maxValue/8)
		}
		return shallowSize(v) * 8, nil
	case "indices":
		return g.indicesCost(b, v, arg)
	case "contains":
		return g.productCost(b, name, v, arg)
	case "setpath":
		return g.setpathCost(b, arg)
	case "fromjson":
		if s, ok := v.(string); ok {
			if n := longestDigitRun(s); n > maxNumberText {
				return 0, refuse(b, name, "a number of %d digits (more than %d, expr.maxNumberText)", n, maxNumberText)
			}
		}
		return g.linearCost(b, name, v, arg)
	case "join":
		// join's result is the elements' encodings and the separator between them.
		n := valueSize(v, g.maxValue) + shallowSize(v)*shallowSize(arg)
		if n > g.maxValue {
			return 0, refuse(b, name, "a result larger than %d size units", g.maxValue)
		}
		return n, nil
	case "sort":
		n := g.sized(v) + g.sized(arg)
		if n > g.maxValue {
			return 0, refuse(b, name, "values larger than %d size units", g.maxValue)
		}
		return n * int64(bits.Len64(uint64(shallowSize(v))+1)), nil
	default:
		return g.linearCost(b, name, v, arg)
	}
}

// linearCost is the cost of encoders, flatten, add, min, max, case conversions and @formats:
// the work and the result are linear in the input's size (at most 6 bytes out per byte in).
func (g *guards) linearCost(b *jqBudget, name string, v, arg any) (int64, error) {
	n := valueSize(v, g.maxValue)
	if arg != nil {
		n += valueSize(arg, g.maxValue)
	}
	if n > g.maxValue {
		return 0, refuse(b, name, "an input larger than %d size units", g.maxValue)
	}
	return n, nil
}

// sized is valueSize bounded by maxValue (nil counts 0).
func (g *guards) sized(v any) int64 {
	if v == nil {
		return 0
	}
	return valueSize(v, g.maxValue)
}

// indicesCost bounds indices, index and rindex: gojq explodes both strings (16 bytes per code
// point) and compares the needle at every position of the haystack.
func (g *guards) indicesCost(b *jqBudget, v, x any) (int64, error) {
	if s, ok := v.(string); ok {
		if int64(len(s)) > g.maxValue/8 {
			return 0, refuse(b, "indices", "a string of %d bytes (more than %d)", len(s), g.maxValue/8)
		}
		work := int64(len(s)) * max(shallowSize(x), 1)
		if work > g.maxWork() {
			return 0, refuse(b, "indices", "work %d (string × needle) above %d", work, g.maxWork())
		}
		return work + 16*int64(len(s)), nil
	}
	return g.productCost(b, "indices", v, x)
}

// productCost bounds a call that compares every element of v with x: len(v) × size(x) plus
// the size of v.
func (g *guards) productCost(b *jqBudget, name string, v, x any) (int64, error) {
	sv, sx := g.sized(v), g.sized(x)
	if sv > g.maxValue || sx > g.maxValue {
		return 0, refuse(b, name, "values larger than %d size units", g.maxValue)
	}
	if a, isStr := v.(string); isStr {
		return int64(len(a)) + sx, nil // strings.Contains: linear
	}
	work := sv + max(shallowSize(v), 1)*sx
	if work > g.maxWork() {
		return 0, refuse(b, name, "work %d (elements × argument size) above %d", work, g.maxWork())
	}
	return work, nil
}

// maxArrayIndex bounds the array indices setpath may create (gojq allows 536,870,911).
const maxArrayIndex = 1 << 17

// setpathCost bounds setpath: a numeric path element creates an array of that length.
func (g *guards) setpathCost(b *jqBudget, path any) (int64, error) {
	p, _ := path.([]any)
	for _, e := range p {
		var n float64
		switch t := e.(type) {
		case int:
			n = float64(t)
		case float64:
			n = t
		case *big.Int:
			n = math.Inf(1)
		default:
			continue
		}
		if n > maxArrayIndex {
			return 0, refuse(b, "setpath", "array index %v (more than %d)", gojq.Preview(e), maxArrayIndex)
		}
	}
	return int64(len(p)), nil
}

// op checks the operands of a binary operator and returns them as [l, r].
func (g *guards) op(_ any, args []any) any {
	b := budgetOf(args[0])
	op, _ := args[1].(string)
	l, r := args[2], args[3]
	cost, err := g.opCost(b, op, l, r)
	if err != nil {
		return err
	}
	b.charge(cost)
	bytes, elems := g.opProduced(b, op, l, r)
	if err := b.produce(fmt.Sprintf("%q", op), bytes, elems); err != nil {
		return err
	}
	return []any{l, r}
}

// opProduced bounds what `l op r` produces (bytes and elements, jqmeter.go), before it runs:
// the concatenation, difference, repetition, merge or split it builds, or one scalar.
func (g *guards) opProduced(b *jqBudget, op string, l, r any) (bytes, elems int64) {
	switch op {
	case "+":
		switch l.(type) {
		case string:
			return costString + shallowSize(l) + shallowSize(r), 0
		case []any:
			n := shallowSize(l) + shallowSize(r)
			return costArray + n*costArrayElem, n
		case map[string]any:
			n := shallowSize(l) + shallowSize(r)
			return costObject + n*costObjectEntry, n
		}
	case "-":
		if a, ok := l.([]any); ok {
			return costArray + int64(len(a))*costArrayElem, int64(len(a))
		}
	case "*":
		if s, ok := l.(string); ok {
			n, _ := g.repeatCost(b, s, r)
			return costString + n, 0
		}
		if s, ok := r.(string); ok {
			n, _ := g.repeatCost(b, s, l)
			return costString + n, 0
		}
		if _, ok := l.(map[string]any); ok {
			lb, le := producedSize(l, -1, b.remaining())
			rb, re := producedSize(r, -1, b.remaining())
			return lb + rb, le + re
		}
		if lb, rb := bigBits(l), bigBits(r); lb > 64 || rb > 64 {
			return costScalar + 32 + int64(lb+rb)/8, 0
		}
	case "/":
		if s, ok := l.(string); ok {
			sep, _ := r.(string)
			n := splitCount(s, sep)
			return costArray + n*(costArrayElem+costString), n
		}
	}
	return costScalar, 0
}

// opCost returns the work of `l op r`, or the error refusing it.
func (g *guards) opCost(b *jqBudget, op string, l, r any) (int64, error) {
	switch op {
	case "+":
		// Concatenation copies both strings or arrays, a merge both objects' entries.
		n := shallowSize(l) + shallowSize(r)
		if isContainerOrString(l) && isContainerOrString(r) && n > g.maxValue {
			return 0, refuse(b, `"+"`, "a result of length %d (more than %d)", n, g.maxValue)
		}
		return n, nil
	case "*":
		return g.mulCost(b, l, r)
	case "-":
		if la, ok := l.([]any); ok {
			if _, ok := r.([]any); ok {
				return g.productCost(b, `"-" (array difference)`, la, r)
			}
		}
		return 1, nil
	case "/":
		return shallowSize(l) + shallowSize(r), nil // string split: linear
	case "%":
		return 1, nil
	default: // comparisons walk both values, up to the first difference
		n := minSize(l, r, g.maxValue)
		if n > g.maxValue {
			return 0, refuse(b, fmt.Sprintf("%q", op), "comparing values larger than %d size units", g.maxValue)
		}
		return n, nil
	}
}

// mulCost bounds `*`: string repetition by its result, integer products by their bit length,
// object merges by the right operand's size.
func (g *guards) mulCost(b *jqBudget, l, r any) (int64, error) {
	if s, ok := l.(string); ok {
		return g.repeatCost(b, s, r)
	}
	if s, ok := r.(string); ok {
		return g.repeatCost(b, s, l)
	}
	if lb, rb := bigBits(l), bigBits(r); lb > 64 || rb > 64 {
		if lb+rb > maxBigIntBits {
			return 0, refuse(b, `"*"`, "an integer product of %d bits (more than %d)", lb+rb, maxBigIntBits)
		}
		return int64(lb + rb), nil
	}
	if _, ok := l.(map[string]any); ok {
		n := g.sized(l) + g.sized(r)
		if n > g.maxValue {
			return 0, refuse(b, `"*" (object merge)`, "objects larger than %d size units", g.maxValue)
		}
		return n, nil
	}
	return 1, nil
}

// repeatCost bounds `s * n` by the length of its result.
func (g *guards) repeatCost(b *jqBudget, s string, n any) (int64, error) {
	var times float64
	switch t := n.(type) {
	case int:
		times = float64(t)
	case float64:
		times = math.Ceil(t)
	case *big.Int:
		times = math.Inf(t.Sign())
	default:
		return 1, nil // gojq reports the type error
	}
	if times <= 0 {
		return 1, nil
	}
	if out := float64(len(s)) * times; out > float64(g.maxValue) {
		return 0, refuse(b, `"*" (string repetition)`, "a string of %.0f bytes (more than %d)", out, g.maxValue)
	}
	return int64(float64(len(s)) * times), nil
}

// bigBits is the bit length of an integer operand (0 for anything else).
func bigBits(v any) int {
	switch t := v.(type) {
	case *big.Int:
		return t.BitLen()
	case int:
		return bits.Len64(uint64(max(t, -t)))
	}
	return 0
}

func isContainerOrString(v any) bool {
	switch v.(type) {
	case string, []any, map[string]any:
		return true
	}
	return false
}

// minSize returns the size of the smaller of l and r (above limit if both are), walking each
// at most about twice the smaller size: a comparison stops at the first difference, so it never
// does more work than that.
func minSize(l, r any, limit int64) int64 {
	if !isContainer(l) || !isContainer(r) {
		return shallowSize(l) + shallowSize(r)
	}
	for s := int64(256); ; s *= 2 {
		s = min(s, limit)
		a, c := valueSize(l, s), valueSize(r, s)
		if a <= s || c <= s {
			return min(a, c)
		}
		if s == limit {
			return limit + 1
		}
	}
}

func isContainer(v any) bool {
	switch v.(type) {
	case []any, map[string]any:
		return true
	}
	return false
}
