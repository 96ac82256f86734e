package definitions

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gangmap/gangmap/definitions/expr"
)

func TestMetadataOnly(t *testing.T) {
	cases := map[string]struct {
		e    Expr
		want bool
	}{
		"label":                    {JQExpr(`.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"]`), true},
		"label with select":        {JQExpr(`.metadata.labels["x"] | select(. != "0")`), true},
		"default":                  {JQExpr(`.metadata.labels["g"] // "0"`), true},
		"owner uid":                {JQExpr(`[.metadata.ownerReferences[]? | select(.kind=="Sandbox") | .uid][0]`), true},
		"spec":                     {JQExpr(`(.spec.containers[0].resources.limits["nvidia.com/gpu"] // 0) > 0`), false},
		"whole pod":                {JQExpr(`. | tostring`), false},
		"keys of the pod":          {JQExpr(`keys`), false},
		"iteration over the pod":   {JQExpr(`.[]`), false},
		"bound then spec":          {JQExpr(`. as $p | $p.spec`), false},
		"interpolation of the pod": {JQExpr(`"\(.spec.nodeName)"`), false},
		"labels bound":             {JQExpr(`.metadata.labels as $l | if $l["a"] then $l["a"] + "-" else "x" end | ltrimstr("y")`), true},
		"labels bound, body spec":  {JQExpr(`.metadata.labels as $l | .spec.nodeName`), false},
		"index by spec":            {JQExpr(`.metadata.labels[.spec.nodeName]`), false},
		"slice by spec":            {JQExpr(`.metadata.name[.spec.priority:]`), false},
		"if on spec":               {JQExpr(`if .spec.nodeName then "a" else "b" end`), false},
		"else reads the pod":       {JQExpr(`if .metadata.name then "a" else . end`), false},
		"grove clique id":          {JQExpr(`.metadata.labels as $l | (if $l["g"] then $l["g"] + "-" + $l["i"] + "-" else $l["p"] + "-" + $l["r"] + "-" end) as $prefix | $l["c"] | ltrimstr($prefix)`), true},
		"cel label":                {CELExpr(`pod.metadata.labels['x']`), true},
		"cel optional":             {CELExpr(`pod.?metadata.?labels['x'].orValue('0')`), true},
		"cel spec":                 {CELExpr(`pod.spec.nodeName`), false},
		"cel mixed":                {CELExpr(`pod.metadata.name + pod.spec.nodeName`), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, metadataOnly([]Expr{tc.e})) })
	}
}

// A plain label lookup runs without jq and answers exactly as jq does.
func TestLabelProgramMatchesJQ(t *testing.T) {
	c, err := expr.NewCompiler(expr.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	pods := []map[string]any{
		{"metadata": map[string]any{"labels": map[string]any{"a.b/c": "x", "plain": "y"}}},
		{"metadata": map[string]any{}},
		{},
	}
	for _, src := range []string{`.metadata.labels["a.b/c"]`, `.metadata.labels.plain`, ` .metadata.labels[ "missing" ] `} {
		fast := newLabelProgram(src)
		if fast == nil {
			t.Fatalf("%s: not recognised as a label lookup", src)
		}
		slow, err := c.Compile(expr.JQ, src, expr.Pod, expr.Read)
		if err != nil {
			t.Fatal(err)
		}
		for _, pod := range pods {
			want, err := slow.Eval(context.Background(), expr.Input{Pod: pod})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := fast.Eval(context.Background(), expr.Input{Pod: pod})
			assert.Equal(t, want, got, "%s on %v", src, pod)
		}
	}
	for _, src := range []string{`.metadata.labels["x"] // "0"`, `.metadata.labels`, `.metadata.annotations["x"]`, `.metadata.labels["x"] | select(. != "0")`} {
		assert.Nil(t, newLabelProgram(src), src)
	}
}
