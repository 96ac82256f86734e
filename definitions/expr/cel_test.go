package expr

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCELEval(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	in := Input{Object: jobSet(t), Pod: pod(t), Variables: map[string]any{"size": 4, "role": "workers"}}
	tests := []struct {
		name    string
		src     string
		subject Subject
		want    []any
	}{
		{"optional default", `object.?spec.?replicas.orValue(1)`, Object, []any{1}},
		{"optional present", `object.spec.replicatedJobs[1].?replicas.orValue(1)`, Object, []any{2}},
		{"optional none is no result", `object.?spec.?missing`, Object, nil},
		{"optional.none", `optional.none()`, Object, nil},
		{"optional.of", `optional.of(3)`, Object, []any{3}},
		{"null", `null`, Object, []any{nil}},
		{"list of names", `object.spec.replicatedJobs.map(j, j.name)`, Object, []any{[]any{"leader", "workers"}}},
		{"list of pod counts", `object.spec.replicatedJobs.map(j, j.?replicas.orValue(1) * j.template.spec.parallelism)`, Object, []any{[]any{1, 8}}},
		{"native list", `object.status.replicatedJobsStatus.map(s, s.ready)`, Object, []any{[]any{1, 2}}},
		{"sub-object", `object.spec.startupPolicy`, Object, []any{map[string]any{"startupPolicyOrder": "InOrder"}}},
		{"map literal", `{'name': object.metadata.name, 'n': 1u, 'f': 2.5}`, Object, []any{map[string]any{"name": "train", "n": 1, "f": 2.5}}},
		{"int and double compare", `object.metadata.generation == 3.0`, Object, []any{true}},
		{"exists", `object.status.conditions.exists(c, c.type == 'StartupPolicyCompleted' && c.status == 'True')`, Object, []any{true}},
		{"pod label", `pod.metadata.labels['x']`, Pod, []any{"y"}},
		{"pod label with optional", `pod.metadata.labels[?'missing'].orValue('none')`, Pod, []any{"none"}},
		{"pod sees the object", `pod.metadata.labels['jobset.sigs.k8s.io/jobset-name'] == object.metadata.name`, Pod, []any{true}},
		{"variables field", `variables.size`, Object, []any{4}},
		{"variables map size", `variables.size()`, Object, []any{2}},
		{"variables in pod expressions", `pod.metadata.labels['jobset.sigs.k8s.io/replicatedjob-name'] == variables.role`, Pod, []any{true}},
		{"strings ext", `object.metadata.name.upperAscii() + '-' + 'a,b'.split(',')[1]`, Object, []any{"TRAIN-b"}},
		{"lists ext", `[3, 1, 2].sort()`, Object, []any{[]any{1, 2, 3}}},
		{"lists.range", `lists.range(3)`, Object, []any{[]any{0, 1, 2}}},
		{"math ext", `math.greatest(1, 5, 3)`, Object, []any{5}},
		{"sets ext", `sets.contains(['leader', 'workers'], object.spec.replicatedJobs.map(j, j.name))`, Object, []any{true}},
		{"bytes", `b'abc'`, Object, []any{"YWJj"}},
		{"duration", `duration('1m30s')`, Object, []any{"90s"}},
		{"timestamp", `timestamp('2024-01-02T03:04:05Z')`, Object, []any{"2024-01-02T03:04:05Z"}},
		{"nested optional", `[optional.of(1), optional.none()]`, Object, []any{[]any{1, nil}}},
		{"numeric string", `int(object.metadata.annotations['autoscaling.knative.dev/min-scale'])`, Object, []any{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := evalExpr(t, c, CEL, tt.src, tt.subject, Read, in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestCELNilInputs(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	got, err := evalExpr(t, c, CEL, `object == null && variables.size() == 0`, Object, Read, Input{})
	require.NoError(t, err)
	assert.Equal(t, []any{true}, got)

	got, err = evalExpr(t, c, CEL, `pod == null`, Pod, Read, Input{Object: jobSet(t)})
	require.NoError(t, err)
	assert.Equal(t, []any{true}, got)
}

func TestCELCompileErrors(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	tests := []struct {
		src     string
		subject Subject
		want    string
	}{
		{`object.spec.`, Object, "Syntax error"},
		{`object.spec.`, Object, "1:13"},
		{`pod.metadata.name`, Object, "undeclared reference to 'pod'"},
		{`nope.x`, Pod, "undeclared reference to 'nope'"},
		{`object.name.noSuchFunction()`, Object, "noSuchFunction"},
		{`1 + 'a'`, Object, "no matching overload"},
		{`'x'.matches('[')`, Object, "missing closing ]"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			p, err := c.Compile(CEL, tt.src, tt.subject, Read)
			assert.Nil(t, p)
			var ce *CompileError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, CEL, ce.Language)
			assert.Contains(t, ce.Reason, tt.want)
		})
	}
}

func TestCELRuntimeErrors(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	in := Input{Object: jobSet(t)}
	tests := []struct{ src, want string }{
		{`object.spec.replicas`, "no such key: replicas"},
		{`object.metadata.name + 1`, "no such overload"},
		{`{1: 'a'}`, "map key 1 is a int"},
		{`int`, "cannot convert a CEL type"},
		{`18446744073709551615u`, "does not fit in an int"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			got, err := evalExpr(t, c, CEL, tt.src, Object, Read, in)
			assert.Nil(t, got)
			var ee *EvalError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, CEL, ee.Language)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestCELCostLimit(t *testing.T) {
	// A long timeout, so that the cost limit stops these even on a slow (race-enabled) build.
	const timeout = time.Minute
	tests := []struct {
		name   string
		limits Limits
		src    string
	}{
		{"small limit", Limits{CELCostLimit: 1000}, `object.spec.replicatedJobs.map(j, lists.range(100).map(i, i * 2)).size()`},
		{"default limit", Limits{}, `lists.range(2000).map(i, lists.range(2000).map(j, i * j)).size()`},
		{"huge range refused before allocating", Limits{}, `lists.range(1000000000000).size()`},
		{"huge range from input", Limits{}, `lists.range(object.metadata.generation * 1000000000000).size()`},
		{"string growth", Limits{CELCostLimit: 10000}, `lists.range(20).map(i, object.metadata.name).join('') + lists.range(5000).map(i, 'x').join('')`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.limits.Timeout = timeout
			c := newTestCompiler(t, tt.limits)
			got, err := evalExpr(t, c, CEL, tt.src, Object, Read, Input{Object: jobSet(t)})
			assert.Nil(t, got)
			var le *LimitError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, LimitCost, le.Kind)
			assert.Contains(t, err.Error(), "cost limit")
		})
	}
}

func TestCELTimeout(t *testing.T) {
	c := newTestCompiler(t, Limits{Timeout: 50 * time.Millisecond, CELCostLimit: 1 << 60})
	src := `lists.range(3000).map(i, lists.range(3000).filter(j, j == i).size()).size()`
	start := time.Now()
	got, err := evalExpr(t, c, CEL, src, Object, Read, Input{})
	assert.Less(t, time.Since(start), time.Second, "an interrupted inner comprehension stops the outer one")
	assert.Nil(t, got)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, LimitTimeout, le.Kind)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	p, err := c.Compile(CEL, src, Object, Read)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.Eval(ctx, Input{})
	var ee *EvalError
	require.ErrorAs(t, err, &ee, "the caller's cancellation is not a limit")
	assert.ErrorIs(t, err, context.Canceled)
}
