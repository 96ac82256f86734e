package onboard

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
)

// Role is one pod template of a workload (a component instance) and what onboarding changes on it.
type Role struct {
	// Component is the definition's component name; Instance its instance id ("" when single).
	Component, Instance string
	// Template is where the template (or pod spec) is in the workload, as a jq path.
	Template string
	// Changes are the fields set on it (none when it already carried them).
	Changes []Change
}

// Result is a workload onboarded: the new object and what changed per role.
type Result struct {
	// Object is a new object: the workload with every change applied (the input is untouched).
	Object map[string]any
	// Roles lists every pod template found, in definition order.
	Roles []Role
	// Workload are the changes on the workload's own metadata (its labels).
	Workload []Change
}

// Changed reports whether anything was set.
func (r *Result) Changed() bool {
	if len(r.Workload) > 0 {
		return true
	}
	for _, role := range r.Roles {
		if len(role.Changes) > 0 {
			return true
		}
	}
	return false
}

// Error lists every role onboarding cannot write, each with the definition field path and why.
// When it is returned nothing was written.
type Error struct {
	// Definition is the definition's name.
	Definition string
	// Problems, one per role and field, in definition order.
	Problems []string
}

func (e *Error) Error() string {
	return fmt.Sprintf("definition %s: cannot onboard every role, nothing written:\n  %s", e.Definition, strings.Join(e.Problems, "\n  "))
}

// Workload returns obj with pods set to every pod template of every role the definition c finds
// in it, and root set to the workload's own metadata (its labels: KAI reads the queue label on
// the top owner first). Templates are found through the definition's podTemplateSpecPath,
// podSpecPath and metadataPath, or its fragmented schedulerNamePath, labelsPath and
// annotationsPath (see locator.locate for what counts as a path), so a wrapped workload
// (an AppWrapper's components) is written where its definition reads it.
//
// It is all or nothing: any role whose template cannot be written (*NotAPathError, a field the
// definition gives no path for, a scheduler other than the default one without override) is
// reported in an *Error naming the component, the definition field path and why, and nothing is
// written. Afterwards the definition is evaluated again on the result, and every role it finds
// must carry the settings (an *Error otherwise): what `gangmap plan` reads is what was written.
func Workload(ctx context.Context, c *definitions.Compiled, compiler *expr.Compiler, obj map[string]any, pods, root Settings) (*Result, error) {
	doc, _ := expr.Normalize(deepCopy(obj)).(map[string]any)
	vars, err := c.EvaluateVariables(ctx, doc)
	if err != nil {
		return nil, err
	}
	vars, _ = expr.Normalize(vars).(map[string]any)
	loc := &locator{compiler: compiler, in: expr.Input{Object: doc, Variables: vars, Normalized: true}}
	res := &Result{Object: doc}
	oe := &Error{Definition: c.Name()}
	before, err := c.Resolve(ctx, doc)
	if err != nil {
		return nil, err
	}
	for _, comp := range c.PodBearing {
		if ps := otherScheduler(before, comp, pods); len(ps) > 0 {
			oe.Problems = append(oe.Problems, ps...)
			continue
		}
		problems, covered, err := unreachable(ctx, loc, comp, pods)
		if err != nil {
			return nil, err
		}
		oe.Problems = append(oe.Problems, problems...)
		roles, problems := rolesOf(ctx, loc, comp, templateIDs(before, comp), pods, covered)
		res.Roles = append(res.Roles, roles...)
		oe.Problems = append(oe.Problems, problems...)
	}
	if root.Labels != nil || root.DefaultLabels != nil {
		ch, err := Settings{Labels: root.Labels, DefaultLabels: root.DefaultLabels}.Changes(doc, Slots{Labels: Path{"metadata", "labels"}})
		if err != nil {
			oe.Problems = append(oe.Problems, fmt.Sprintf("the workload's metadata.labels: %v", err))
		}
		res.Workload = ch
	}
	if len(oe.Problems) > 0 {
		return nil, oe
	}
	for _, r := range res.Roles {
		if err := Apply(doc, r.Changes); err != nil {
			return nil, &Error{Definition: c.Name(), Problems: []string{fmt.Sprintf("component %s: %v", r.Component, err)}}
		}
	}
	if err := Apply(doc, res.Workload); err != nil {
		return nil, &Error{Definition: c.Name(), Problems: []string{err.Error()}}
	}
	if err := verify(ctx, c, loc, pods); err != nil {
		return nil, err
	}
	return res, nil
}

