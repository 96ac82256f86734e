package app

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
)

// selectorMismatch says, for a pod no component claims (definitions.ErrNoComponent), what each
// pod-bearing component's componentTypeSelector asks and what the pod has there, side by side:
// `component worker: keyPath .metadata.labels["example.com/role"] wants "worker", the pod has
// "workers"`; matchLabels entries likewise; then the pod's labels. So a selector that misses
// (issue 31 point 2) shows the value to fix.
func selectorMismatch(ctx context.Context, c *definitions.Compiled, pod map[string]any) string {
	in := expr.Input{Pod: pod}
	var parts []string
	labels, _, _ := unstructured.NestedStringMap(pod, "metadata", "labels") // a typed Pod's: strings
	for _, comp := range append(append([]*definitions.Component{}, c.ScaledRoles...), c.PodBearing...) {
		if !comp.HasTypeSelector() {
			parts = append(parts, fmt.Sprintf("component %s: no componentTypeSelector (matches nothing)", comp.Name))
			continue
		}
		var why []string
		for _, k := range slices.Sorted(maps.Keys(comp.MatchLabels)) {
			got, ok := labels[k]
			if !ok {
				why = append(why, fmt.Sprintf("matchLabels %s wants %q, the pod has no such label", k, comp.MatchLabels[k]))
			} else if got != comp.MatchLabels[k] {
				why = append(why, fmt.Sprintf("matchLabels %s wants %q, the pod has %q", k, comp.MatchLabels[k], got))
			}
		}
		if comp.TypeKey != nil {
			want := "a value"
			if comp.TypeValue != nil {
				want = fmt.Sprintf("%q", *comp.TypeValue)
			}
			res, err := comp.TypeKey.Eval(ctx, in)
			var got []string
			for _, r := range res {
				if r != nil {
					got = append(got, fmt.Sprintf("%q", fmt.Sprint(r)))
				}
			}
			switch {
			case err != nil:
				why = append(why, fmt.Sprintf("keyPath %s fails on the pod: %v", comp.TypeKey.Source(), err))
			case len(got) == 0:
				why = append(why, fmt.Sprintf("keyPath %s wants %s, the pod has nothing there", comp.TypeKey.Source(), want))
			default:
				why = append(why, fmt.Sprintf("keyPath %s wants %s, the pod has %s", comp.TypeKey.Source(), want, strings.Join(got, ", ")))
			}
		}
		parts = append(parts, fmt.Sprintf("component %s: %s", comp.Name, strings.Join(why, "; ")))
	}
	if len(labels) == 0 {
		return strings.Join(parts, "; ") + "; the pod has no labels"
	}
	return strings.Join(parts, "; ") + "; pod labels: " + pairsText(labels, ", ")
}
