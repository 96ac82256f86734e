package expr

import (
	"fmt"
	"time"
)

// CompileError reports an expression that could not be compiled: a parse or type-check error, or
// a construct the upstream Workload Map rules forbid (see Compiler.Compile).
type CompileError struct {
	// Language is the expression's language.
	Language Language
	// Source is the expression text as given.
	Source string
	// Reason says what is wrong: the forbidden construct by name, or the parse error with its
	// position (jq: byte offset; CEL: line and column).
	Reason string
}

// Error renders `jq expression ".x": <reason>`.
func (e *CompileError) Error() string {
	return fmt.Sprintf("%s expression %s: %s", e.Language, quoteSource(e.Source), e.Reason)
}

// EvalError reports a runtime failure of a compiled expression: a jq error (including error/1
// and halt_error), a CEL error such as a missing key or a type mismatch, a recovered panic, or
// the cancellation of the caller's context (errors.Is(err, context.Canceled) holds then).
type EvalError struct {
	// Language is the expression's language.
	Language Language
	// Source is the expression text.
	Source string
	// Err is the underlying error.
	Err error
}

// Error renders `cel expression "x": evaluation failed: <cause>`.
func (e *EvalError) Error() string {
	return fmt.Sprintf("%s expression %s: evaluation failed: %v", e.Language, quoteSource(e.Source), e.Err)
}

// Unwrap returns the underlying error.
func (e *EvalError) Unwrap() error { return e.Err }

// LimitKind says which bound an evaluation exceeded.
type LimitKind int

// The bounds of an evaluation (see Limits).
const (
	// LimitTimeout: the evaluation ran longer than Limits.Timeout, or the caller's context
	// deadline passed first.
	LimitTimeout LimitKind = iota + 1
	// LimitResults: a jq expression produced more than Limits.MaxResults results.
	LimitResults
	// LimitCost: a CEL expression exceeded Limits.CELCostLimit.
	LimitCost
	// LimitSteps: a jq expression ran more than Limits.MaxSteps steps.
	LimitSteps
	// LimitSize: a builtin or operator call was refused before it ran, because its input,
	// arguments or result would exceed Limits.MaxValueSize or a regex bound.
	LimitSize
	// LimitInput: the input document or the variables exceed Limits.MaxInputSize.
	LimitInput
	// LimitBudget: a jq evaluation produced, or a builtin was about to produce, more than
	// Limits.MaxProducedBytes or Limits.MaxProducedElements.
	LimitBudget
)

// String names the kind: "timeout", "results", "cost", "steps", "size", "input" or "budget".
func (k LimitKind) String() string {
	switch k {
	case LimitSteps:
		return "steps"
	case LimitSize:
		return "size"
	case LimitInput:
		return "input"
	case LimitBudget:
		return "budget"
	case LimitTimeout:
		return "timeout"
	case LimitResults:
		return "results"
	case LimitCost:
		return "cost"
	default:
		return fmt.Sprintf("LimitKind(%d)", int(k))
	}
}

// LimitError reports an evaluation stopped because it exceeded one of its Limits. No partial
// results are returned with it.
type LimitError struct {
	// Language is the expression's language.
	Language Language
	// Source is the expression text.
	Source string
	// Kind is the bound that was exceeded.
	Kind LimitKind
	// Detail describes the bound, e.g. "deadline exceeded (timeout 1s)" or "more than 1000 results".
	Detail string
	// Err is the underlying error when there is one (context.DeadlineExceeded for timeouts).
	Err error
}

// Error renders `jq expression ".[]": limit exceeded: more than 1000 results`.
func (e *LimitError) Error() string {
	if e.Source == "" && e.Language == "" {
		return "limit exceeded: " + e.Detail
	}
	return fmt.Sprintf("%s expression %s: limit exceeded: %s", e.Language, quoteSource(e.Source), e.Detail)
}

// Unwrap returns the underlying error, if any.
func (e *LimitError) Unwrap() error { return e.Err }

func timeoutError(lang Language, src string, d time.Duration, err error) *LimitError {
	detail := fmt.Sprintf("deadline exceeded (timeout %s)", d)
	return &LimitError{Language: lang, Source: src, Kind: LimitTimeout, Detail: detail, Err: err}
}

// quoteSource quotes an expression for an error message, shortening very long ones.
func quoteSource(src string) string {
	const maxLen = 120
	if r := []rune(src); len(r) > maxLen {
		return fmt.Sprintf("%q...", string(r[:maxLen]))
	}
	return fmt.Sprintf("%q", src)
}
