package expr

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/itchyny/gojq"
)

// The jq builtins a definition may call, and how each is bounded.
//
// gojq runs most builtins as Go functions that never look at the evaluation's deadline, so one
// call can cost unbounded time and memory: regex builtins are quadratic in the subject (gojq
// recounts code points from the start for every match), "x" * n allocates n copies, explode and
// indices allocate 16 bytes per code point, and encoders and comparisons walk values whose
// size, with jq's sharing ([$x, $x] twice is four $x), grows exponentially with the steps that
// built them. gangmap therefore:
//
//   - allows only the builtins listed here (jqSafeBuiltins and jqGuardedBuiltins): any other,
//     including one a future gojq adds, does not compile, and is also shadowed at run time by an
//     error (jqPrelude), so no scoping trick reaches it;
//   - runs every builtin that can do more than constant work per element of its input through a
//     guard (jqGuards) that measures its input and arguments first (valueSize, which stops at the
//     bound), refuses a call over the per-call bounds with a *LimitError of kind LimitSize, and
//     charges the work to the evaluation's step budget;
//   - routes the arithmetic and comparison operators (rewritten from the query's syntax tree to
//     function calls, jqrewrite.go) through the same guards;
//   - replaces the regex builtins (test, match, capture, scan, splits, split/2, sub, gsub) by a
//     linear implementation with input bounds (jqregex.go).
//
// The jq-defined builtins allowed unguarded (map, select, to_entries, any, limit, ...) only use
// constant-cost internals per step, so the step budget and the timeout bound them.

// jqSafeBuiltins are builtins allowed as gojq implements them: their cost is constant, or linear
// in a string or array that is already bounded and produces nothing larger (name/arity).
var jqSafeBuiltins = names(
	"empty/0", "not/0", "length/0", "utf8bytelength/0", "type/0", "keys/0", "keys_unsorted/0",
	"has/1", "in/1", "values/0", "nulls/0", "booleans/0", "numbers/0", "strings/0", "arrays/0",
	"objects/0", "iterables/0", "scalars/0", "finites/0", "normals/0", "select/1", "map/1",
	"map_values/1", "to_entries/0", "from_entries/0", "with_entries/1", "first/0", "last/0",
	"first/1", "last/1", "nth/1", "nth/2", "limit/2", "skip/2", "until/2", "while/2", "isempty/1",
	"any/0", "any/1", "any/2", "all/0", "all/1", "all/2", "reverse/0", "getpath/1", "env/0",
	"halt/0", "halt_error/0", "halt_error/1", "error/0", "error/1", "tonumber/0", "toboolean/0", "ltrimstr/1", "rtrimstr/1",
	"trimstr/1", "startswith/1", "endswith/1", "ltrim/0", "rtrim/0", "trim/0", "split/1",
	"toarray/0", "path/1", "floor/0", "ceil/0", "round/0", "trunc/0", "fabs/0", "sqrt/0", "abs/0", "pow/2",
	"log/0", "log2/0", "log10/0", "exp/0", "exp2/0", "exp10/0", "significand/0", "infinite/0",
	"nan/0", "isinfinite/0", "isnan/0", "isnormal/0", "isfinite/0", "min/0", "max/0",
)

// jqGuardedBuiltins are builtins allowed through a guard of the prelude (name/arity).
var jqGuardedBuiltins = names(
	"tojson/0", "tostring/0", "fromjson/0", "ascii_downcase/0", "ascii_upcase/0", "explode/0",
	"implode/0", "add/0", "add/1", "join/1", "flatten/0", "flatten/1", "sort/0", "unique/0",
	"sort_by/1", "group_by/1", "unique_by/1", "min_by/1", "max_by/1", "contains/1", "inside/1",
	"indices/1", "index/1", "rindex/1", "setpath/2", "format/1", "IN/1", "IN/2",
	"test/1", "test/2", "match/1", "match/2", "capture/1", "capture/2", "scan/1", "scan/2",
	"splits/1", "splits/2", "split/2", "sub/2", "sub/3", "gsub/2", "gsub/3",
)

