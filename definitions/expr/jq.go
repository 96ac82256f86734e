package expr

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/itchyny/gojq"
)

// jqVariables are the variable names a jq program is compiled with, in Run's argument order:
// the definition's variables, and the evaluation's budget for the prelude's guards.
var jqVariables = []string{"$variables", jqBudgetVar}

// jqProgram is a compiled jq expression.
type jqProgram struct {
	src     string
	subject Subject
	code    *gojq.Code
	limits  Limits
}

// compileJQ parses src, checks it against the upstream rules for mode, and compiles it.
func compileJQ(src string, subject Subject, mode Mode, l Limits) (Program, error) {
	if len(src) > MaxJQSourceBytes {
		return nil, &CompileError{Language: JQ, Source: src, Reason: fmt.Sprintf("the expression is %d bytes long; at most %d are compiled (expr.MaxJQSourceBytes)", len(src), MaxJQSourceBytes)}
	}
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, &CompileError{Language: JQ, Source: src, Reason: jqParseReason(src, err)}
	}
	if reason := checkJQ(q, mode); reason != "" {
		return nil, &CompileError{Language: JQ, Source: src, Reason: reason}
	}
	refs, implicit, reason := rewriteJQ(q)
	if reason != "" {
		return nil, &CompileError{Language: JQ, Source: src, Reason: reason}
	}
	// No environ loader: $ENV and env are empty objects, so expressions cannot read the
	// controller's environment. No input iterator: input and inputs do not compile.
	opts := append([]gojq.CompilerOption{gojq.WithVariables(jqVariables)}, jqGuardOptions(l)...)
	code, err := gojq.Compile(withPrelude(q, refs, implicit), opts...)
	if err != nil {
		return nil, &CompileError{Language: JQ, Source: src, Reason: err.Error()}
	}
	return &jqProgram{src: src, subject: subject, code: code, limits: l}, nil
}

// jqParseReason renders a gojq parse error with its byte offset and the text around it.
func jqParseReason(src string, err error) string {
	var pe *gojq.ParseError
	if !errors.As(err, &pe) {
		return "parse error: " + err.Error()
	}
	off := min(max(pe.Offset, 0), len(src))
	start := max(off-20, 0)
	return fmt.Sprintf("parse error at offset %d (after %q): %v", off, src[start:off], err)
}

// Language implements Program.
func (p *jqProgram) Language() Language { return JQ }

// Source implements Program.
func (p *jqProgram) Source() string { return p.src }

// Eval implements Program.
func (p *jqProgram) Eval(ctx context.Context, in Input) ([]any, error) {
	out, _, err := p.eval(ctx, in)
	return out, err
}

// eval is Eval, returning also the evaluation's budget (what it charged: steps, bytes and
// elements produced) when it ran.
func (p *jqProgram) eval(ctx context.Context, in Input) (out []any, budget *jqBudget, err error) {
	doc := in.Object
	if p.subject == Pod {
		doc = in.Pod
	}
	input, vars := jqValue(doc, in.Normalized), jqValue(in.Variables, in.Normalized)
	if !in.Normalized {
		if err := checkInputSize(JQ, p.src, p.limits, input, vars); err != nil {
			return nil, nil, err
		}
	}
	ctx, cancel := withTimeout(ctx, p.limits.Timeout)
	defer cancel()
	budget = newJQBudget(ctx, p.limits)
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &EvalError{Language: JQ, Source: p.src, Err: fmt.Errorf("internal error: %v", r)}
		}
	}()
	iter := p.code.RunWithContext(budget, input, vars, budget)
	for {
		v, ok := iter.Next()
		if !ok {
			return out, budget, nil
		}
		if e, isErr := v.(error); isErr {
			if stop, err := p.failure(e); stop {
				return nil, budget, err
			}
			return out, budget, nil // halt: end of output
		}
		if len(out) == p.limits.MaxResults {
			detail := fmt.Sprintf("more than %d results", p.limits.MaxResults)
			return nil, budget, &LimitError{Language: JQ, Source: p.src, Kind: LimitResults, Detail: detail}
		}
		out = append(out, v)
	}
}

