package onboard

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
)

// PolicyHint is what onboarding tells a user about pods it cannot reach through the workload
// object: the grouper's onboarding policy sets the same fields on the pods themselves.
const PolicyHint = "Onboard them with the grouper's onboarding policy instead (Helm values onboarding.rules, " +
	"or the --onboarding-policy file: it sets the scheduler name, queue and labels on each pod of the kind at creation)"

// settingsFields are the pod fields s must set (OptionalLabels excepted: left out where there is
// no place for them).
func settingsFields(s Settings) sets.Set[string] {
	f := sets.New[string]()
	if s.SchedulerName != "" {
		f.Insert("schedulerName")
	}
	if len(s.Labels)+len(s.DefaultLabels) > 0 {
		f.Insert("labels")
	}
	if len(s.Annotations) > 0 {
		f.Insert("annotations")
	}
	return f
}

// unreachable returns one problem per spec.gangmap onboard.unreachable entry of comp that holds
// on the workload and names a field s sets: those pods get the field from no place in the
// workload, so the workload cannot be onboarded by rewriting it. covered are the fields so
// reported. An error evaluating an entry's when names its field path.
func unreachable(ctx context.Context, loc *locator, comp *definitions.Component, s Settings) ([]string, sets.Set[string], error) {
	covered := sets.New[string]()
	var problems []string
	want := settingsFields(s)
	for _, u := range comp.OnboardUnreachable {
		fields := sets.List(u.Fields.Intersection(want))
		if len(fields) == 0 {
			continue
		}
		if u.When != nil {
			res, err := u.When.Eval(ctx, loc.in)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", u.Path.Child("when"), err)
			}
			if !expr.Truthy(res) {
				continue
			}
		}
		covered.Insert(fields...)
		problems = append(problems, fmt.Sprintf("component %s, %s: the operator has no field in the workload for their %s (%s): %s. %s",
			comp.Name, u.Pods, strings.Join(fields, " and "), u.Path, u.Reason, PolicyHint))
	}
	return problems, covered, nil
}
