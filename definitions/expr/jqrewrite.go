package expr

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/itchyny/gojq"
)

// jqOperatorFuncs maps the binary operators gojq compiles straight to its Go functions to the
// names the prelude guards (the names gojq itself gives them).
var jqOperatorFuncs = map[gojq.Operator]string{
	gojq.OpAdd: "_add", gojq.OpSub: "_subtract", gojq.OpMul: "_multiply", gojq.OpDiv: "_divide",
	gojq.OpMod: "_modulo", gojq.OpEq: "_equal", gojq.OpNe: "_notequal", gojq.OpLt: "_less",
	gojq.OpGt: "_greater", gojq.OpLe: "_lesseq", gojq.OpGe: "_greatereq",
}

// jqMathBuiltins are gojq's math functions on numbers: constant time (jn and yn, which loop
// their order, are left out).
var jqMathBuiltins = names(
	"sin/0", "cos/0", "tan/0", "asin/0", "acos/0", "atan/0", "sinh/0", "cosh/0", "tanh/0",
	"asinh/0", "acosh/0", "atanh/0", "nearbyint/0", "rint/0", "cbrt/0", "expm1/0", "frexp/0",
	"modf/0", "log1p/0", "logb/0", "gamma/0", "tgamma/0", "lgamma/0", "erf/0", "erfc/0", "j0/0",
	"j1/0", "y0/0", "y1/0", "atan2/2", "copysign/2", "drem/2", "fdim/2", "fmax/2", "fmin/2",
	"fmod/2", "hypot/2", "nextafter/2", "nexttoward/2", "remainder/2", "ldexp/2", "scalb/2",
	"scalbln/2", "fma/3",
)

// jqAllowed reports whether name/arity is a builtin a definition may call.
func jqAllowed(ref string) bool {
	return jqSafeBuiltins[ref] || jqGuardedBuiltins[ref] || jqMathBuiltins[ref]
}

// rewriteJQ prepares a checked query for bounded evaluation: it rewrites every arithmetic and
// comparison operator into a call of the prelude's guarded function of the same meaning (`a + b`
// becomes `_add(a; b)`, which gojq evaluates in the same order), and returns the name/arity of
// every function the query calls (refs) and of those gojq's compiler will call for it
// (implicit: the operators, tostring for interpolation, the @formats' functions). It returns a reason when the query calls a builtin gangmap
// does not allow, one of gangmap's internal functions, or names $__gm.
func rewriteJQ(q *gojq.Query) (refs, implicit map[string]bool, reason string) {
	w := newJQRewriter(true)
	w.query(q)
	if w.reason != "" {
		return nil, nil, w.reason
	}
	for ref := range w.refs {
		if w.defined[ref] || jqAllowed(ref) {
			continue
		}
		name, _, _ := strings.Cut(ref, "/")
		switch {
		case strings.HasPrefix(name, "_"):
			return nil, nil, fmt.Sprintf("function %s is internal to jq and gangmap", ref)
		case jqBuiltinNames[ref] || jqCompilerNames[ref]:
			return nil, nil, fmt.Sprintf("function %s is not available in gangmap definitions (its cost is not bounded; see the definitions/expr package documentation for the list)", ref)
		default:
			return nil, nil, fmt.Sprintf("function not defined: %s", ref)
		}
	}
	return w.refs, w.implicit, ""
}

// jqRewriter walks a query once, rewriting operators and collecting references.
type jqRewriter struct {
	// refs are the name/arity of every function called; defined those the query defines itself
	// (function definitions and their parameters, anywhere in the query); implicit those gojq's
	// compiler calls for the query's syntax.
	refs, defined, implicit map[string]bool
	reason                  string
	// rewrite says operators are rewritten (user queries); the prelude is only read.
	rewrite bool
	// meter says array and object constructions are rewritten to charge the budget (user
	// queries and the prelude's definitions, see meterTerm).
	meter bool
}

func newJQRewriter(rewrite bool) *jqRewriter {
	return &jqRewriter{refs: map[string]bool{}, defined: map[string]bool{}, implicit: map[string]bool{}, rewrite: rewrite, meter: rewrite}
}

// meterTerm rewrites a construction so that what it builds is charged to the evaluation's
// budget (jqmeter.go): `[q]` becomes `[q | _gm_elem($__gm)]`, each element charged as it is
// appended; `{...}` becomes `({...} | _gm_obj($__gm))`, its suffixes kept on the outer term.
// Called once the term's own sub-queries are walked, so the calls it adds are not references.
func meterTerm(t *gojq.Term) {
	switch {
	case t.Type == gojq.TermTypeArray && t.Array != nil && t.Array.Query != nil:
		t.Array = &gojq.Array{Query: pipeTo(t.Array.Query, budgetCall("_gm_elem"))}
	case t.Type == gojq.TermTypeObject && t.Object != nil:
		obj := &gojq.Term{Type: gojq.TermTypeObject, Object: t.Object}
		t.Type, t.Object = gojq.TermTypeQuery, nil
		t.Query = pipeTo(&gojq.Query{Term: obj}, budgetCall("_gm_obj"))
	}
}