// failure classifies an error emitted by gojq. It returns false for `halt`, which ends the
// output without an error (as the jq CLI exits 0), and otherwise true with the error to return:
// a *LimitError for the timeout, the step budget and a refused builtin call, an *EvalError for
// everything else (the caller's cancellation included), its message bounded (errorText).
func (p *jqProgram) failure(e error) (bool, error) {
	var halt *gojq.HaltError
	if errors.As(e, &halt) && halt.Value() == nil {
		return false, nil
	}
	var steps *stepLimitError
	var size *sizeLimitError
	var produced *budgetLimitError
	switch {
	case errors.As(e, &produced):
		return true, &LimitError{Language: JQ, Source: p.src, Kind: LimitBudget, Detail: produced.Error(), Err: e}
	case errors.As(e, &steps):
		return true, &LimitError{Language: JQ, Source: p.src, Kind: LimitSteps, Detail: steps.Error(), Err: e}
	case errors.As(e, &size):
		return true, &LimitError{Language: JQ, Source: p.src, Kind: LimitSize, Detail: size.Error(), Err: e}
	case errors.Is(e, context.DeadlineExceeded):
		return true, timeoutError(JQ, p.src, p.limits.Timeout, e)
	case errors.Is(e, context.Canceled):
		return true, &EvalError{Language: JQ, Source: p.src, Err: e}
	}
	return true, &EvalError{Language: JQ, Source: p.src, Err: errors.New(errorText(e))}
}

// maxErrorText bounds the message of a jq runtime error, in bytes.
const maxErrorText = 512

// errorText renders a gojq error in at most about maxErrorText bytes. The value of error(v) is
// previewed without encoding it whole (gojq's own message encodes all of v, which for a shared
// value can be exponentially large); other gojq messages preview their values already.
func errorText(e error) string {
	var ve gojq.ValueError
	if errors.As(e, &ve) {
		prefix := "error: "
		var halt *gojq.HaltError
		if errors.As(e, &halt) {
			prefix = "halt_error: "
		}
		switch v := ve.Value().(type) {
		case string:
			return prefix + truncate(v, maxErrorText)
		case nil:
			return prefix + "null (null)"
		default:
			return prefix + gojq.Preview(v)
		}
	}
	return truncate(e.Error(), maxErrorText)
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("... (%d bytes)", len(s))
}

// jqValue normalizes a map for gojq (unless the caller did); a nil map is jq null.
func jqValue(m map[string]any, normalized bool) any {
	if m == nil {
		return nil
	}
	if normalized {
		return m
	}
	return Normalize(m)
}

// CheckInput returns a *LimitError of kind LimitInput when v (a workload object, a pod or
// variables, normalized) is larger than l.MaxInputSize size units, about bytes of JSON. Callers
// that pass Input.Normalized check their input with it once; Eval checks other inputs itself.
func CheckInput(v any, l Limits) error {
	l, err := l.withDefaults()
	if err != nil {
		return err
	}
	return checkInputSize("", "", l, v, nil)
}

// checkInputSize refuses an input document or variables larger than l.MaxInputSize, before any
// evaluation (LimitInput).
func checkInputSize(lang Language, src string, l Limits, doc, vars any) error {
	for _, v := range []any{doc, vars} {
		if n := valueSize(v, int64(l.MaxInputSize)); n > int64(l.MaxInputSize) {
			detail := fmt.Sprintf("input too large: more than %d size units (about bytes of JSON)", l.MaxInputSize)
			return &LimitError{Language: lang, Source: src, Kind: LimitInput, Detail: detail}
		}
	}
	return nil
}

// SizeOf returns the size of v (a JSON-shaped value: a workload object) in size units, about
// bytes of JSON, measured up to limit: a value larger than limit gives a number above it, at a
// cost of O(limit). Callers bound what holding v costs (the plan gate's share of a build).
func SizeOf(v any, limit int64) int64 {
	return valueSize(v, limit)
}