// jqCompilerNames are names gojq's compiler calls for syntax (operators, @formats, string
// interpolation, update-assignment); the prelude guards them, and the rewrite of operators
// targets them. User code may not call them by name.
var jqCompilerNames = names(
	"_add/2", "_subtract/2", "_multiply/2", "_divide/2", "_modulo/2", "_equal/2", "_notequal/2",
	"_less/2", "_greater/2", "_lesseq/2", "_greatereq/2", "_tohtml/0", "_touri/0", "_tourid/0",
	"_tocsv/0", "_totsv/0", "_tosh/0", "_tobase64/0", "_tobase64d/0",
)

func names(list ...string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, n := range list {
		m[n] = true
	}
	return m
}

// jqBudgetVar is the variable that carries the evaluation's *jqBudget to the guards. User code
// may not name it (checkJQ).
const jqBudgetVar = "$__gm"

// jqGuardPrefix starts the names of gangmap's own functions; user code may not call them.
const jqGuardPrefix = "_gm_"

// jqPreludeSource defines the guarded builtins. Each guard is a Go function (jqGuards) called
// with the budget, the builtin's name and its arguments; it returns its input, or an error
// before the builtin runs. A `_gm_raw_X` alias, defined before X, reaches gojq's own X.
const jqPreludeSource = `
def _gm_raw_ascii_downcase: ascii_downcase;
def _gm_raw_ascii_upcase: ascii_upcase;
def _gm_raw_explode: explode;
def _gm_raw_implode: implode;
def _gm_raw_sort: sort;
def _gm_raw_unique: unique;
def _gm_raw_min: min;
def _gm_raw_max: max;
def _gm_raw_contains($x): contains($x);
def _gm_raw_indices($x): indices($x);
def _gm_raw_index($x): index($x);
def _gm_raw_rindex($x): rindex($x);
def _gm_raw__tohtml: _tohtml;
def _gm_raw__touri: _touri;
def _gm_raw__tourid: _tourid;
def _gm_raw__tocsv: _tocsv;
def _gm_raw__totsv: _totsv;
def _gm_raw__tosh: _tosh;
def _gm_raw__tobase64: _tobase64;
def _gm_raw__tobase64d: _tobase64d;
def _gm_raw_add: add; def _gm_raw_join($x): join($x); def _gm_raw_flatten: flatten;
def _gm_raw_flatten($d): flatten($d); def _gm_raw_setpath($p; $v): setpath($p; $v);
def _gm_raw_tojson: tojson; def _gm_raw_tostring: tostring; def _gm_raw_fromjson: fromjson;
def _gm_raw_format($f): format($f);
def map(f): [.[] | f];
def to_entries: [keys[] as $k | {key: $k, value: .[$k]}];
def from_entries: map({ (.key // .Key // .name // .Name):
  if has("value") then .value else .Value end }) | add // {};
def with_entries(f): to_entries | map(f) | from_entries;
def tojson: _gm_guard($__gm; "tojson") | _gm_raw_tojson | _gm_out($__gm; "tojson/0");
def tostring: _gm_guard($__gm; "tostring") | _gm_raw_tostring | _gm_out($__gm; "tostring/0");
def fromjson: _gm_guard($__gm; "fromjson") | _gm_raw_fromjson | _gm_out($__gm; "fromjson/0");
def format($f): _gm_guard($__gm; "format"; $f) | _gm_raw_format($f) | _gm_out($__gm; "format/1");
def ascii_downcase: _gm_guard($__gm; "ascii_downcase") | _gm_raw_ascii_downcase | _gm_out($__gm; "ascii_downcase/0");
def ascii_upcase: _gm_guard($__gm; "ascii_upcase") | _gm_raw_ascii_upcase | _gm_out($__gm; "ascii_upcase/0");
def explode: _gm_guard($__gm; "explode") | _gm_raw_explode | _gm_out($__gm; "explode/0");
def implode: _gm_guard($__gm; "implode") | _gm_raw_implode | _gm_out($__gm; "implode/0");
def add: _gm_guard($__gm; "add") | _gm_raw_add | _gm_out($__gm; "add/0");
def add(f): [f] | add;
def join($x): _gm_guard($__gm; "join"; $x) | _gm_raw_join($x) | _gm_out($__gm; "join/1");
def flatten: _gm_guard($__gm; "flatten") | _gm_raw_flatten | _gm_out($__gm; "flatten/0");
def flatten($d): _gm_guard($__gm; "flatten"; $d) | _gm_raw_flatten($d) | _gm_out($__gm; "flatten/1");
def sort: _gm_guard($__gm; "sort") | _gm_raw_sort | _gm_out($__gm; "sort/0");
def unique: _gm_guard($__gm; "unique") | _gm_raw_unique | _gm_out($__gm; "unique/0");
def min: _gm_guard($__gm; "min") | _gm_raw_min;
def max: _gm_guard($__gm; "max") | _gm_raw_max;
def sort_by(f): map([f]) as $k | _gm_guard($__gm; "sort"; $k) | _sort_by($k) | _gm_out($__gm; "sort_by/1");
def group_by(f): map([f]) as $k | _gm_guard($__gm; "sort"; $k) | _group_by($k) | _gm_out($__gm; "group_by/1");
def unique_by(f): map([f]) as $k | _gm_guard($__gm; "sort"; $k) | _unique_by($k) | _gm_out($__gm; "unique_by/1");
def min_by(f): map([f]) as $k | _gm_guard($__gm; "sort"; $k) | _min_by($k);
def max_by(f): map([f]) as $k | _gm_guard($__gm; "sort"; $k) | _max_by($k);
def contains($x): _gm_guard($__gm; "contains"; $x) | _gm_raw_contains($x) | _gm_out($__gm; "contains/1");
def inside($x): . as $v | $x | contains($v);
def indices($x): _gm_guard($__gm; "indices"; $x) | _gm_raw_indices($x) | _gm_out($__gm; "indices/1");
def index($x): _gm_guard($__gm; "indices"; $x) | _gm_raw_index($x) | _gm_out($__gm; "index/1");
def rindex($x): _gm_guard($__gm; "indices"; $x) | _gm_raw_rindex($x) | _gm_out($__gm; "rindex/1");
def setpath($p; $v): _gm_guard($__gm; "setpath"; $p) | _gm_raw_setpath($p; $v) | _gm_out($__gm; "setpath/2");
def _tohtml: _gm_guard($__gm; "@html") | _gm_raw__tohtml | _gm_out($__gm; "_tohtml/0");
def _touri: _gm_guard($__gm; "@uri") | _gm_raw__touri | _gm_out($__gm; "_touri/0");
def _tourid: _gm_guard($__gm; "@urid") | _gm_raw__tourid | _gm_out($__gm; "_tourid/0");
def _tocsv: _gm_guard($__gm; "@csv") | _gm_raw__tocsv | _gm_out($__gm; "_tocsv/0");
def _totsv: _gm_guard($__gm; "@tsv") | _gm_raw__totsv | _gm_out($__gm; "_totsv/0");
def _tosh: _gm_guard($__gm; "@sh") | _gm_raw__tosh | _gm_out($__gm; "_tosh/0");
def _tobase64: _gm_guard($__gm; "@base64") | _gm_raw__tobase64 | _gm_out($__gm; "_tobase64/0");
def _tobase64d: _gm_guard($__gm; "@base64d") | _gm_raw__tobase64d | _gm_out($__gm; "_tobase64d/0");
def _add(l; r): _gm_op($__gm; "+"; l; r) | .[0] + .[1];
def _subtract(l; r): _gm_op($__gm; "-"; l; r) | .[0] - .[1];
def _multiply(l; r): _gm_op($__gm; "*"; l; r) | .[0] * .[1];
def _divide(l; r): _gm_op($__gm; "/"; l; r) | .[0] / .[1];
def _modulo(l; r): _gm_op($__gm; "%"; l; r) | .[0] % .[1];
def _equal(l; r): _gm_op($__gm; "=="; l; r) | .[0] == .[1];
def _notequal(l; r): _gm_op($__gm; "!="; l; r) | .[0] != .[1];
def _less(l; r): _gm_op($__gm; "<"; l; r) | .[0] < .[1];
def _greater(l; r): _gm_op($__gm; ">"; l; r) | .[0] > .[1];
def _lesseq(l; r): _gm_op($__gm; "<="; l; r) | .[0] <= .[1];
def _greatereq(l; r): _gm_op($__gm; ">="; l; r) | .[0] >= .[1];
def IN(s): any(_equal(s; .); .);
def IN(src; s): any(_equal(src; s); .);
def match($re; $flags): _gm_match($__gm; $re; $flags; "match")[];
def match($re): match($re; null);
def test($re; $flags): _gm_match($__gm; $re; $flags; "test");
def test($re): test($re; null);
def capture($re; $flags): match($re; $flags) | .captures | _captures;
def capture($re): capture($re; null);
def scan($re; $flags): match($re; $flags + "g") |
  if .captures == [] then .string else [.captures[].string] end;
def scan($re): scan($re; null);
def splits($re; $flags): _gm_match($__gm; $re; $flags + "g"; "pieces") as $ms |
  if $ms == [] then . else ($ms[] | .pre), $ms[-1].post end;
def splits($re): splits($re; null);
def split($re; $flags): [splits($re; $flags)];
def sub($re; str; $flags): . as $in | _gm_match($__gm; $re; $flags; "pieces") as $ms |
  if $ms == [] then $in else
    (reduce $ms[] as $m ({r: []};
        reduce ($m.captures | _captures | str) as $x (.i = 0; .r[.i] += [$m.pre, $x] | .i += 1))
      | .r[] | . + [$ms[-1].post] | add) // $in
  end;
def sub($re; str): sub($re; str; null);
def gsub($re; str; $flags): sub($re; str; $flags + "g");
def gsub($re; str): sub($re; str; "g");
`

