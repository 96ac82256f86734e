package expr

import (
	"fmt"
	"math/big"

	"github.com/itchyny/gojq"
)

// The produced-value meter of a jq evaluation.
//
// Every value a jq evaluation creates is charged to its budget (jqBudget.produce) in bytes of
// Go memory and in elements (array elements and object entries), whatever made it:
//
//   - a builtin call: every builtin a definition can reach is a definition of the prelude that
//     passes the builtin's output through _gm_out, which measures it (producedSize, to the depth
//     the builtin's entry in jqBuiltinCosts says is new) and charges it; builtins whose output
//     is large before it can be measured, or whose own cost is not linear in their output
//     (number parsing, regex, sorting, splitting), are refused before they run by _gm_guard /
//     _gm_pre from an estimate of what they would produce (jqguards.go);
//   - an array constructed by the query ([q], in the user's query and the prelude's, map and
//     to_entries included): each element is charged by _gm_elem as it is appended, so no array
//     outgrows the budget by more than one element;
//   - an object constructed by the query ({...}): charged by _gm_obj once built (its size is
//     fixed by the source, at most MaxJQSourceBytes);
//   - an operator (+, -, *, /, %): charged by _gm_op before it runs, from the operands' sizes.
//
// A builtin gangmap has no entry for in jqBuiltinCosts does not compile (jqAllowed) and is
// shadowed by an error at run time (unavailableDefs); TestEveryBuiltinHasACost holds the table,
// the allowed lists and the prelude to each other.

// Go memory, in bytes, charged per value (about what the Go runtime allocates on 64-bit:
// an interface holding the value, the header, the backing array or map entry).
const (
	// costString is a string's header and interface, plus its bytes.
	costString = 32
	// costScalar is a boxed number or boolean.
	costScalar = 16
	// costArray is a slice header and interface; costArrayElem one element slot (an interface),
	// doubled for append's growth.
	costArray, costArrayElem = 40, 32
	// costObject is a map header and interface; costObjectEntry one entry (key, value, slot).
	costObject, costObjectEntry = 64, 72
	// costFrame is one call of a function the query defines: the scope, the saved stack, forks
	// and operand closures a recursion holds per level (measured: `def f: 1 + f; f` allocated
	// about 1.4 KB a level).
	costFrame = 1536
)

// budgetLimitError is an evaluation that produced (or was about to produce) more than its
// budget of bytes or elements (Limits.MaxProducedBytes, Limits.MaxProducedElements).
type budgetLimitError struct {
	// what names the producer: a builtin (`split/1`), an operator, "array", "object".
	what string
	// bytes and elems are what the evaluation would have produced with the refused value.
	bytes, elems int64
	// maxBytes and maxElems are the budget.
	maxBytes, maxElems int64
}

func (e *budgetLimitError) Error() string {
	if e.elems > e.maxElems {
		return fmt.Sprintf("%s refused: the evaluation would produce %d elements (budget %d elements, expr.Limits.MaxProducedElements)", e.what, e.elems, e.maxElems)
	}
	return fmt.Sprintf("%s refused: the evaluation would produce %d bytes (budget %d bytes, expr.Limits.MaxProducedBytes)", e.what, e.bytes, e.maxBytes)
}

// produce charges bytes and elems produced by what to the budget, or, when that would exceed
// it, stops the evaluation and returns the *budgetLimitError (nothing is charged then).
func (b *jqBudget) produce(what string, bytes, elems int64) error {
	nb, ne := b.bytes+bytes, b.elems+elems
	if nb > b.maxBytes || ne > b.maxElems || nb < 0 || ne < 0 {
		err := &budgetLimitError{what: what, bytes: nb, elems: ne, maxBytes: b.maxBytes, maxElems: b.maxElems}
		b.stop(err)
		return err
	}
	b.bytes, b.elems = nb, ne
	return nil
}

