package expr

import (
	"context"
	"fmt"
	"time"

	"github.com/google/cel-go/cel"
)

// Language is the language of an expression: JQ (the published Workload Map shape) or CEL (the
// forward shape).
type Language string

// The expression languages.
const (
	// JQ is jq, evaluated with gojq (the published shape).
	JQ Language = "jq"
	// CEL is the Common Expression Language, evaluated with cel-go (the forward shape).
	CEL Language = "cel"
)

// Subject says what an expression reads: the workload object or a pod. Object-side expressions
// (spec, scale, status, instance ids, suspend) read the workload; pod-side expressions (pod
// selectors, grouping keys, filters) read the pod, as upstream does.
type Subject int

// The subjects of an expression.
const (
	// Object: jq's input is Input.Object; CEL sees `object` and `variables`.
	Object Subject = iota
	// Pod: jq's input is Input.Pod; CEL sees `pod`, `object` and `variables`.
	Pod
)

// String names the subject: "object" or "pod".
func (s Subject) String() string {
	switch s {
	case Object:
		return "object"
	case Pod:
		return "pod"
	default:
		return fmt.Sprintf("Subject(%d)", int(s))
	}
}

// Mode says what an expression may do. Read is the default; Action allows jq assignment
// operators (suspend and resume patches such as `.spec.suspend = true`). Upstream's forbidden
// functions and recursive descent are rejected in both modes. CEL has no assignment, so Mode
// makes no difference to CEL.
type Mode int

// The modes of an expression.
const (
	// Read: the expression only reads (spec, scale, status, selectors); assignments are rejected.
	Read Mode = iota
	// Action: the expression computes a modified object (suspend, resume); jq assignments are
	// allowed.
	Action
)

// String names the mode: "read" or "action".
func (m Mode) String() string {
	switch m {
	case Read:
		return "read"
	case Action:
		return "action"
	default:
		return fmt.Sprintf("Mode(%d)", int(m))
	}
}

// Limits bound every evaluation. A zero field takes its value from DefaultLimits; no bound can
// be switched off.
//
// Together they bound the CPU time and memory of any evaluation of any expression on any input
// (docs/reliability.md, "Expression bounds"):
//
//   - the input (workload object or pod, and the variables) is at most MaxInputSize size units
//     (about bytes of JSON), checked before evaluation (LimitInput);
//   - jq: at most MaxSteps instructions, builtin work charged as instructions (LimitSteps); every
//     builtin or operator call whose work is more than constant per element of its input is
//     refused before it runs when its input, arguments or result exceed MaxValueSize, or the
//     regex bounds (LimitSize), so no single instruction runs long or allocates much; builtins
//     whose cost is not bounded do not compile;
//   - CEL: the runtime cost limit CELCostLimit, with string-growing functions (replace, join,
//     format, +, quote) refused before they run when their result would exceed MaxValueSize
//     (LimitSize);
//   - both: the wall-clock Timeout, checked between steps (LimitTimeout), and MaxResults (jq);
//   - both: one budget of what the evaluation produces, MaxProducedBytes and
//     MaxProducedElements, charged for every value it creates whatever builtin or operator made
//     it, and checked before the builtins whose output or cost is not linear in their input run
//     (LimitBudget; CEL: LimitCost).
type Limits struct {
	// Timeout bounds the wall-clock time of one Eval (both languages). Upstream: 1s.
	Timeout time.Duration
	// MaxResults bounds the number of results of one jq Eval. Upstream: 1000.
	MaxResults int
	// CELCostLimit bounds the runtime cost of one CEL Eval (cel.CostLimit units).
	CELCostLimit uint64
	// MaxSteps bounds the instructions of one jq Eval, builtin work included (one step per 16
	// size units a builtin processes). Default 10,000,000.
	MaxSteps int64
	// MaxValueSize bounds, in size units (about bytes of JSON), what one builtin or operator
	// call may read or produce: a string, an encoded value, a compared value. Default 4 MiB.
	MaxValueSize int
	// MaxInputSize bounds, in size units, the input document and the variables of one Eval.
	// Default 3 MiB (the API server's request limit: no stored object is larger).
	MaxInputSize int
	// MaxProducedBytes bounds the Go memory, in bytes, of the values one Eval creates, whatever
	// creates them (every builtin's output, every array, object and string, every number parsed
	// from text): jq charges them to the evaluation's budget (jqmeter.go), CEL to its cost at
	// one unit per celBytesPerCost bytes (celcost.go). Default 32 MiB.
	MaxProducedBytes int64
	// MaxProducedElements bounds the array elements and object entries one jq Eval creates
	// (CEL: one cost unit each). Default 1,048,576.
	MaxProducedElements int64
}

// DefaultLimits returns the upstream bounds (a 1s timeout, 1000 jq results and a CEL cost limit
// of 1,000,000) and gangmap's: 10,000,000 jq steps, 4 MiB per builtin call, 3 MiB of input, and
// 32 MiB and 1,048,576 elements produced per evaluation.
func DefaultLimits() Limits {
	return Limits{
		Timeout: time.Second, MaxResults: 1000, CELCostLimit: 1_000_000,
		MaxSteps: defaultMaxSteps, MaxValueSize: defaultMaxValueSize, MaxInputSize: defaultMaxInputSize,
		MaxProducedBytes: defaultMaxProducedBytes, MaxProducedElements: defaultMaxProducedElements,
	}
}