// preludeDef is one definition of the prelude: its key (name/arity), its syntax tree and the
// name/arity of every function it calls (including those gojq's compiler calls for its
// operators and interpolations).
type preludeDef struct {
	key  string
	def  *gojq.FuncDef
	deps []string
}

// jqPrelude is jqPreludeSource split into its definitions, in order (a definition only calls
// earlier ones, as jq scoping requires), parsed once per process. The syntax trees are shared
// by every compilation: gojq's compiler only reads a query (it shares its own builtins' parsed
// definitions between compilations the same way), and gangmap's rewrite runs on the user's
// query before the prelude is put in front of it (TestPreludeSharedTreesUnchanged).
var jqPrelude = func() []preludeDef {
	q, err := gojq.Parse(preludeSource() + ".")
	if err != nil {
		panic(fmt.Sprintf("expr: the jq prelude does not parse: %v", err))
	}
	out := make([]preludeDef, 0, len(q.FuncDefs))
	for _, fd := range q.FuncDefs {
		w := newJQRewriter(false)
		w.query(fd.Body)
		deps := slices.Collect(maps.Keys(w.refs))
		deps = append(deps, slices.Collect(maps.Keys(w.implicit))...)
		// Parsed again from its printed form, as the compilations before this cache did, then
		// metered: its arrays and objects charge the budget as the user's do.
		def := meteredDef(fd.String())
		out = append(out, preludeDef{key: fmt.Sprintf("%s/%d", fd.Name, len(fd.Args)), def: def, deps: deps})
	}
	return out
}()