// IsRole reports whether an instance the definition resolved is a role with pods to onboard: a
// template with containers, or one left to the operator's defaults (no container fragment, as a
// Milvus component with only replicas) whose replicas are above 0. An empty template with no
// replicas is a role the workload lacks, which some definitions still build.
func IsRole(inst *definitions.Instance) bool {
	if inst.Template == nil {
		return false
	}
	return len(inst.Template.Spec.Containers) > 0 || (inst.Replicas != nil && *inst.Replicas > 0)
}

// otherScheduler reports the roles of comp whose pods, as the definition reads them before
// onboarding, name a scheduler other than the default one and s's, when s does not override it.
// It catches what the written place alone cannot show: an operator default the role inherits
// (a Milvus component without its own schedulerName takes the shared spec.components one).
func otherScheduler(w *definitions.Workload, comp *definitions.Component, s Settings) []string {
	if s.SchedulerName == "" || s.OverrideScheduler {
		return nil
	}
	rc := w.Component(comp.Name)
	if rc == nil {
		return nil
	}
	var out []string
	for _, inst := range rc.Instances {
		if !IsRole(inst) {
			continue
		}
		if cur := inst.Template.Spec.SchedulerName; cur != "" && cur != DefaultSchedulerName && cur != s.SchedulerName {
			id := ""
			if inst.ID != "" {
				id = fmt.Sprintf(" (instance %q)", inst.ID)
			}
			out = append(out, fmt.Sprintf("component %s%s: %v", comp.Name, id, &SkipError{Scheduler: cur}))
		}
	}
	return out
}

// templateIDs lists the instance ids of the roles (IsRole) the definition finds for comp, in
// instance order.
func templateIDs(w *definitions.Workload, comp *definitions.Component) []string {
	var ids []string
	if rc := w.Component(comp.Name); rc != nil {
		for _, inst := range rc.Instances {
			if IsRole(inst) {
				ids = append(ids, inst.ID)
			}
		}
	}
	return ids
}

// rolesOf finds the templates of one component and the changes each needs; problems name the
// component, the definition field and why.
//
// ids are the instance ids of the templates the definition reads; when there are as many as places
// found, they name the roles (else the places are numbered).
//
// covered are the fields already reported as unreachable for the component's pods: a missing
// place for them is not reported again.
func rolesOf(ctx context.Context, loc *locator, comp *definitions.Component, ids []string, s Settings, covered sets.Set[string]) ([]Role, []string) {
	slots, names, err := slotsOf(ctx, loc, comp)
	if err != nil {
		return nil, []string{fmt.Sprintf("component %s: %v", comp.Name, err)}
	}
	if len(slots) == 0 && comp.Fragments != nil && s.SchedulerName != "" && len(ids) > 0 && !covered.Has("schedulerName") {
		return nil, []string{fmt.Sprintf("component %s (%d templates) (%s): the definition gives no path for the pod's schedulerName", comp.Name, len(ids), missingField(comp, "schedulerName"))}
	}
	if len(ids) == len(slots) {
		for i, id := range ids {
			if id != "" {
				names[i] = "[" + id + "]"
			}
		}
	}
	var roles []Role
	var problems []string
	for i, sl := range slots {
		ch, err := s.Changes(loc.in.Object, sl.slots)
		if err != nil {
			var ms *MissingSlotError
			field := ""
			if errors.As(err, &ms) {
				if covered.Has(ms.Field) {
					continue
				}
				field = fmt.Sprintf(" (%s)", missingField(comp, ms.Field))
			}
			problems = append(problems, fmt.Sprintf("component %s%s at %s%s: %v", comp.Name, names[i], sl.at, field, err))
			continue
		}
		roles = append(roles, Role{Component: comp.Name, Instance: strings.Trim(names[i], "[]"), Template: sl.at.String(), Changes: ch})
	}
	return roles, problems
}

