package catalog_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
)

// regexBuiltins are jq's regular-expression builtins (name/arity).
var regexBuiltins = map[string]bool{
	"test/1": true, "test/2": true, "match/1": true, "match/2": true, "capture/1": true,
	"capture/2": true, "scan/1": true, "scan/2": true, "splits/1": true, "splits/2": true,
	"split/2": true, "sub/2": true, "sub/3": true, "gsub/2": true, "gsub/3": true,
}

// TestCatalogRunsNoRegex: no catalog expression that reads the workload object runs a regular
// expression over a string of unbounded length. Workload authors write those strings
// (AppWrapper's pod set paths, annotations, Milvus' image tag) at any length: no jq regex builtin
// at all, and a CEL matches() only in an expression that bounds its text's size() first (the
// Milvus version rule: 128 characters, an image tag's limit).
func TestCatalogRunsNoRegex(t *testing.T) {
	loaded, err := catalog.Load()
	require.NoError(t, err)
	for _, l := range loaded {
		for _, v := range l.Karta.Spec.Variables {
			if strings.Contains(v.Expression, ".matches(") {
				assert.Regexp(t, `^variables\.\w+\.size\(\) <= \d+ && `, v.Expression,
					"%s spec.variables[%s] runs matches() without bounding its text first", l.Karta.Metadata.Name, v.Name)
			}
		}
		for _, fe := range definitions.ObjectExpressions(l.Karta) {
			if fe.Expr.JQ == "" {
				assert.NotContains(t, fe.Expr.CEL, ".matches(", "%s %s", l.Karta.Metadata.Name, fe.Field)
				continue
			}
			fns, err := expr.JQFunctions(fe.Expr.JQ)
			require.NoError(t, err, "%s %s", l.Karta.Metadata.Name, fe.Field)
			for _, f := range fns {
				assert.False(t, regexBuiltins[f], "%s %s calls %s", l.Karta.Metadata.Name, fe.Field, f)
			}
		}
	}
}

// hostileAppWrapper is an AppWrapper whose author wrote a 300 KB pod set path of 150,000
// dot-separated words (the catalog used to scan it with a regex: 47 s of CPU per evaluation).
func hostileAppWrapper() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
		"metadata": map[string]any{"name": "hostile", "namespace": "team-a", "uid": "u-1", "resourceVersion": "1"},
		"spec": map[string]any{"components": []any{map[string]any{
			"podSets":  []any{map[string]any{"path": strings.Repeat("a.", 150_000), "replicas": int64(2)}},
			"template": map[string]any{"apiVersion": "batch/v1", "kind": "Job"},
		}}},
	}}
}

// TestHostileAppWrapperPlanIsBounded: planning the hostile AppWrapper ends by a bound or the
// definition's own error, never by the timeout (a minute here, so that only a bound can stop
// it on a loaded machine).
func TestHostileAppWrapperPlanIsBounded(t *testing.T) {
	compiler, err := expr.NewCompiler(expr.Limits{Timeout: time.Minute})
	require.NoError(t, err)
	r := definitions.NewRegistry(compiler)
	require.NoError(t, catalog.Register(r))
	obj := hostileAppWrapper()
	c := r.Lookup(obj.GroupVersionKind())
	require.NotNil(t, c)
	_, err = gang.Build(context.Background(), c, obj)
	require.Error(t, err, "the path names no pod template")
	t.Logf("%.300s", err)
	var le *expr.LimitError
	if assert.NotErrorIs(t, err, context.DeadlineExceeded) && errors.As(err, &le) {
		assert.NotEqual(t, expr.LimitTimeout, le.Kind, "%v", err)
	}
	assert.Less(t, len(err.Error()), 4096, "the error names the field, not the whole path")
}

// TestIssue28HostileWorkloadsRefusedFast holds the catalog to the budget of issue 28: an
// AppWrapper whose pod set path is 1.4 MB of dots (split(".") made 1.4 M strings, charged to
// nothing: 24 of them took the grouper's heap from 48 MB to 1,384 MB) and a NIMService on KServe
// whose min-scale annotation is a 1.4 M-digit number (tonumber's big.Int parse: 3.8 s of CPU in
// one step, past the 1 s timeout) are each refused by the evaluation budget, before the
// builtin runs, with an error that names the definition field and the bound. The timeout is a
// minute, so only a bound can stop them in time.
func TestIssue28HostileWorkloadsRefusedFast(t *testing.T) {
	compiler, err := expr.NewCompiler(expr.Limits{Timeout: time.Minute})
	require.NoError(t, err)
	r := definitions.NewRegistry(compiler)
	require.NoError(t, catalog.Register(r))
	appWrapper := hostileAppWrapper()
	podSet := appWrapper.Object["spec"].(map[string]any)["components"].([]any)[0].(map[string]any)["podSets"].([]any)[0].(map[string]any)
	podSet["path"] = strings.Repeat(".", 1_400_000)
	nim := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.nvidia.com/v1alpha1", "kind": "NIMService",
		"metadata": map[string]any{"name": "hostile", "namespace": "team-a", "uid": "u-2", "resourceVersion": "1"},
		"spec": map[string]any{
			"inferencePlatform": "kserve", "replicas": int64(1),
			"image":       map[string]any{"repository": "nvcr.io/nim/meta/llama3", "tag": "1.0"},
			"annotations": map[string]any{"autoscaling.knative.dev/min-scale": strings.Repeat("9", 1_400_000)},
		},
	}}
	tests := []struct {
		name   string
		obj    *unstructured.Unstructured
		kind   expr.LimitKind
		detail string
	}{
		{"AppWrapper 1.4 MB path", appWrapper, expr.LimitBudget, "split/1 refused"},
		{"NIMService 1.4 M-digit min-scale", nim, expr.LimitSize, "tonumber/0 refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := r.Lookup(tt.obj.GroupVersionKind())
			require.NotNil(t, c)
			start := time.Now()
			_, err := gang.Build(context.Background(), c, tt.obj)
			elapsed := time.Since(start)
			require.Error(t, err)
			var le *expr.LimitError
			require.ErrorAs(t, err, &le, "%.300s", err)
			assert.Equal(t, tt.kind, le.Kind, "%.300s", err)
			assert.Contains(t, err.Error(), tt.detail)
			assert.Contains(t, err.Error(), "Path", "the error names the definition field")
			assert.Less(t, len(err.Error()), 4096)
			assert.Less(t, elapsed, 10*time.Second, "refused by a bound, not after the work")
			t.Logf("%s in %s: %.400s", tt.name, elapsed, err)
		})
	}
}
