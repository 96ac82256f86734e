package definitions

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gangmap/gangmap/definitions/expr"
)

// OnboardFields are the pod fields onboarding sets, as named in
// spec.gangmap.components[].onboard.unreachable[].fields.
var OnboardFields = sets.New("schedulerName", "labels", "annotations")

// CompiledUnreachable is a compiled spec.gangmap.components[].onboard.unreachable entry.
type CompiledUnreachable struct {
	// Pods, Fields and Reason are the entry's (see OnboardUnreachable).
	Pods   string
	Fields sets.Set[string]
	Reason string
	// When is the compiled condition; nil: always.
	When expr.Program
	// Path is the entry's field path, for messages.
	Path *field.Path
}

// onboardPaths compiles a component's onboard paths (jq only: CEL yields values, not places) and
// its unreachable entries. The path map is nil when the component names no path (its pods are
// then written through the spec definition's own paths).
func (cc *compileCtx) onboardPaths(o *OnboardPaths, p *field.Path) (map[string]expr.Program, []*CompiledUnreachable) {
	if o == nil {
		return nil, nil
	}
	out := map[string]expr.Program{}
	for name, e := range map[string]Expr{"schedulerNamePath": o.SchedulerNamePath, "labelsPath": o.LabelsPath, "annotationsPath": o.AnnotationsPath} {
		if e.CEL != "" {
			cc.errs = append(cc.errs, field.Invalid(p.Child(name), e.CEL, "onboard paths must be jq paths (a CEL accessor yields a value, not a place to write)"))
			continue
		}
		if prog := cc.compile(e, expr.Object, p.Child(name)); prog != nil {
			out[name] = prog
		}
	}
	if len(out) == 0 {
		out = nil
	}
	var unreachable []*CompiledUnreachable
	for i, u := range o.Unreachable {
		up := p.Child("unreachable").Index(i)
		if u.Pods == "" {
			cc.errs = append(cc.errs, field.Required(up.Child("pods"), "name the pods the operator builds without these fields"))
		}
		if u.Reason == "" {
			cc.errs = append(cc.errs, field.Required(up.Child("reason"), "say why, citing the operator's source"))
		}
		if len(u.Fields) == 0 {
			cc.errs = append(cc.errs, field.Required(up.Child("fields"), "any of "+strings.Join(sets.List(OnboardFields), ", ")))
		}
		for j, f := range u.Fields {
			if !OnboardFields.Has(f) {
				cc.errs = append(cc.errs, field.NotSupported(up.Child("fields").Index(j), f, sets.List(OnboardFields)))
			}
		}
		unreachable = append(unreachable, &CompiledUnreachable{Pods: u.Pods, Fields: sets.New(u.Fields...), Reason: u.Reason,
			When: cc.compile(u.When, expr.Object, up.Child("when")), Path: up})
	}
	return out, unreachable
}
