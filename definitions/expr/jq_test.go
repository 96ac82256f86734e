package expr

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJQEvalOnJobSet(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	in := Input{Object: jobSet(t), Pod: pod(t), Variables: map[string]any{"size": 3}}
	tests := []struct {
		name    string
		src     string
		subject Subject
		want    []any
	}{
		{"instance ids", `.spec.replicatedJobs[].name`, Object, []any{"leader", "workers"}},
		{"replicas with default", `.spec.replicatedJobs[] | (.replicas // 1)`, Object, []any{1, 2}},
		{"pods per job", `.spec.replicatedJobs[] | (.replicas // 1) * .template.spec.parallelism`, Object, []any{1, 8}},
		{"alternative on a missing path", `.spec.minAvailable // "all"`, Object, []any{"all"}},
		{"alternative on false", `.spec.suspend // true`, Object, []any{true}},
		{"missing path is null", `.spec.nothing.deeper`, Object, []any{nil}},
		{"empty gives no result", `empty`, Object, nil},
		{"select gives no result", `.spec.replicatedJobs[] | select(.name == "none")`, Object, nil},
		{"pod template", `.spec.replicatedJobs[0].template.spec.template.spec.restartPolicy`, Object, []any{"Never"}},
		{"float quantity", `.spec.replicatedJobs[1].template.spec.template.spec.containers[0].resources.limits.cpu`, Object, []any{32.5}},
		{"annotation string", `.metadata.annotations["autoscaling.knative.dev/min-scale"]`, Object, []any{"2"}},
		{"generation is int", `.metadata.generation + 1`, Object, []any{4}},
		{"status condition", `.status.conditions[] | select(.type == "StartupPolicyCompleted") | .status == "True"`, Object, []any{true}},
		{"ready sum", `[.status.replicatedJobsStatus[].ready] | add`, Object, []any{3}},
		{"object construction", `[.spec.replicatedJobs[] | {(.name): (.replicas // 1)}] | add`, Object, []any{map[string]any{"leader": 1, "workers": 2}}},
		{"string interpolation", `"\(.metadata.namespace)/\(.metadata.name)"`, Object, []any{"ml/train"}},
		{"reduce", `reduce .spec.replicatedJobs[] as $j (0; . + ($j.replicas // 1))`, Object, []any{3}},
		{"variables", `$variables.size`, Object, []any{3}},
		{"pod label", `.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"]`, Pod, []any{"workers"}},
		{"pod index as number", `.metadata.labels["jobset.sigs.k8s.io/job-index"] | tonumber`, Pod, []any{1}},
		{"env is empty", `$ENV`, Object, []any{map[string]any{}}},
		{"halt ends the output", `1, halt, 2`, Object, []any{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := evalExpr(t, c, JQ, tt.src, tt.subject, Read, in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestJQVariablesNil(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	got, err := evalExpr(t, c, JQ, `$variables`, Object, Read, Input{Object: jobSet(t)})
	require.NoError(t, err)
	assert.Equal(t, []any{nil}, got)

	got, err = evalExpr(t, c, JQ, `.`, Pod, Read, Input{Object: jobSet(t)})
	require.NoError(t, err)
	assert.Equal(t, []any{nil}, got, "a nil pod is null")
}

func TestJQNormalizesInput(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	raw := unstructuredFrom(t, jobSetJSON).Object // int64 numbers, as client-go gives them
	got, err := evalExpr(t, c, JQ, `.metadata.generation * 2, (.metadata.generation | type)`, Object, Read, Input{Object: raw})
	require.NoError(t, err)
	assert.Equal(t, []any{6, "number"}, got)
	assert.Equal(t, int64(3), raw["metadata"].(map[string]any)["generation"], "input left unchanged")
}

func TestJQActionAssigns(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	obj := jobSet(t)
	got, err := evalExpr(t, c, JQ, `.spec.suspend = true`, Object, Action, Input{Object: obj})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, true, got[0].(map[string]any)["spec"].(map[string]any)["suspend"])
	assert.Equal(t, false, obj["spec"].(map[string]any)["suspend"], "input left unchanged")

	got, err = evalExpr(t, c, JQ, `.spec.replicatedJobs[].replicas //= 1 | [.spec.replicatedJobs[].replicas]`, Object, Action, Input{Object: obj})
	require.NoError(t, err)
	assert.Equal(t, []any{[]any{1, 2}}, got)
}

func TestJQRuntimeErrors(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	in := Input{Object: jobSet(t)}
	tests := []struct{ src, want string }{
		{`.spec.replicatedJobs + 1`, "cannot add"},
		{`error("boom")`, "boom"},
		{`.metadata.name | tonumber`, "tonumber"},
		{`halt_error`, "halt"},
		{`.spec.replicatedJobs[] | .replicas * 2`, "cannot multiply"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			got, err := evalExpr(t, c, JQ, tt.src, Object, Read, in)
			assert.Nil(t, got)
			var ee *EvalError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, JQ, ee.Language)
			assert.Equal(t, tt.src, ee.Source)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestJQRecoversPanics(t *testing.T) {
	// Normalize leaves unknown types alone; gojq panics on them when asked their type.
	c := newTestCompiler(t, Limits{})
	in := Input{Object: map[string]any{"x": struct{ A int }{1}}}
	_, err := evalExpr(t, c, JQ, `.x | type`, Object, Read, in)
	var ee *EvalError
	require.ErrorAs(t, err, &ee)
	assert.Contains(t, err.Error(), "internal error")
}

func TestJQTimeout(t *testing.T) {
	c := newTestCompiler(t, Limits{Timeout: 100 * time.Millisecond})
	for _, src := range []string{
		`0 | until(. > 1e12; . + 1)`,
		`0 | until(false; .)`,
		`[.spec.replicatedJobs[] | 0 | until(false; .)] | length`,
	} {
		t.Run(src, func(t *testing.T) {
			start := time.Now()
			got, err := evalExpr(t, c, JQ, src, Object, Read, Input{Object: jobSet(t)})
			assert.Less(t, time.Since(start), 3*time.Second)
			assert.Nil(t, got)
			var le *LimitError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, LimitTimeout, le.Kind)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Contains(t, err.Error(), "timeout 100ms")
		})
	}
}

func TestJQCallerCancellation(t *testing.T) {
	c := newTestCompiler(t, Limits{Timeout: time.Minute})
	p, err := c.Compile(JQ, `0 | until(. > 1e12; . + 1)`, Object, Read)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = p.Eval(ctx, Input{})
	var ee *EvalError
	require.ErrorAs(t, err, &ee)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestJQMaxResults(t *testing.T) {
	items := make([]any, 5000)
	for i := range items {
		items[i] = map[string]any{"name": fmt.Sprintf("item-%d", i)}
	}
	in := Input{Object: map[string]any{"items": items}}
	c := newTestCompiler(t, Limits{MaxResults: 1000})

	got, err := evalExpr(t, c, JQ, `.items[].name`, Object, Read, in)
	assert.Nil(t, got)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, LimitResults, le.Kind)
	assert.Contains(t, err.Error(), "more than 1000 results")

	got, err = evalExpr(t, c, JQ, `limit(1000; .items[].name)`, Object, Read, in)
	require.NoError(t, err)
	assert.Len(t, got, 1000)

	got, err = evalExpr(t, c, JQ, `[.items[].name] | length`, Object, Read, in)
	require.NoError(t, err, "one result holding 5000 values is one result")
	assert.Equal(t, []any{5000}, got)
}

func TestConcurrentEval(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	jq, err := c.Compile(JQ, `.spec.replicatedJobs[] | (.replicas // 1)`, Object, Read)
	require.NoError(t, err)
	cel, err := c.Compile(CEL, `object.spec.replicatedJobs.map(j, j.?replicas.orValue(1))`, Object, Read)
	require.NoError(t, err)
	in := Input{Object: jobSet(t)}
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			p, want := jq, []any{1, 2}
			if i%2 == 1 {
				p, want = cel, []any{[]any{1, 2}}
			}
			got, err := p.Eval(context.Background(), in)
			if err == nil && !assert.ObjectsAreEqual(want, got) {
				err = fmt.Errorf("%s: got %v", p.Language(), got)
			}
			errs <- err
		}()
	}
	for range 16 {
		assert.NoError(t, <-errs)
	}
}
