package expr

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

// celInterruptCheckFrequency is how many comprehension iterations run between two checks of the
// evaluation context.
const celInterruptCheckFrequency = 100

// The CEL variable names.
const (
	celObject    = "object"
	celPod       = "pod"
	celVariables = "variables"
)

// newCELEnv builds the CEL environment for subject: `object` (dyn) and `variables`
// (map(string, dyn)) always, `pod` (dyn) for Pod; optional syntax; the strings, lists, math and
// sets extensions; heterogeneous numeric comparisons (1 == 1.0), as Kubernetes enables.
func newCELEnv(subject Subject, l Limits) (*cel.Env, error) {
	bounded, err := boundedStrings(l.MaxValueSize)
	if err != nil {
		return nil, err
	}
	opts := []cel.EnvOption{
		cel.Variable(celObject, cel.DynType),
		cel.Variable(celVariables, cel.MapType(cel.StringType, cel.DynType)),
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		cel.DefaultUTCTimeZone(true),
		ext.Strings(),
		ext.Lists(),
		ext.Math(),
		ext.Sets(),
		boundedListsRange(l.CELCostLimit),
		bounded,
	}
	if subject == Pod {
		opts = append(opts, cel.Variable(celPod, cel.DynType))
	}
	return cel.NewEnv(opts...)
}

// boundedListsRange redefines the lists extension's lists.range(n) so that it refuses, before
// allocating, a list longer than the cost limit. ext.Lists charges lists.range only after building
// the list, so lists.range(1 << 40) would otherwise exhaust memory without being interruptible.
// cel-go lets a later declaration of the same overload replace the binding.
func boundedListsRange(limit uint64) cel.EnvOption {
	return cel.Function("lists.range",
		cel.Overload("lists_range", []*cel.Type{cel.IntType}, cel.ListType(cel.IntType),
			cel.UnaryBinding(func(arg ref.Val) ref.Val {
				n, ok := arg.(types.Int)
				if !ok {
					return types.NoSuchOverloadErr()
				}
				if n > 0 && uint64(n) > limit {
					return types.WrapErr(&rangeLimitError{n: int64(n), limit: limit})
				}
				elems := make([]ref.Val, max(int64(n), 0))
				for i := range elems {
					elems[i] = types.Int(i)
				}
				return types.DefaultTypeAdapter.NativeToValue(elems)
			})))
}

// rangeLimitError is a lists.range call refused by boundedListsRange.
type rangeLimitError struct {
	n     int64
	limit uint64
}

func (e *rangeLimitError) Error() string {
	return fmt.Sprintf("lists.range(%d) would exceed the cost limit %d", e.n, e.limit)
}

// celProgram is a compiled CEL expression.
type celProgram struct {
	src     string
	subject Subject
	prg     cel.Program
	limits  Limits
}

// compileCEL parses and type-checks src in env and plans it with the cost limit.
func compileCEL(env *cel.Env, src string, subject Subject, l Limits) (Program, error) {
	ast, iss := env.Compile(src)
	if err := iss.Err(); err != nil {
		return nil, &CompileError{Language: CEL, Source: src, Reason: err.Error()}
	}
	prg, err := env.Program(ast,
		cel.CostTracking(newProducedCost(l)),
		cel.CostLimit(l.CELCostLimit),
		cel.InterruptCheckFrequency(celInterruptCheckFrequency),
		cel.EvalOptions(cel.OptOptimize),
	)
	if err != nil {
		return nil, &CompileError{Language: CEL, Source: src, Reason: err.Error()}
	}
	return &celProgram{src: src, subject: subject, prg: prg, limits: l}, nil
}

// Language implements Program.
func (p *celProgram) Language() Language { return CEL }

// Source implements Program.
func (p *celProgram) Source() string { return p.src }

// Eval implements Program.
func (p *celProgram) Eval(ctx context.Context, in Input) (out []any, err error) {
	if !in.Normalized {
		if err := checkInputSize(CEL, p.src, p.limits, in.Object, in.Variables); err != nil {
			return nil, err
		}
		if err := checkInputSize(CEL, p.src, p.limits, in.Pod, nil); err != nil {
			return nil, err
		}
	}
	ctx, cancel := withTimeout(ctx, p.limits.Timeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &EvalError{Language: CEL, Source: p.src, Err: fmt.Errorf("internal error: %v", r)}
		}
	}()
	val, _, err := p.prg.ContextEval(ctx, newCELActivation(in, p.subject))
	if err != nil {
		return nil, p.failure(ctx, err)
	}
	if opt, ok := val.(*types.Optional); ok && !opt.HasValue() {
		return nil, nil
	}
	v, err := celToJSON(val)
	if err != nil {
		return nil, &EvalError{Language: CEL, Source: p.src, Err: err}
	}
	return []any{v}, nil
}

// failure classifies an evaluation error: the cost limit, lists.range's bound, a refused
// string-growing call and the timeout are *LimitError; the caller's cancellation and everything else are *EvalError. cel-go reports an
// interrupted comprehension as a plain "operation interrupted" error, so a done context decides.
func (p *celProgram) failure(ctx context.Context, err error) error {
	var cancelled interpreter.EvalCancelledError
	var rangeErr *rangeLimitError
	var size *sizeLimitError
	switch {
	case errors.As(err, &size):
		return &LimitError{Language: CEL, Source: p.src, Kind: LimitSize, Detail: size.Error(), Err: err}
	case errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded:
		return p.costError(err)
	case errors.As(err, &rangeErr):
		return p.costError(err)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return timeoutError(CEL, p.src, p.limits.Timeout, fmt.Errorf("%w: %w", err, ctx.Err()))
	case ctx.Err() != nil:
		err = fmt.Errorf("%w: %w", err, ctx.Err())
	}
	return &EvalError{Language: CEL, Source: p.src, Err: err}
}

func (p *celProgram) costError(err error) *LimitError {
	detail := fmt.Sprintf("cost limit %d exceeded", p.limits.CELCostLimit)
	return &LimitError{Language: CEL, Source: p.src, Kind: LimitCost, Detail: detail, Err: err}
}