// fits returns the *budgetLimitError that producing bytes and elems would cause (stopping the
// evaluation), or nil without charging anything: the check of a builtin before it runs.
func (b *jqBudget) fits(what string, bytes, elems int64) error {
	nb, ne := b.bytes+bytes, b.elems+elems
	if nb > b.maxBytes || ne > b.maxElems || nb < 0 || ne < 0 {
		err := &budgetLimitError{what: what, bytes: nb, elems: ne, maxBytes: b.maxBytes, maxElems: b.maxElems}
		b.stop(err)
		return err
	}
	return nil
}

// remaining is the bytes the budget still allows (the bound of a measurement).
func (b *jqBudget) remaining() int64 { return b.maxBytes - b.bytes }

// producedSize measures v as new to depth levels (depth 1: v itself, its elements referenced
// only; -1: the whole tree): the Go bytes and the elements (array elements, object entries) it
// holds. A value below depth counts as one reference (an interface), since it is shared with
// the builtin's input. The walk stops once bytes pass limit, so it costs at most O(limit).
func producedSize(v any, depth int, limit int64) (bytes, elems int64) {
	var walk func(v any, d int)
	walk = func(v any, d int) {
		if bytes > limit {
			return
		}
		if d == 0 {
			bytes += costScalar
			return
		}
		switch t := v.(type) {
		case string:
			bytes += costString + int64(len(t))
		case []any:
			bytes += costArray + costArrayElem*int64(len(t))
			elems += int64(len(t))
			for _, e := range t {
				walk(e, d-1)
			}
		case map[string]any:
			bytes += costObject
			elems += int64(len(t))
			for k, e := range t {
				bytes += costObjectEntry + int64(len(k))
				walk(e, d-1)
				if bytes > limit {
					return
				}
			}
		case *big.Int:
			bytes += costScalar + 32 + int64(t.BitLen()/8)
		default:
			bytes += costScalar
		}
	}
	walk(v, depth)
	return bytes, elems
}

// meterOptions registers the meter's functions: _gm_out($__gm; ref), _gm_elem($__gm),
// _gm_obj($__gm) and _gm_pre($__gm; ref; args).
func meterOptions(g *guards) []gojq.CompilerOption {
	return []gojq.CompilerOption{
		gojq.WithFunction("_gm_out", 2, 2, meterOut),
		gojq.WithFunction("_gm_elem", 1, 1, meterElem),
		gojq.WithFunction("_gm_obj", 1, 1, meterObject),
		gojq.WithFunction("_gm_pre", 3, 3, g.pre),
		gojq.WithFunction("_gm_frame", 1, 1, meterFrame),
	}
}

// meterFrame charges one call of a function the query defines and returns v.
func meterFrame(v any, args []any) any {
	if err := budgetOf(args[0]).produce("function call", costFrame, 0); err != nil {
		return err
	}
	return v
}

// meterOut charges v, the output of the builtin args[1] (name/arity), to the budget args[0], to
// the depth of the builtin's cost entry, and returns v (or the refusal).
func meterOut(v any, args []any) any {
	b := budgetOf(args[0])
	ref, _ := args[1].(string)
	c, ok := jqBuiltinCosts[ref]
	if !ok {
		return refuse(b, ref, "no cost entry for the builtin")
	}
	if c.depth == 0 {
		return v
	}
	bytes, elems := producedSize(v, c.depth, b.remaining())
	if err := b.produce(ref, bytes, elems); err != nil {
		return err
	}
	return v
}

// meterElem charges one array element (appended by an array construction) and returns v.
func meterElem(v any, args []any) any {
	if err := budgetOf(args[0]).produce("array", costArrayElem, 1); err != nil {
		return err
	}
	return v
}

// meterObject charges an object built by an object construction and returns it.
func meterObject(v any, args []any) any {
	b := budgetOf(args[0])
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	bytes := int64(costObject)
	for k := range m {
		bytes += costObjectEntry + int64(len(k))
	}
	if err := b.produce("object", bytes, int64(len(m))); err != nil {
		return err
	}
	return v
}
