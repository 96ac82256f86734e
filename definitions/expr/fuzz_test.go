package expr

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fuzzLimits keep fuzzed evaluations short.
var fuzzLimits = Limits{Timeout: 50 * time.Millisecond, MaxResults: 100, CELCostLimit: 100_000}

var jqSeeds = []string{
	`.spec.replicatedJobs[].name`,
	`.spec.replicatedJobs[] | (.replicas // 1)`,
	`.spec.minAvailable // "all"`,
	`[.spec.replicatedJobs[] | {(.name): (.replicas // 1)}] | add`,
	`"\(.metadata.namespace)/\(.metadata.name)"`,
	`reduce .spec.replicatedJobs[] as $j (0; . + ($j.replicas // 1))`,
	`if .a then [..] else 1 end`,
	`. as {(range(1) | tostring): $v} | $v`,
	`.spec.suspend = true`,
	`0 | until(. > 1e12; . + 1)`,
	`$variables.size`,
	`.spec[`,
}

var celSeeds = []string{
	`object.?spec.?replicas.orValue(1)`,
	`object.spec.replicatedJobs.map(j, j.name)`,
	`pod.metadata.labels['x']`,
	`variables.size`,
	`optional.none()`,
	`lists.range(2000).map(i, lists.range(2000).map(j, i * j)).size()`,
	`{1: 'a'}`,
	`object.spec.`,
}

// checkCompileErr fails unless err is nil or a *CompileError.
func checkCompileErr(t *testing.T, src string, err error) {
	var ce *CompileError
	if err != nil && !errors.As(err, &ce) {
		t.Fatalf("compile %q: untyped error %T: %v", src, err, err)
	}
}

// checkEvalErr fails unless err is nil, a *LimitError or an *EvalError.
func checkEvalErr(t *testing.T, src string, err error) {
	var le *LimitError
	var ee *EvalError
	if err != nil && !errors.As(err, &le) && !errors.As(err, &ee) {
		t.Fatalf("eval %q: untyped error %T: %v", src, err, err)
	}
}

func FuzzCompileJQ(f *testing.F) {
	for _, s := range jqSeeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	c := newTestCompiler(f, fuzzLimits)
	f.Fuzz(func(t *testing.T, src string, action bool) {
		mode := Read
		if action {
			mode = Action
		}
		p, err := c.Compile(JQ, src, Object, mode)
		checkCompileErr(t, src, err)
		if err == nil && p.Source() != src {
			t.Fatalf("source %q changed to %q", src, p.Source())
		}
	})
}

func FuzzEvalJQ(f *testing.F) {
	for _, s := range jqSeeds {
		f.Add(s)
	}
	c := newTestCompiler(f, fuzzLimits)
	in := Input{Object: jobSet(f), Pod: pod(f), Variables: map[string]any{"size": 3}}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := c.Compile(JQ, src, Object, Action)
		checkCompileErr(t, src, err)
		if err != nil {
			return
		}
		out, err := p.Eval(context.Background(), in)
		checkEvalErr(t, src, err)
		if len(out) > fuzzLimits.MaxResults {
			t.Fatalf("eval %q: %d results over the limit", src, len(out))
		}
	})
}

func FuzzCompileCEL(f *testing.F) {
	for _, s := range celSeeds {
		f.Add(s)
	}
	c := newTestCompiler(f, fuzzLimits)
	in := Input{Object: jobSet(f), Pod: pod(f), Variables: map[string]any{"size": 3}}
	f.Fuzz(func(t *testing.T, src string) {
		for _, subject := range []Subject{Object, Pod} {
			p, err := c.Compile(CEL, src, subject, Read)
			checkCompileErr(t, src, err)
			if err != nil {
				continue
			}
			out, err := p.Eval(context.Background(), in)
			checkEvalErr(t, src, err)
			if err == nil && len(out) > 1 {
				t.Fatalf("eval %q: %d results", src, len(out))
			}
		}
	})
}
