package expr

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNullSafeJQ(t *testing.T) {
	cases := []struct {
		src, want string
		obj       map[string]any
		result    []any
	}{
		// JobSet without replicas: the omitted count is 1.
		{".spec.replicatedJobs[] | .replicas * .template.spec.parallelism", ".spec.replicatedJobs[]? | (.replicas // 1) * (.template.spec.parallelism // 1)",
			map[string]any{"spec": map[string]any{"replicatedJobs": []any{map[string]any{"template": map[string]any{"spec": map[string]any{"parallelism": 4}}}}}}, []any{4}},
		// RayCluster without workerGroupSpecs: no instances.
		{".spec.workerGroupSpecs[].groupName", ".spec.workerGroupSpecs[]?.groupName", map[string]any{"spec": map[string]any{}}, nil},
		// A present 0 stays 0 (// keeps 0).
		{".a * .b", "(.a // 1) * (.b // 1)", map[string]any{"a": 0, "b": 3}, []any{0}},
		{".a - 1", "(.a // 0) - (1 // 0)", map[string]any{}, []any{-1}},
	}
	c, err := NewCompiler(Limits{})
	require.NoError(t, err)
	for _, tc := range cases {
		got, ok := NullSafeJQ(tc.src)
		require.True(t, ok, tc.src)
		assert.Equal(t, tc.want, got)
		p, err := c.Compile(JQ, got, Object, Read)
		require.NoError(t, err)
		orig, err := c.Compile(JQ, tc.src, Object, Read)
		require.NoError(t, err)
		_, origErr := orig.Eval(context.Background(), Input{Object: tc.obj})
		res, err := p.Eval(context.Background(), Input{Object: tc.obj})
		require.NoError(t, err, got)
		assert.Equal(t, len(tc.result), len(res), got)
		for i := range tc.result {
			n, err := AsInt64(res[i])
			require.NoError(t, err)
			w, _ := AsInt64(tc.result[i])
			assert.Equal(t, w, n, got)
		}
		if origErr != nil {
			assert.True(t, IsNullError(origErr), "%s: %v", tc.src, origErr)
		}
	}
	_, ok := NullSafeJQ(".a.b")
	assert.False(t, ok, "nothing to rewrite")
	_, ok = NullSafeJQ(".a |||")
	assert.False(t, ok, "does not parse")
}
