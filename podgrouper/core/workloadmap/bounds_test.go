package workloadmap

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/podgrouper/core/defaultgrouper"
)

// hostileGrouper is a grouper with the catalog and the hostile definitions
// (definitions/testdata/hostile), under the default limits except a one-minute timeout, so that
// only a bound, never the timeout, can stop a hostile plan on a loaded machine.
func hostileGrouper(t *testing.T) *Grouper {
	t.Helper()
	c, err := expr.NewCompiler(expr.Limits{Timeout: time.Minute})
	require.NoError(t, err)
	reg := definitions.NewRegistry(c)
	require.NoError(t, catalog.Register(reg))
	defs, err := definitions.LoadPaths([]string{"../../../definitions/testdata/hostile/definitions.yaml"}, definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	require.NoError(t, err)
	reg.SetSource(definitions.SourceFile, defs)
	require.Empty(t, reg.Problems())
	return &Grouper{Registry: reg, Defaults: &defaultgrouper.Grouper{}, PlanTimeout: 5 * time.Minute}
}

// hostileWorkload is a workload of a hostile kind whose .spec.text is 300 KB of "a."
// (150,000 dot-separated words) written by its author.
func hostileWorkload(kind, uid string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "hostile.gangmap.io/v1", "kind": kind,
		"metadata": map[string]any{"name": "w", "namespace": "team-a", "uid": uid, "resourceVersion": "7"},
		"spec": map[string]any{
			"text":     strings.Repeat("a.", 150_000),
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "x"}}}},
		},
	}}
}

// TestPlanBoundsPerBuiltinClass: in the grouper, each hostile definition's plan fails by the
// bound of its class (a *LimitError of kind size, or a short error text), never by the timeout.
func TestPlanBoundsPerBuiltinClass(t *testing.T) {
	g := hostileGrouper(t)
	for _, kind := range []string{"Regex", "Repeat", "Explode", "ErrorText", "CelGrowth"} {
		t.Run(kind, func(t *testing.T) {
			_, _, err := g.Plan(context.Background(), hostileWorkload(kind, "uid-"+kind))
			require.Error(t, err)
			assert.Less(t, len(err.Error()), 2048, "a short message: %.300s", err)
			var le *expr.LimitError
			if kind == "ErrorText" {
				assert.False(t, errors.As(err, &le), "%v", err)
				assert.Contains(t, err.Error(), "error: a.a.a.")
				return
			}
			require.ErrorAs(t, err, &le)
			assert.Equal(t, expr.LimitSize, le.Kind, "%v", err)
		})
	}
}

// TestPlanSharedAndFailureCached: many pods of one hostile workload version asking at once
// cause one plan build (single flight), later asks are answered from the cached failure, and a
// new resourceVersion builds again.
func TestPlanSharedAndFailureCached(t *testing.T) {
	g := hostileGrouper(t)
	w := hostileWorkload("Regex", "uid-shared")
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Go(func() { _, _, errs[i] = g.Plan(context.Background(), w) })
	}
	wg.Wait()
	for _, err := range errs {
		var le *expr.LimitError
		require.ErrorAs(t, err, &le)
	}
	assert.Equal(t, int64(1), g.builds.Load(), "one build for 20 concurrent asks")
	_, _, err := g.Plan(context.Background(), w)
	require.Error(t, err)
	assert.Equal(t, int64(1), g.builds.Load(), "the failure is cached for the workload version")

	w2 := w.DeepCopy()
	w2.SetResourceVersion("8")
	_, _, err = g.Plan(context.Background(), w2)
	require.Error(t, err)
	assert.Equal(t, int64(2), g.builds.Load(), "a new resourceVersion is planned again")
	g.Forget("team-a", types.UID("uid-shared"))
}

// TestPlanCallerDeadlineLeavesBuildRunning: a caller that stops waiting (the webhook at its
// decision deadline) gets its context's error at once; the build goes on, is cached, and the
// next caller (the controller's retry) gets its result without building again.
func TestPlanCallerDeadlineLeavesBuildRunning(t *testing.T) {
	g := hostileGrouper(t)
	w := hostileWorkload("Regex", "uid-deadline")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := g.Plan(ctx, w)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "still being built")
	require.Eventually(t, func() bool {
		_, _, err := g.Plan(context.Background(), w)
		var le *expr.LimitError
		return errors.As(err, &le)
	}, time.Minute, 10*time.Millisecond)
	assert.Equal(t, int64(1), g.builds.Load())
}