// pipeTo is `q | f`.
func pipeTo(q *gojq.Query, f *gojq.Query) *gojq.Query {
	return &gojq.Query{Left: q, Op: gojq.OpPipe, Right: f}
}

// budgetCall is the call `name($__gm)`.
func budgetCall(name string) *gojq.Query {
	arg := &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: jqBudgetVar}}}
	return &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: name, Args: []*gojq.Query{arg}}}}
}

// jqUpdateFuncs maps the update-assignment operators to the function gojq's compiler calls for
// them (`a += b` calls _add).
var jqUpdateFuncs = map[gojq.Operator]string{
	gojq.OpUpdateAdd: "_add", gojq.OpUpdateSub: "_subtract", gojq.OpUpdateMul: "_multiply",
	gojq.OpUpdateDiv: "_divide", gojq.OpUpdateMod: "_modulo",
}

// jqFormatFuncs are the functions gojq's compiler calls for @formats (others: format/1).
var jqFormatFuncs = map[string]string{
	"@text": "tostring/0", "@json": "tojson/0", "@html": "_tohtml/0", "@uri": "_touri/0",
	"@urid": "_tourid/0", "@csv": "_tocsv/0", "@tsv": "_totsv/0", "@sh": "_tosh/0",
	"@base64": "_tobase64/0", "@base64d": "_tobase64d/0",
}

func (w *jqRewriter) query(q *gojq.Query) {
	if q == nil {
		return
	}
	for _, fd := range q.FuncDefs {
		w.funcDef(fd)
	}
	for _, p := range q.Patterns {
		w.pattern(p)
	}
	w.query(q.Left)
	w.query(q.Right)
	if name, ok := jqUpdateFuncs[q.Op]; ok {
		w.implicit[name+"/2"] = true
	}
	if name, ok := jqOperatorFuncs[q.Op]; ok && w.rewrite {
		q.Term = &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: name, Args: []*gojq.Query{q.Left, q.Right}}}
		q.Left, q.Right, q.Op = nil, nil, gojq.Operator(0)
		w.implicit[name+"/2"] = true
		return
	}
	w.term(q.Term)
}

func (w *jqRewriter) funcDef(fd *gojq.FuncDef) {
	if strings.HasPrefix(fd.Name, jqGuardPrefix) {
		w.reason = fmt.Sprintf("function name %s is reserved for gangmap", fd.Name)
	}
	w.defined[fmt.Sprintf("%s/%d", fd.Name, len(fd.Args))] = true
	for _, a := range fd.Args {
		w.defined[strings.TrimPrefix(a, "$")+"/0"] = true
	}
	w.query(fd.Body)
	if w.rewrite {
		// Each call of a function the query defines charges its frame (jqmeter.go: recursion
		// holds one per level).
		fd.Body = pipeTo(budgetCall("_gm_frame"), fd.Body)
	}
}

func (w *jqRewriter) term(t *gojq.Term) {
	if t == nil {
		return
	}
	if f := t.Func; f != nil {
		switch {
		case f.Name == jqBudgetVar:
			w.reason = fmt.Sprintf("variable %s is reserved for gangmap", f.Name)
		case strings.HasPrefix(f.Name, "$"):
			// a variable
		default:
			w.refs[fmt.Sprintf("%s/%d", f.Name, len(f.Args))] = true
		}
	}
	if t.Type == gojq.TermTypeFormat {
		if f, ok := jqFormatFuncs[t.Format]; ok {
			w.implicit[f] = true
		} else {
			w.implicit["format/1"] = true
		}
	} else if t.Str != nil && len(t.Str.Queries) > 0 {
		w.implicit["tostring/0"] = true // interpolation
	}
	if t.Unary != nil {
		w.term(t.Unary.Term)
	}
	if p := boundPattern(t); p != nil {
		w.pattern(p)
	}
	for _, q := range termQueries(t) {
		w.query(q)
	}
	for _, s := range t.SuffixList {
		for _, q := range indexQueries(s.Index) {
			w.query(q)
		}
	}
	if w.meter {
		meterTerm(t)
	}
}

func (w *jqRewriter) pattern(p *gojq.Pattern) {
	if p == nil {
		return
	}
	if p.Name == jqBudgetVar {
		w.reason = fmt.Sprintf("variable %s is reserved for gangmap", p.Name)
	}
	for _, e := range p.Array {
		w.pattern(e)
	}
	for _, o := range p.Object {
		if o.Key == jqBudgetVar {
			w.reason = fmt.Sprintf("variable %s is reserved for gangmap", o.Key)
		}
		for _, q := range append(stringQueries(o.KeyString), o.KeyQuery) {
			w.query(q)
		}
		w.pattern(o.Val)
	}
}

// JQFunctions returns the name/arity ("test/1") of every function a jq expression calls, its
// own definitions included, sorted. Errors: the expression does not parse (a *CompileError).
func JQFunctions(src string) ([]string, error) {
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, &CompileError{Language: JQ, Source: src, Reason: jqParseReason(src, err)}
	}
	w := newJQRewriter(false)
	w.query(q)
	return slices.Sorted(maps.Keys(w.refs)), nil
}
