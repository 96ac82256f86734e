package expr

import (
	"context"
	"errors"
	"fmt"

	"github.com/itchyny/gojq"
)

// jqVariables are the variable names a jq program is compiled with, in Run's argument order.
var jqVariables = []string{"$variables"}

// jqProgram is a compiled jq expression.
type jqProgram struct {
	src     string
	subject Subject
	code    *gojq.Code
	limits  Limits
}

// compileJQ parses src, checks it against the upstream rules for mode, and compiles it.
func compileJQ(src string, subject Subject, mode Mode, l Limits) (Program, error) {
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, &CompileError{Language: JQ, Source: src, Reason: jqParseReason(src, err)}
	}
	if reason := checkJQ(q, mode); reason != "" {
		return nil, &CompileError{Language: JQ, Source: src, Reason: reason}
	}
	// No environ loader: $ENV and env are empty objects, so expressions cannot read the
	// controller's environment. No input iterator: input and inputs do not compile.
	code, err := gojq.Compile(q, gojq.WithVariables(jqVariables))
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
func (p *jqProgram) Eval(ctx context.Context, in Input) (out []any, err error) {
	doc := in.Object
	if p.subject == Pod {
		doc = in.Pod
	}
	input, vars := jqValue(doc, in.Normalized), jqValue(in.Variables, in.Normalized)
	ctx, cancel := withTimeout(ctx, p.limits.Timeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &EvalError{Language: JQ, Source: p.src, Err: fmt.Errorf("internal error: %v", r)}
		}
	}()
	iter := p.code.RunWithContext(ctx, input, vars)
	for {
		v, ok := iter.Next()
		if !ok {
			return out, nil
		}
		if e, isErr := v.(error); isErr {
			if stop, err := p.failure(e); stop {
				return nil, err
			}
			return out, nil // halt: end of output
		}
		if len(out) == p.limits.MaxResults {
			detail := fmt.Sprintf("more than %d results", p.limits.MaxResults)
			return nil, &LimitError{Language: JQ, Source: p.src, Kind: LimitResults, Detail: detail}
		}
		out = append(out, v)
	}
}

// failure classifies an error emitted by gojq. It returns false for `halt`, which ends the
// output without an error (as the jq CLI exits 0), and otherwise true with the error to return:
// a *LimitError for the timeout, an *EvalError for everything else (the caller's cancellation
// included).
func (p *jqProgram) failure(e error) (bool, error) {
	var halt *gojq.HaltError
	if errors.As(e, &halt) && halt.Value() == nil {
		return false, nil
	}
	if errors.Is(e, context.DeadlineExceeded) {
		return true, timeoutError(JQ, p.src, p.limits.Timeout, e)
	}
	return true, &EvalError{Language: JQ, Source: p.src, Err: e}
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
