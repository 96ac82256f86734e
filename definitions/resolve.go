package definitions

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gangmap/gangmap/definitions/expr"
)

// Workload is a definition evaluated on one workload object: for every component, its
// instances with their pod templates and replica counts. It is computed once per workload
// generation and is read-only afterwards.
type Workload struct {
	Compiled   *Compiled
	Object     map[string]any
	Variables  map[string]any
	Components []*ResolvedComponent // in Compiled.Components order
	// Misses lists expressions that resolved to nothing on this object (a framework renamed a
	// field, or the definition has a typo). They are facts to report, not errors.
	Misses []PathMiss
	// Notes says which expressions failed on null and were read null-safe (expr.NullSafeJQ).
	Notes []string
	// OwnsNoPods is the definition's ownsNoPods reason when its condition holds on this object
	// (then Misses is empty: nothing was expected to resolve), else "".
	OwnsNoPods string
}

// CompiledOwnsNoPods is spec.gangmap.ownsNoPods compiled.
type CompiledOwnsNoPods struct {
	When   expr.Program
	Reason string
}

// ResolvedComponent is one component with its instances.
type ResolvedComponent struct {
	Component *Component
	Instances []*Instance
}

// Instance is one instance of a component (the only one, with ID "", when the component has no
// instanceIdPath).
type Instance struct {
	ID string
	// Template is the pod template; nil when the component has no spec definition or it resolved
	// to nothing.
	Template *corev1.PodTemplateSpec
	// Replicas, MinReplicas and MaxReplicas are the scale values; nil when there is no path or it
	// resolved to nothing. Counts follow the published convention: units at this level across
	// the whole workload.
	Replicas, MinReplicas, MaxReplicas *int64
	// PodsPerReplica is gangmap's podsPerReplicaPath value (1 when unset).
	PodsPerReplica int64
	// SegmentSize is gangmap's segmentSizePath value (the framework's own segment size); nil when
	// there is no path or it gave null.
	SegmentSize *int64
	// SegmentPolicy is gangmap's segmentLeader.policyPath value ("" when unset or null).
	SegmentPolicy string
}

// PathMiss is an expression that resolved to nothing.
type PathMiss struct {
	// Path is the definition field path, e.g.
	// spec.structureDefinition.childComponents[1].scaleDefinition.replicasPath.
	Path string `json:"path"`
	// Expression is the expression text.
	Expression string `json:"expression"`
}

// Component returns the resolved component with the given name, or nil.
func (w *Workload) Component(name string) *ResolvedComponent {
	for _, rc := range w.Components {
		if rc.Component.Name == name {
			return rc
		}
	}
	return nil
}

// Resolve evaluates the definition on obj (the workload object as normalized JSON: see
// expr.FromObject). Errors name the definition field path and what was expected: a path that
// yields the wrong type (replicas "abc"), more values than instances, or a pod template that
// does not decode. Paths that yield nothing are recorded in Workload.Misses.
func (c *Compiled) Resolve(ctx context.Context, obj map[string]any) (*Workload, error) {
	obj, _ = expr.Normalize(obj).(map[string]any) // once, not per expression
	if err := expr.CheckInput(obj, c.limits); err != nil {
		return nil, fmt.Errorf("the workload object: %w", err)
	}
	vars, err := c.EvaluateVariables(ctx, obj)
	if err != nil {
		return nil, err
	}
	vars, _ = expr.Normalize(vars).(map[string]any)
	w := &Workload{Compiled: c, Object: obj, Variables: vars}
	r := resolver{ctx: ctx, w: w, in: expr.Input{Object: obj, Variables: vars, Normalized: true}}
	if none, err := r.ownsNoPods(c); err != nil {
		return nil, err
	} else if none {
		return w, nil
	}
	for _, comp := range c.Components {
		rc, err := r.component(comp)
		if err != nil {
			return nil, err
		}
		w.Components = append(w.Components, rc)
	}
	w.dropExpectedMisses()
	return w, nil
}

// ownsNoPods evaluates spec.gangmap.ownsNoPods on the object: when it holds, the workload is
// one of no component instance (no roles, no PodGroup, no path to miss) and says why.
func (r *resolver) ownsNoPods(c *Compiled) (bool, error) {
	o := c.OwnsNoPods
	if o == nil || o.When == nil {
		return false, nil
	}
	res, err := o.When.Eval(r.ctx, r.in)
	if err != nil {
		return false, fmt.Errorf("%s: %w", gangmapPath.Child("ownsNoPods", "when"), err)
	}
	if !expr.Truthy(res) {
		return false, nil
	}
	r.w.OwnsNoPods = o.Reason
	for _, comp := range c.Components {
		r.w.Components = append(r.w.Components, &ResolvedComponent{Component: comp})
	}
	return true, nil
}

