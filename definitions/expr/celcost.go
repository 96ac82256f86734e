package expr

import (
	"math"

	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// producedCost is the runtime cost of CEL calls charged by what they produce: cel-go's actual
// cost tracker charges most calls 1 whatever they return (a dyn-typed `+` of two 1.4 MB
// `object.*` strings, `bytes()` and `reverse()` included: `object.items.map(i, object.s +
// object.s)` held 1.4 GB within its cost limit), so every call is charged here, besides the
// traversal of its string and bytes arguments, one unit per bytesPerCost bytes of the string or
// bytes it returns and one per element of the list or map it returns (for `+` on lists, the
// elements added: a comprehension's accumulator grows one element a step). With the defaults
// (32 MiB, 1,000,000 units) a CEL evaluation produces at most the bytes and elements a jq one
// may (Limits.MaxProducedBytes, Limits.MaxProducedElements).
//
// The calls whose result is part of an argument (indexing, optional selection, dyn) are charged
// as cel-go does; so are the regex and substring tests, whose cost cel-go computes as a product.
type producedCost struct {
	// bytesPerCost is how many produced bytes cost one unit: MaxProducedBytes / CELCostLimit,
	// at least 1.
	bytesPerCost uint64
}

var _ interpreter.ActualCostEstimator = producedCost{}

// newProducedCost derives the charge of produced bytes from l.
func newProducedCost(l Limits) producedCost {
	return producedCost{bytesPerCost: max(uint64(l.MaxProducedBytes)/max(l.CELCostLimit, 1), 1)}
}

// celSelectors are the functions whose result is (part of) an argument: nothing is produced.
var celSelectors = map[string]bool{
	"_[_]": true, "_[?_]": true, "_?._": true, "dyn": true, "value": true, "orValue": true,
	"optional.of": true, "optional.ofNonZeroValue": true, "or": true, "_?_:_": true,
}

// CallCost implements interpreter.ActualCostEstimator.
func (c producedCost) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	switch overloadID {
	case overloads.Matches, overloads.MatchesString, overloads.ContainsString, overloads.InList:
		return nil // cel-go's own products
	}
	if celSelectors[function] {
		return nil
	}
	cost := uint64(1)
	for _, a := range args {
		cost = satAdd(cost, uint64(math.Ceil(float64(celByteLen(a))*0.1))) // cel-go's StringTraversalCostFactor
	}
	cost = satAdd(cost, c.produced(function, args, result))
	return &cost
}

// produced is the charge of what a call returned.
func (c producedCost) produced(function string, args []ref.Val, result ref.Val) uint64 {
	switch r := result.(type) {
	case types.String, types.Bytes:
		return uint64(celByteLen(r))/c.bytesPerCost + 1
	case traits.Lister:
		if function == "_+_" && len(args) == 2 {
			return celLen(args[1]) + 1
		}
		return celLen(r) + 1
	case traits.Mapper:
		return celLen(r) + 1
	}
	return 0
}

// celByteLen is the length in bytes of a string or bytes value (0 for anything else).
func celByteLen(v ref.Val) int {
	switch t := v.(type) {
	case types.String:
		return len(t)
	case types.Bytes:
		return len(t)
	}
	return 0
}

// celLen is the size of a list or map (0 for anything else).
func celLen(v ref.Val) uint64 {
	if s, ok := v.(traits.Sizer); ok {
		if n, ok := s.Size().(types.Int); ok && n > 0 {
			return uint64(n)
		}
	}
	return 0
}

// satAdd adds without wrapping around.
func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}
