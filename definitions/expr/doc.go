// Package expr compiles and evaluates the expressions found in Workload Map definitions.
//
// A definition's expressions come in two languages:
//
//   - jq, the published shape, evaluated with gojq. Read expressions follow the upstream Workload
//     Map restrictions: the functions del, range, paths, recurse, walk and repeat (any arity),
//     recursive descent (..) and the assignment operators (=, |=, +=, -=, *=, /=, %=, //=) are
//     rejected at compile time. Action expressions (suspend and resume patches) may assign but
//     still may not use the forbidden functions or recursive descent.
//   - CEL, the forward shape, evaluated with cel-go, with optional syntax (?. and .orValue()) and
//     the strings, lists, math and sets extension libraries. lists.range(n) refuses an n above
//     the cost limit before allocating the list.
//
// Every evaluation is bounded: a timeout (both languages), a maximum number of results (jq) and a
// runtime cost limit (CEL). Exceeding a bound gives a *LimitError, a runtime failure gives an
// *EvalError, and a rejected or malformed expression gives a *CompileError. Nothing in this
// package panics on user input: panics inside gojq or cel-go are recovered into *EvalError.
//
// Compile once with a Compiler and evaluate the Program many times; programs are safe for
// concurrent use.
//
// Values passed in and out are JSON-shaped Go values: nil, bool, int, float64, *big.Int (jq
// only, for integers beyond int), string, []any and map[string]any. Use FromObject to turn a
// Kubernetes object into such a map, or Normalize for any other value tree.
package expr