// dropExpectedMisses forgets the spec paths of components with zero replicas everywhere: a role
// the workload does not have (a PyTorchJob without a Master, a RayCluster without worker groups)
// has no pod template to find, which is not drift.
func (w *Workload) dropExpectedMisses() {
	absent := map[string]bool{}
	for _, rc := range w.Components {
		if !rc.Component.HasPodSpec() || rc.Component.Replicas == nil {
			continue
		}
		zero := true
		for _, inst := range rc.Instances {
			if inst.Replicas != nil && *inst.Replicas > 0 {
				zero = false
			}
		}
		if zero {
			absent[rc.Component.Path.Child("specDefinition").String()] = true
		}
	}
	if len(absent) == 0 {
		return
	}
	kept := w.Misses[:0]
	for _, m := range w.Misses {
		if i := strings.LastIndex(m.Path, ".specDefinition"); i >= 0 && absent[m.Path[:i+len(".specDefinition")]] {
			continue
		}
		kept = append(kept, m)
	}
	w.Misses = kept
}

type resolver struct {
	ctx context.Context
	w   *Workload
	in  expr.Input
}

func (r *resolver) component(comp *Component) (*ResolvedComponent, error) {
	ids := []string{""}
	if comp.InstanceIDs != nil {
		var err error
		ids, err = r.instanceIDs(comp)
		if err != nil {
			return nil, err
		}
	}
	rc := &ResolvedComponent{Component: comp}
	for _, id := range ids {
		rc.Instances = append(rc.Instances, &Instance{ID: id, PodsPerReplica: 1})
	}
	sp := comp.Path.Child("scaleDefinition")
	if err := r.ints(comp, comp.Replicas, sp.Child("replicasPath"), rc, func(i *Instance, v int64) { i.Replicas = &v }); err != nil {
		return nil, err
	}
	if err := r.ints(comp, comp.MinReplicas, sp.Child("minReplicasPath"), rc, func(i *Instance, v int64) { i.MinReplicas = &v }); err != nil {
		return nil, err
	}
	if err := r.ints(comp, comp.MaxReplicas, sp.Child("maxReplicasPath"), rc, func(i *Instance, v int64) { i.MaxReplicas = &v }); err != nil {
		return nil, err
	}
	ppr := gangmapPath.Child("components").Key(comp.Name).Child("podsPerReplicaPath")
	podsPerReplicaRead := map[*Instance]bool{}
	if err := r.ints(comp, comp.PodsPerReplica, ppr, rc, func(i *Instance, v int64) { i.PodsPerReplica, podsPerReplicaRead[i] = v, true }); err != nil {
		return nil, err
	}
	cp := gangmapPath.Child("components").Key(comp.Name)
	if err := r.ints(comp, comp.SegmentSize, cp.Child("segmentSizePath"), rc, func(i *Instance, v int64) { i.SegmentSize = &v }); err != nil {
		return nil, err
	}
	if comp.SegmentPolicy != nil {
		p := cp.Child("segmentLeader", "policyPath")
		vals, err := r.values(comp, comp.SegmentPolicy, p, len(rc.Instances))
		if err != nil {
			return nil, err
		}
		for i, v := range vals {
			switch v := v.(type) {
			case nil:
			case string:
				rc.Instances[i].SegmentPolicy = v
			default:
				return nil, fmt.Errorf("%s%s: expected a policy name (LeaderWorker or LeaderExcluded), got %v", p, instanceSuffix(rc.Instances[i]), v)
			}
		}
	}
	if comp.HasPodSpec() {
		if err := r.templates(comp, rc); err != nil {
			return nil, err
		}
		if err := unknownCount(comp, rc, podsPerReplicaRead); err != nil {
			return nil, err
		}
	}
	return rc, nil
}