// missingField is the definition field that would give a component's pods their field f.
func missingField(comp *definitions.Component, f string) string {
	if comp.Onboard != nil || comp.Fragments == nil {
		return fmt.Sprintf("spec.gangmap.components[name=%s].onboard.%sPath", comp.Name, f)
	}
	return comp.Path.Child("specDefinition", "fragmentedPodSpecDefinition", f+"Path").String()
}

type located struct {
	at    Path
	slots Slots
}

// slotsOf locates every template of comp in the document, skipping places that hold nothing (a
// replicated job without a template has no role to onboard).
func slotsOf(ctx context.Context, loc *locator, comp *definitions.Component) ([]located, []string, error) {
	sp := comp.Path.Child("specDefinition")
	var out []located
	switch {
	case comp.Onboard != nil:
		var err error
		if out, err = placeSlots(ctx, loc, comp.Onboard, field.NewPath("spec", "gangmap", "components").Key(comp.Name).Child("onboard")); err != nil {
			return nil, nil, err
		}
	case comp.PodTemplate != nil:
		paths, err := loc.locate(ctx, comp.PodTemplate)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", sp.Child("podTemplateSpecPath"), err)
		}
		for _, p := range present(loc.in.Object, paths) {
			out = append(out, located{at: p, slots: PodSlots(p)})
		}
	case comp.PodSpec != nil:
		specs, err := loc.locate(ctx, comp.PodSpec)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", sp.Child("podSpecPath"), err)
		}
		specs = present(loc.in.Object, specs)
		var metas []Path
		if comp.PodMetadata != nil {
			if metas, err = loc.locate(ctx, comp.PodMetadata); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", sp.Child("metadataPath"), err)
			}
			if len(metas) != len(specs) {
				return nil, nil, fmt.Errorf("%s: %d places for %d pod specs", sp.Child("metadataPath"), len(metas), len(specs))
			}
		}
		for i, p := range specs {
			sl := Slots{SchedulerName: p.Child("schedulerName")}
			if metas != nil {
				sl.Labels, sl.Annotations = metas[i].Child("labels"), metas[i].Child("annotations")
			}
			out = append(out, located{at: p, slots: sl})
		}
	case comp.Fragments != nil:
		var err error
		if out, err = placeSlots(ctx, loc, comp.Fragments, comp.Path.Child("specDefinition", "fragmentedPodSpecDefinition")); err != nil {
			return nil, nil, err
		}
	}
	names := make([]string, len(out))
	for i := range out {
		if len(out) > 1 {
			names[i] = fmt.Sprintf("[%d]", i)
		}
	}
	return out, names, nil
}

// placeSlots pairs the places of a component's scheduler name, labels and annotations (a
// fragmented definition's paths, or its spec.gangmap onboard paths: progs by field name, fp their
// definition field path), instance by instance.
func placeSlots(ctx context.Context, loc *locator, progs map[string]expr.Program, fp *field.Path) ([]located, error) {
	fields := []string{"schedulerNamePath", "labelsPath", "annotationsPath"}
	found := map[string][]Path{}
	n := 0
	for _, f := range fields {
		prog := progs[f]
		if prog == nil {
			continue
		}
		paths, err := loc.locate(ctx, prog)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fp.Child(f), err)
		}
		found[f] = paths
		n = max(n, len(paths))
	}
	out := make([]located, n)
	for _, f := range fields {
		paths, ok := found[f]
		if !ok {
			continue
		}
		if len(paths) != n {
			return nil, fmt.Errorf("%s: %d places where other fragments have %d", fp.Child(f), len(paths), n)
		}
		for i, p := range paths {
			switch f {
			case "schedulerNamePath":
				out[i].slots.SchedulerName, out[i].at = p, p[:len(p)-1]
			case "labelsPath":
				out[i].slots.Labels = p
			case "annotationsPath":
				out[i].slots.Annotations = p
			}
			if out[i].at == nil {
				out[i].at = p[:max(len(p)-1, 0)]
			}
		}
	}
	return out, nil
}