// preludeSource is the whole prelude: the generated wrappers of the builtins with a cost entry
// (generatedPreludeSource), then the handwritten definitions (jqPreludeSource).
func preludeSource() string { return generatedPreludeSource() + jqPreludeSource }

// meteredDef parses one prelude definition and rewrites its constructions (meterTerm).
func meteredDef(src string) *gojq.FuncDef {
	def := parseFuncDef(src)
	w := newJQRewriter(false)
	w.meter = true
	w.query(def.Body)
	return def
}

// parseFuncDef parses the source of one jq definition; src is gangmap's own, so a failure is a
// programming error.
func parseFuncDef(src string) *gojq.FuncDef {
	q, err := gojq.Parse(src + " .")
	if err != nil || len(q.FuncDefs) != 1 {
		panic(fmt.Sprintf("expr: the jq prelude definition %q does not parse: %v", src, err))
	}
	return q.FuncDefs[0]
}

// preludeFor returns, in prelude order, the prelude definitions that the names in needed call,
// directly or through each other, in a new slice of shared (read-only) syntax trees.
func preludeFor(needed map[string]bool) []*gojq.FuncDef {
	use := make([]bool, len(jqPrelude))
	want := maps.Clone(needed)
	for i := len(jqPrelude) - 1; i >= 0; i-- {
		if d := jqPrelude[i]; want[d.key] {
			use[i] = true
			for _, dep := range d.deps {
				want[dep] = true
			}
		}
	}
	var out []*gojq.FuncDef
	for i, d := range jqPrelude {
		if use[i] {
			out = append(out, d.def)
		}
	}
	return out
}