// unknownCount is an UnknownCountError for the first instance of rc whose pod template resolved
// (the operator will create its pods) while its replicasPath, or gangmap's podsPerReplicaPath,
// resolved to nothing. A role with neither a template nor a count is absent (0 pods, no error).
func unknownCount(comp *Component, rc *ResolvedComponent, podsPerReplicaRead map[*Instance]bool) error {
	sp := comp.Path.Child("scaleDefinition", "replicasPath")
	ppr := gangmapPath.Child("components").Key(comp.Name).Child("podsPerReplicaPath")
	for _, inst := range rc.Instances {
		if inst.Template == nil {
			continue
		}
		if comp.Replicas != nil && inst.Replicas == nil {
			return &UnknownCountError{Path: sp.String() + instanceSuffix(inst), Expression: comp.Replicas.Source()}
		}
		if comp.PodsPerReplica != nil && !podsPerReplicaRead[inst] {
			return &UnknownCountError{Path: ppr.String() + instanceSuffix(inst), Expression: comp.PodsPerReplica.Source()}
		}
	}
	return nil
}

func (r *resolver) instanceIDs(comp *Component) ([]string, error) {
	p := comp.Path.Child("instanceIdPath")
	res, err := r.eval(comp.InstanceIDs, p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	res = spread(res)
	seen := map[string]bool{}
	ids := make([]string, 0, len(res))
	for _, v := range res {
		var id string
		switch t := v.(type) {
		case string:
			id = t
		case int, float64:
			id = fmt.Sprint(t)
		default:
			return nil, fmt.Errorf("%s: expected instance ids as strings, got %v (%T)", p, v, v)
		}
		if seen[id] {
			return nil, fmt.Errorf("%s: instance id %q appears twice", p, id)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		r.miss(p, comp.InstanceIDs)
	}
	return ids, nil
}

// values evaluates prog and returns one value per instance (nil where nothing resolved).
// A multi-instance component takes one value per instance (jq outputs), a single list spread
// over the instances (a CEL list, or one jq list output), or one scalar for all of them.
func (r *resolver) values(comp *Component, prog expr.Program, p *field.Path, n int) ([]any, error) {
	out := make([]any, n)
	if prog == nil || n == 0 {
		return out, nil
	}
	res, err := r.eval(prog, p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if comp.InstanceIDs != nil {
		if len(res) == 1 {
			// CEL yields one value: for a multi-instance field it is the list of per-instance
			// values. jq yields one output per instance; a single list output of the right length
			// is spread too, unless there is one instance (then the list is the value).
			if l, ok := res[0].([]any); ok && len(l) == n && (n != 1 || prog.Language() == expr.CEL) {
				res = l
			}
		}
		switch {
		case len(res) == 0:
			r.miss(p, prog)
			return out, nil
		case len(res) == n:
			copy(out, res)
			if slices.Contains(out, nil) {
				r.miss(p, prog) // some instances read nothing here
			}
		case len(res) == 1:
			for i := range out {
				out[i] = res[0]
			}
		default:
			return nil, fmt.Errorf("%s: expected one value per instance (%d instances), got %d values", p, n, len(res))
		}
		return out, nil
	}
	switch len(res) {
	case 0:
		r.miss(p, prog)
	case 1:
		out[0] = res[0]
		if res[0] == nil {
			r.miss(p, prog)
		}
	default:
		return nil, fmt.Errorf("%s: expected a single value, got %d (add instanceIdPath for a list of instances)", p, len(res))
	}
	return out, nil
}

// ints evaluates prog per instance of rc and sets each whole number it gives with set; an
// instance where it resolves to nothing is left as it is (unknownCount then judges the counts).
func (r *resolver) ints(comp *Component, prog expr.Program, p *field.Path, rc *ResolvedComponent, set func(*Instance, int64)) error {
	vals, err := r.values(comp, prog, p, len(rc.Instances))
	if err != nil {
		return err
	}
	for i, v := range vals {
		if v == nil {
			continue
		}
		n, err := expr.AsInt64(v)
		if err != nil {
			return fmt.Errorf("%s%s: %w", p, instanceSuffix(rc.Instances[i]), err)
		}
		set(rc.Instances[i], n)
	}
	return nil
}

func (r *resolver) templates(comp *Component, rc *ResolvedComponent) error {
	sp := comp.Path.Child("specDefinition")
	n := len(rc.Instances)
	switch {
	case comp.PodTemplate != nil:
		vals, err := r.values(comp, comp.PodTemplate, sp.Child("podTemplateSpecPath"), n)
		if err != nil {
			return err
		}
		for i, v := range vals {
			if v == nil {
				continue
			}
			tpl := &corev1.PodTemplateSpec{}
			if err := fromMap(v, tpl); err != nil {
				return fmt.Errorf("%s%s: expected a pod template (metadata, spec): %w", sp.Child("podTemplateSpecPath"), instanceSuffix(rc.Instances[i]), err)
			}
			rc.Instances[i].Template = tpl
		}
	case comp.PodSpec != nil:
		specs, err := r.values(comp, comp.PodSpec, sp.Child("podSpecPath"), n)
		if err != nil {
			return err
		}
		metas, err := r.values(comp, comp.PodMetadata, sp.Child("metadataPath"), n)
		if err != nil {
			return err
		}
		for i := range specs {
			if specs[i] == nil {
				continue
			}
			tpl := &corev1.PodTemplateSpec{}
			if err := fromMap(specs[i], &tpl.Spec); err != nil {
				return fmt.Errorf("%s%s: expected a pod spec: %w", sp.Child("podSpecPath"), instanceSuffix(rc.Instances[i]), err)
			}
			if metas[i] != nil {
				if err := fromMap(metas[i], &tpl.ObjectMeta); err != nil {
					return fmt.Errorf("%s%s: expected object metadata: %w", sp.Child("metadataPath"), instanceSuffix(rc.Instances[i]), err)
				}
			}
			rc.Instances[i].Template = tpl
		}
	case comp.Fragments != nil:
		return r.fragments(comp, rc)
	}
	return nil
}

// spread turns a single list result into its elements.
func spread(res []any) []any {
	if len(res) == 1 {
		if l, ok := res[0].([]any); ok {
			return l
		}
	}
	return res
}

func instanceSuffix(i *Instance) string {
	if i.ID == "" {
		return ""
	}
	return fmt.Sprintf(" (instance %q)", i.ID)
}

// eval evaluates an object-side program. When it fails on null (a JobSet replicated job without
// replicas, a RayCluster without workerGroupSpecs) and has a null-safe form, that form's result
// is used and the fact is noted: an absent count is 1 in a product (the Kubernetes default of a
// count field), an absent list has no entries. Any other failure is returned as it is.
func (r *resolver) eval(prog expr.Program, p *field.Path) ([]any, error) {
	res, err := prog.Eval(r.ctx, r.in)
	if err == nil || !expr.IsNullError(err) {
		return res, err
	}
	safe := r.w.Compiled.nullSafe[prog]
	if safe == nil {
		return nil, err
	}
	out, serr := safe.Eval(r.ctx, r.in)
	if serr != nil {
		return nil, err
	}
	r.w.Notes = append(r.w.Notes, fmt.Sprintf("%s (%s) met null (%v); read as %s: an absent count is 1 in a product, an absent list has no entries", p, prog.Source(), err, safe.Source()))
	return out, nil
}

func (r *resolver) miss(p *field.Path, prog expr.Program) {
	r.w.Misses = append(r.w.Misses, PathMiss{Path: p.String(), Expression: prog.Source()})
}

// UnknownCountError is a role's pod count (a component's replicasPath, or gangmap's
// podsPerReplicaPath) that resolved to nothing on the workload: a misspelt path, or a field the
// workload leaves out with no default in the expression. Counting such a role as 0 pods, or as 1,
// would write a gang smaller than the pods the operator creates, and KAI would admit it without
// them; so the plan fails instead (the grouper holds the workload's pods and reports the error,
// docs/findings.md) until the definition gives the count, e.g. with a default: `.spec.x // 1`.
type UnknownCountError struct {
	// Path is the definition field, with the instance when the component has several
	// (spec.structureDefinition.childComponents[worker].scaleDefinition.replicasPath).
	Path string
	// Expression is the field's expression as written.
	Expression string
}

// Error names the field, its expression and the fix.
func (e *UnknownCountError) Error() string {
	example := "'... // N'"
	if simplePath.MatchString(e.Expression) {
		example = fmt.Sprintf("'%s // N'", e.Expression)
	}
	return fmt.Sprintf("%s (%s) resolved to nothing on this workload: expected a whole number of pods; the role's count, and so its gang, is unknown (a misspelt path, or a field the workload leaves out: set it on the workload; only if its operator always defaults it to one number N, write that default into the expression, %s)", e.Path, e.Expression, example)
}

// simplePath is a plain jq field path (.spec.worker.replicas), to which a default can be added as
// it is written.
var simplePath = regexp.MustCompile(`^(\.[A-Za-z_][A-Za-z0-9_]*)+$`)

// fromMap decodes a JSON value into a typed Kubernetes struct.
func fromMap(v any, into any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("got %T", v)
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}