// withDefaults fills zero fields from DefaultLimits and rejects negative ones.
func (l Limits) withDefaults() (Limits, error) {
	if l.Timeout < 0 || l.MaxResults < 0 || l.MaxSteps < 0 || l.MaxValueSize < 0 || l.MaxInputSize < 0 ||
		l.MaxProducedBytes < 0 || l.MaxProducedElements < 0 {
		return l, fmt.Errorf("expr: negative limits %+v", l)
	}
	d := DefaultLimits()
	if l.Timeout == 0 {
		l.Timeout = d.Timeout
	}
	if l.MaxResults == 0 {
		l.MaxResults = d.MaxResults
	}
	if l.CELCostLimit == 0 {
		l.CELCostLimit = d.CELCostLimit
	}
	if l.MaxSteps == 0 {
		l.MaxSteps = d.MaxSteps
	}
	if l.MaxValueSize == 0 {
		l.MaxValueSize = d.MaxValueSize
	}
	if l.MaxInputSize == 0 {
		l.MaxInputSize = d.MaxInputSize
	}
	if l.MaxProducedBytes == 0 {
		l.MaxProducedBytes = d.MaxProducedBytes
	}
	if l.MaxProducedElements == 0 {
		l.MaxProducedElements = d.MaxProducedElements
	}
	return l, nil
}

// Input is what an evaluation reads. Maps should be JSON-shaped (see Normalize); jq programs
// normalize their input themselves, copying only what needs converting.
type Input struct {
	// Object is the workload object; nil is null.
	Object map[string]any
	// Pod is the pod, for Pod-subject expressions; nil is null.
	Pod map[string]any
	// Variables are the definition's evaluated variables: `$variables` in jq (null when nil),
	// `variables` in CEL (an empty map when nil).
	Variables map[string]any
	// Normalized says the caller already applied Normalize to Object, Pod and Variables and
	// checked their size with CheckInput, so jq does not walk them again on every evaluation (a
	// definition evaluates many expressions on one workload).
	Normalized bool
}

// Program is a compiled expression. It is safe for concurrent use.
type Program interface {
	// Language returns the expression's language.
	Language() Language
	// Source returns the expression text.
	Source() string
	// Eval evaluates the expression and returns every result.
	//
	// jq: the input document is in.Object (subject Object) or in.Pod (subject Pod), and
	// `$variables` is bound to in.Variables. All outputs are collected in order; `empty` gives
	// none; null outputs are kept as nil. Results may share maps and slices with the input:
	// treat them as read-only.
	//
	// CEL: one result, converted to JSON-shaped Go values (map[string]any, []any, string, bool,
	// int from CEL int and uint, float64, nil); optional.none() gives no result and CEL null
	// gives [nil]. Bytes become base64 strings, timestamps RFC 3339 strings and durations
	// strings such as "1.5s" (the protobuf JSON mapping).
	//
	// Errors: *LimitError when a bound of Limits is exceeded, *EvalError for anything else that
	// fails at run time. Eval never panics.
	Eval(ctx context.Context, in Input) ([]any, error)
}

// Compiler compiles expressions under one set of Limits. It holds the two CEL environments
// (object-side and pod-side), built once. It is safe for concurrent use.
type Compiler struct {
	limits    Limits
	objectEnv *cel.Env
	podEnv    *cel.Env
}

// NewCompiler builds a Compiler. Zero fields of l take their DefaultLimits value; negative ones
// are an error, as is a failure to build the CEL environments.
func NewCompiler(l Limits) (*Compiler, error) {
	l, err := l.withDefaults()
	if err != nil {
		return nil, err
	}
	objectEnv, err := newCELEnv(Object, l)
	if err != nil {
		return nil, fmt.Errorf("expr: building the CEL object environment: %w", err)
	}
	podEnv, err := newCELEnv(Pod, l)
	if err != nil {
		return nil, fmt.Errorf("expr: building the CEL pod environment: %w", err)
	}
	return &Compiler{limits: l, objectEnv: objectEnv, podEnv: podEnv}, nil
}

// Limits returns the bounds the Compiler's programs run under, defaults filled in.
func (c *Compiler) Limits() Limits { return c.limits }

// Compile compiles src once for evaluation any number of times.
//
// jq sources are parsed with gojq and checked against the upstream Workload Map rules: the
// functions del, range, paths, recurse, walk and repeat (any arity) and recursive descent (..)
// are rejected anywhere in the query, including function definitions, and in Read mode so are
// the assignment operators =, |=, +=, -=, *=, /=, %= and //=. The only jq variable is
// `$variables`; `$ENV` and `env` are empty, and input, inputs and debug are unavailable.
//
// CEL sources are parsed and type-checked against the environment of subject.
//
// Any failure is a *CompileError whose Reason names the forbidden construct or gives the parse
// error and its position.
func (c *Compiler) Compile(lang Language, src string, subject Subject, mode Mode) (Program, error) {
	if subject != Object && subject != Pod {
		return nil, &CompileError{Language: lang, Source: src, Reason: fmt.Sprintf("unknown subject %v", subject)}
	}
	switch lang {
	case JQ:
		if mode != Read && mode != Action {
			return nil, &CompileError{Language: lang, Source: src, Reason: fmt.Sprintf("unknown mode %v", mode)}
		}
		return compileJQ(src, subject, mode, c.limits)
	case CEL:
		env := c.objectEnv
		if subject == Pod {
			env = c.podEnv
		}
		return compileCEL(env, src, subject, c.limits)
	default:
		return nil, &CompileError{Language: lang, Source: src, Reason: fmt.Sprintf("unknown language %q (want jq or cel)", string(lang))}
	}
}

// withTimeout derives the evaluation context; a nil ctx is treated as context.Background.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, d)
}