// jqBuiltinNames lists every name/arity gojq resolves without a definition (its builtins), as
// gojq's `builtins` reports them, so the prelude can shadow the ones gangmap does not allow.
var jqBuiltinNames = func() map[string]bool {
	q, _ := gojq.Parse("builtins")
	code, err := gojq.Compile(q)
	if err != nil {
		panic(fmt.Sprintf("expr: listing gojq's builtins: %v", err))
	}
	v, _ := code.Run(nil).Next()
	out := map[string]bool{}
	list, _ := v.([]any)
	for _, n := range list {
		if s, ok := n.(string); ok {
			out[s] = true
		}
	}
	return out
}()

// withPrelude returns q with the prelude's definitions it needs in front of its own (those that
// refs, the functions q calls, and implicit, those gojq's compiler calls for q's operators and
// interpolations, reach), and, for every name/arity in refs that is a gojq builtin gangmap does
// not allow, a definition that fails with an error: no call, however scoped, reaches a builtin
// gangmap has not bounded.
func withPrelude(q *gojq.Query, refs, implicit map[string]bool) *gojq.Query {
	needed := maps.Clone(refs)
	maps.Copy(needed, implicit)
	defs := preludeFor(needed)
	for _, ref := range slices.Sorted(maps.Keys(refs)) {
		if !jqBuiltinNames[ref] || jqAllowed(ref) {
			continue
		}
		defs = append(defs, unavailableDefs[ref])
	}
	out := *q
	out.FuncDefs = append(defs, q.FuncDefs...)
	return &out
}

// unavailableDefs holds, per name/arity of a gojq builtin gangmap does not allow, the parsed
// `def name(a0; a1...): error("...")` that shadows it, built once per process (shared and
// read-only, as the prelude's trees).
var unavailableDefs = func() map[string]*gojq.FuncDef {
	out := map[string]*gojq.FuncDef{}
	for ref := range jqBuiltinNames {
		if jqAllowed(ref) {
			continue
		}
		name, arity, _ := strings.Cut(ref, "/")
		out[ref] = unavailableDef(name, arity)
	}
	return out
}()

// unavailableDef is `def name(a0; a1...): error("...")` for a builtin gangmap does not allow.
func unavailableDef(name, arity string) *gojq.FuncDef {
	var params []string
	for i := range atoiOr0(arity) {
		params = append(params, fmt.Sprintf("a%d", i))
	}
	src := fmt.Sprintf(`def %s: error(%q);`, name, name+"/"+arity+" is not available in gangmap definitions")
	if len(params) > 0 {
		src = fmt.Sprintf(`def %s(%s): error(%q);`, name, strings.Join(params, "; "), name+"/"+arity+" is not available in gangmap definitions")
	}
	return parseFuncDef(src)
}

func atoiOr0(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}