// present keeps the paths whose value exists and is not null.
func present(doc map[string]any, paths []Path) []Path {
	var out []Path
	for _, p := range paths {
		if v, found, err := lookup(doc, p); err == nil && found && v != nil {
			out = append(out, p)
		}
	}
	return out
}

// verify checks the onboarded object twice: onboarding it again changes nothing (every place
// found carries the settings), and every role's template as the definition reads it (built by
// the definition too, as KServe's and Dynamo's are) carries the scheduler name and labels of s,
// so what `gangmap plan` reads is what was written. Templates without containers are no roles (a role the
// workload lacks, which some definitions still build) and are not checked.
func verify(ctx context.Context, c *definitions.Compiled, loc *locator, s Settings) error {
	var problems []string
	written := map[string][]string{} // component name -> the template paths written
	for _, comp := range c.PodBearing {
		roles, ps := rolesOf(ctx, loc, comp, nil, s, nil)
		problems = append(problems, ps...)
		for _, r := range roles {
			written[r.Component] = append(written[r.Component], r.Template)
			if len(r.Changes) > 0 {
				problems = append(problems, fmt.Sprintf("component %s at %s: written, but a second pass would change %s again", r.Component, r.Template, r.Changes[0].Path))
			}
		}
	}
	w, err := c.Resolve(ctx, loc.in.Object)
	if err != nil {
		return fmt.Errorf("definition %s on the onboarded workload: %w", c.Name(), err)
	}
	for _, rc := range w.Components {
		for _, inst := range rc.Instances {
			if !IsRole(inst) {
				continue
			}
			id := rc.Component.Name
			if inst.ID != "" {
				id += fmt.Sprintf(" (instance %q)", inst.ID)
			}
			// Where it was written and where the definition reads (issue 31 point 7: the message
			// said neither): they differ when the definition's template path has a // default or
			// builds the template, so the operator's real place is elsewhere.
			where := fmt.Sprintf(" (written at %s; the definition reads the role's template from %s, and another field of the workload decides the value there: a // default, or a field the operator prefers; name the operator's own fields in spec.gangmap.components[].onboard, docs/onboarding.md)",
				orNone(written[rc.Component.Name]), readsFrom(rc.Component))
			if s.SchedulerName != "" && inst.Template.Spec.SchedulerName != s.SchedulerName {
				problems = append(problems, fmt.Sprintf("component %s: written, but the definition reads scheduler name %q%s", id, inst.Template.Spec.SchedulerName, where))
			}
			for _, k := range sortedKeys(s.Labels, s.DefaultLabels) {
				if _, ok := inst.Template.Labels[k]; !ok {
					problems = append(problems, fmt.Sprintf("component %s: written, but the definition reads no label %s%s", id, k, where))
				}
			}
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		return &Error{Definition: c.Name(), Problems: problems}
	}
	return nil
}

// orNone joins paths, or says "no template path" when there is none.
func orNone(paths []string) string {
	if len(paths) == 0 {
		return "no template path"
	}
	return strings.Join(paths, ", ")
}

// readsFrom names the expression the definition reads comp's template (or pod spec) from.
func readsFrom(comp *definitions.Component) string {
	switch {
	case comp.PodTemplate != nil:
		return fmt.Sprintf("podTemplateSpecPath %q", comp.PodTemplate.Source())
	case comp.PodSpec != nil:
		return fmt.Sprintf("podSpecPath %q", comp.PodSpec.Source())
	}
	return "a fragmented pod spec"
}

// deepCopy copies a JSON-shaped tree (maps and lists; scalars are shared).
func deepCopy(v map[string]any) map[string]any {
	out, _ := copyValue(v).(map[string]any)
	return out
}

func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, c := range t {
			m[k] = copyValue(c)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, c := range t {
			l[i] = copyValue(c)
		}
		return l
	default:
		return v
	}
}
