package definitions

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
		"cel label":                {CELExpr(`pod.metadata.labels['x']`), true},
		"cel optional":             {CELExpr(`pod.?metadata.?labels['x'].orValue('0')`), true},
		"cel spec":                 {CELExpr(`pod.spec.nodeName`), false},
		"cel mixed":                {CELExpr(`pod.metadata.name + pod.spec.nodeName`), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, metadataOnly([]Expr{tc.e})) })
	}
}
