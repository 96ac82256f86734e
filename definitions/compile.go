package definitions

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gangmap/gangmap/definitions/expr"
)

// Compiled is a validated definition with every expression compiled once. It is immutable and
// safe for concurrent use; callers cache it per definition generation and never recompile per
// pod.
type Compiled struct {
	Loaded *Loaded
	// Components lists the root first, then every child after its parent (definition order
	// otherwise).
	Components []*Component
	byName     map[string]*Component
	// PodBearing lists the components with a spec definition, in Components order.
	PodBearing []*Component
	// ScaledRoles lists the components with a scaleDefinition, no specDefinition and no
	// pod-bearing descendant (upstream allows them; KAI's fallback forms their sub-groups from
	// the pods its componentTypeSelector matches): gangmap makes them roles of their replica
	// count with no pod template.
	ScaledRoles []*Component
	// ByElimination says PlacePod gives a pod no scaled role claims to the only pod-bearing
	// component without looking at its selector. It holds only while every component the gang's
	// sub-groups or alpha members name, other than that one and its ancestors, is a scaled role
	// with a componentTypeSelector of its own: a definition that names other roles expects pods
	// for them, so a pod no selector claims is reported (UnclaimedPods), never placed by
	// elimination.
	ByElimination bool
	Variables     []CompiledVariable
	Status        *CompiledStatus
	// PerReplicaOf is the component whose every replica is its own gang, or nil.
	PerReplicaOf *Component
	// Startup is the compiled startup policy, or nil.
	Startup *CompiledStartup
	// OwnsNoPods is the compiled spec.gangmap.ownsNoPods, or nil.
	OwnsNoPods *CompiledOwnsNoPods
	// podMetadataOnly says every pod-side expression reads only .metadata (see PodInput).
	podMetadataOnly bool
	// podLabelKeys, when not nil, are the only pod labels the definition reads: every pod-side
	// expression is a plain label lookup (see PodInput).
	podLabelKeys []string
	// AlphaFilters holds the compiled filters of each alpha pod group member, indexed
	// [podGroup][member].
	AlphaFilters [][][]expr.Program
	// AlphaKeys holds the compiled grouping keys of each alpha pod group member (its
	// groupByKeyPaths, then its groupByExpressions), indexed [podGroup][member].
	AlphaKeys [][][]expr.Program
	// nullSafe holds, for each object-side jq program that has one, its expr.NullSafeJQ form:
	// evaluated only when the program as written fails on null.
	nullSafe map[expr.Program]expr.Program
	// Advisories are the known under- or overcounts of upstream catalog definitions that match
	// this one (advisories.yaml); AdvisoryNotes evaluates them.
	Advisories []CompiledAdvisory
	// Notes are the definition's own plan notes (spec.gangmap.notes), with their conditions.
	Notes []CompiledAdvisory
	// limits are the bounds the expressions were compiled under; Resolve and PlacePod check
	// their input's size against them once (expr.CheckInput).
	limits expr.Limits
}

// Component is one compiled component of the tree.
type Component struct {
	Def      *ComponentDefinition
	Name     string
	Path     *field.Path
	Parent   *Component
	Children []*Component

	InstanceIDs    expr.Program // object side; nil when single-instance
	PodTemplate    expr.Program // object side
	PodSpec        expr.Program
	PodMetadata    expr.Program
	Fragments      map[string]expr.Program // fragmented spec paths by field name
	Replicas       expr.Program
	MinReplicas    expr.Program
	MaxReplicas    expr.Program
	PodsPerReplica expr.Program
	// Onboard holds the compiled spec.gangmap.components[].onboard paths by field name
	// (schedulerNamePath, labelsPath, annotationsPath); nil when the component has none.
	Onboard map[string]expr.Program
	// OnboardUnreachable are the component's pods the operator gives no way to onboard through
	// the workload object (spec.gangmap.components[].onboard.unreachable).
	OnboardUnreachable []*CompiledUnreachable

	TypeKey     expr.Program // pod side
	TypeValue   *string
	MatchLabels map[string]string
	InstanceKey expr.Program // pod side
	ReplicaKey  expr.Program // pod side
	// PodIndex is spec.gangmap.components[].podIndexPath (pod side): the pod's index among its
	// role's pods, which places it in its segment; nil when the component has none.
	PodIndex expr.Program
	// PodReplicaIndex is spec.gangmap.components[].podReplicaIndexPath (pod side), or nil.
	PodReplicaIndex expr.Program
	// SegmentSize is spec.gangmap.components[].segmentSizePath (object side), or nil.
	SegmentSize expr.Program
	// SegmentLeader is the leader role of the component's segments
	// (spec.gangmap.components[].segmentLeader), and SegmentPolicy its policyPath; nil without.
	SegmentLeader *Component
	SegmentPolicy expr.Program

	// ScaledRole says the component is in Compiled.ScaledRoles.
	ScaledRole bool
}

// HasPodSpec reports whether the component carries a pod template (a role).
func (c *Component) HasPodSpec() bool { return c.Def.SpecDefinition != nil }

// IsRole reports whether the component's instances are roles of the gang plan: it has a pod
// template, or it is a scaled component without one (ScaledRole).
func (c *Component) IsRole() bool { return c.HasPodSpec() || c.ScaledRole }

// hasPodBearingDescendant reports whether a component below c carries a pod template.
func (c *Component) hasPodBearingDescendant() bool {
	for _, ch := range c.Children {
		if ch.HasPodSpec() || ch.hasPodBearingDescendant() {
			return true
		}
	}
	return false
}

// HasTypeSelector reports whether the component can recognise its pods by itself.
func (c *Component) HasTypeSelector() bool { return c.TypeKey != nil || len(c.MatchLabels) > 0 }

// IsAncestorOf reports whether c is a proper ancestor of o.
func (c *Component) IsAncestorOf(o *Component) bool {
	for p := o.Parent; p != nil; p = p.Parent {
		if p == c {
			return true
		}
	}
	return false
}

// CompiledVariable is one spec.variables entry.
type CompiledVariable struct {
	Name    string
	Program expr.Program
}

// CompiledStartup is the compiled gangmap startup policy.
type CompiledStartup struct {
	When           expr.Program // nil: always
	First          map[string]bool
	FirstInstances expr.Program // nil: none
	Holds          expr.Program // nil: none
}

// Component returns the named component, or nil.
func (c *Compiled) Component(name string) *Component { return c.byName[name] }

// Root is the root component.
func (c *Compiled) Root() *Component { return c.Components[0] }

// Name is the definition's name.
func (c *Compiled) Name() string { return c.Loaded.Name() }

// RootGVK is the workload kind the definition describes.
func (c *Compiled) RootGVK() GroupVersionKind {
	return *c.Loaded.Karta.Spec.StructureDefinition.RootComponent.Kind
}

// Compile validates l and compiles all of its expressions with compiler. It returns a
// *DefinitionError listing every structural and expression problem (each with its field path)
// when there is any.
func Compile(l *Loaded, compiler *expr.Compiler) (*Compiled, error) {
	k := l.Karta
	errs := ValidateStructure(k)
	if len(errs) > 0 {
		return nil, &DefinitionError{Name: k.Metadata.Name, Origin: l.Origin, Errs: errs}
	}
	cc := &compileCtx{compiler: compiler, nullSafe: map[expr.Program]expr.Program{}}
	out := &Compiled{Loaded: l, byName: map[string]*Component{}, nullSafe: cc.nullSafe, limits: compiler.Limits()}
	for _, r := range k.componentRefs() {
		comp := cc.component(k, r)
		out.byName[comp.Name] = comp
	}
	out.Components = orderComponents(k, out.byName)
	for _, comp := range out.Components {
		switch {
		case comp.HasPodSpec():
			out.PodBearing = append(out.PodBearing, comp)
		case comp.Def.ScaleDefinition != nil && !comp.hasPodBearingDescendant():
			comp.ScaledRole = true
			out.ScaledRoles = append(out.ScaledRoles, comp)
		}
	}
	out.ByElimination = len(out.PodBearing) == 1 && len(out.namedOthers(out.PodBearing[0])) == 0
	for i, v := range k.Spec.Variables {
		p := specPath.Child("variables").Index(i).Child("expression")
		out.Variables = append(out.Variables, CompiledVariable{Name: v.Name, Program: cc.compile(CELExpr(v.Expression), expr.Object, p)})
	}
	out.Status = cc.status(k.Spec.StructureDefinition.RootComponent.StatusDefinition, structurePath.Child("rootComponent", "statusDefinition"))
	if gs := k.Spec.OptimizationInstructions.GangScheduling; gs != nil {
		for i, pg := range gs.PodGroups {
			var members, keys [][]expr.Program
			for j, m := range pg.Members {
				var fs, ks []expr.Program
				for f, e := range m.Filters {
					fs = append(fs, cc.compile(e, expr.Pod, gangPath.Child("podGroups").Index(i).Child("members").Index(j).Child("filters").Index(f)))
				}
				for f, e := range m.GroupByKeyPaths {
					ks = append(ks, cc.compile(e, expr.Pod, gangPath.Child("podGroups").Index(i).Child("members").Index(j).Child("groupByKeyPaths").Index(f)))
				}
				for f, e := range m.GroupByExpressions {
					ks = append(ks, cc.compile(e, expr.Pod, gangPath.Child("podGroups").Index(i).Child("members").Index(j).Child("groupByExpressions").Index(f)))
				}
				members, keys = append(members, fs), append(keys, ks)
			}
			out.AlphaFilters = append(out.AlphaFilters, members)
			out.AlphaKeys = append(out.AlphaKeys, keys)
		}
	}
	if ext := k.Spec.Gangmap; ext != nil {
		for i, ce := range ext.Components {
			out.byName[ce.Name].PodsPerReplica = cc.compile(ce.PodsPerReplicaPath, expr.Object, gangmapPath.Child("components").Index(i).Child("podsPerReplicaPath"))
			comp := out.byName[ce.Name]
			comp.Onboard, comp.OnboardUnreachable = cc.onboardPaths(ce.Onboard, gangmapPath.Child("components").Index(i).Child("onboard"))
			cp := gangmapPath.Child("components").Index(i)
			comp.PodIndex = cc.compile(ce.PodIndexPath, expr.Pod, cp.Child("podIndexPath"))
			comp.PodReplicaIndex = cc.compile(ce.PodReplicaIndexPath, expr.Pod, cp.Child("podReplicaIndexPath"))
			comp.SegmentSize = cc.compile(ce.SegmentSizePath, expr.Object, cp.Child("segmentSizePath"))
			if sl := ce.SegmentLeader; sl != nil {
				comp.SegmentLeader = out.byName[sl.Component]
				comp.SegmentPolicy = cc.compile(sl.PolicyPath, expr.Object, cp.Child("segmentLeader", "policyPath"))
			}
		}
		for i, n := range ext.Notes {
			out.Notes = append(out.Notes, CompiledAdvisory{When: cc.compile(n.When, expr.Object, gangmapPath.Child("notes").Index(i).Child("when")), Note: n.Note})
		}
		if o := ext.OwnsNoPods; o != nil {
			out.OwnsNoPods = &CompiledOwnsNoPods{When: cc.compile(o.When, expr.Object, gangmapPath.Child("ownsNoPods", "when")), Reason: o.Reason}
		}
		if g := ext.Gang; g != nil {
			if g.PerReplicaOf != "" {
				out.PerReplicaOf = out.byName[g.PerReplicaOf]
			}
			if g.Startup != nil {
				st := &CompiledStartup{First: map[string]bool{}}
				st.When = cc.compile(g.Startup.When, expr.Object, gangmapPath.Child("gang", "startup", "when"))
				st.FirstInstances = cc.compile(g.Startup.FirstInstances, expr.Object, gangmapPath.Child("gang", "startup", "firstInstances"))
				st.Holds = cc.compile(g.Startup.Holds, expr.Object, gangmapPath.Child("gang", "startup", "holds"))
				for _, n := range g.Startup.First {
					st.First[n] = true
				}
				out.Startup = st
			}
		}
	}
	if len(cc.errs) > 0 {
		return nil, &DefinitionError{Name: k.Metadata.Name, Origin: l.Origin, Errs: cc.errs}
	}
	out.podMetadataOnly = metadataOnly(podExpressions(k))
	out.podLabelKeys = labelKeysRead(k)
	out.Advisories = cc.matchAdvisories(out.byName)
	return out, nil
}

type compileCtx struct {
	compiler *expr.Compiler
	errs     field.ErrorList
	nullSafe map[expr.Program]expr.Program
}

// compile compiles e (nil for a zero Expr) and records an error at p.
func (cc *compileCtx) compile(e Expr, subject expr.Subject, p *field.Path) expr.Program {
	return cc.compileMode(e, subject, expr.Read, p)
}

func (cc *compileCtx) compileMode(e Expr, subject expr.Subject, mode expr.Mode, p *field.Path) expr.Program {
	if e.IsZero() {
		return nil
	}
	lang, src := expr.JQ, e.JQ
	if e.CEL != "" {
		lang, src = expr.CEL, e.CEL
	}
	prog, err := cc.compiler.Compile(lang, src, subject, mode)
	if err == nil && lang == expr.JQ && subject == expr.Pod {
		if fast := newLabelProgram(src); fast != nil {
			return fast // compiled by jq above, so it is valid; evaluated without jq
		}
	}
	if err != nil {
		reason := err.Error()
		var ce *expr.CompileError
		if errors.As(err, &ce) {
			reason = ce.Reason // field.Invalid quotes the expression already
		}
		cc.errs = append(cc.errs, field.Invalid(p, shownExpression(e.String()), fmt.Sprintf("expected a valid %s expression: %s", lang, reason)))
		return nil
	}
	if lang == expr.JQ && subject == expr.Object && mode == expr.Read {
		if safe, ok := expr.NullSafeJQ(src); ok {
			if sp, err := cc.compiler.Compile(expr.JQ, safe, subject, mode); err == nil {
				cc.nullSafe[prog] = sp
			}
		}
	}
	return prog
}

// maxShownExpression bounds, in runes, the expression an error about it quotes (the error goes
// to logs, Events on the Karta and `gangmap validate`; expr.MaxJQSourceBytes refuses longer ones
// to compile, and an error quoting all of one would repeat up to the Karta's size).
const maxShownExpression = 200

// shownExpression is src cut to maxShownExpression runes, with "..." and the full length when cut.
func shownExpression(src string) string {
	r := []rune(src)
	if len(r) <= maxShownExpression {
		return src
	}
	return fmt.Sprintf("%s... (%d bytes)", string(r[:maxShownExpression]), len(src))
}

func (cc *compileCtx) component(k *Karta, r componentRef) *Component {
	d := r.def
	c := &Component{Def: d, Name: d.Name, Path: r.path}
	c.InstanceIDs = cc.compile(d.InstanceIDPath, expr.Object, r.path.Child("instanceIdPath"))
	if sd := d.SpecDefinition; sd != nil {
		sp := r.path.Child("specDefinition")
		c.PodTemplate = cc.compile(sd.PodTemplateSpecPath, expr.Object, sp.Child("podTemplateSpecPath"))
		c.PodSpec = cc.compile(sd.PodSpecPath, expr.Object, sp.Child("podSpecPath"))
		c.PodMetadata = cc.compile(sd.MetadataPath, expr.Object, sp.Child("metadataPath"))
		if f := sd.FragmentedPodSpecDefinition; f != nil {
			fp := sp.Child("fragmentedPodSpecDefinition")
			c.Fragments = map[string]expr.Program{}
			for name, e := range f.fields() {
				if p := cc.compile(e, expr.Object, fp.Child(name)); p != nil {
					c.Fragments[name] = p
				}
			}
		}
	}
	if s := d.ScaleDefinition; s != nil {
		sp := r.path.Child("scaleDefinition")
		c.Replicas = cc.compile(s.ReplicasPath, expr.Object, sp.Child("replicasPath"))
		c.MinReplicas = cc.compile(s.MinReplicasPath, expr.Object, sp.Child("minReplicasPath"))
		c.MaxReplicas = cc.compile(s.MaxReplicasPath, expr.Object, sp.Child("maxReplicasPath"))
	}
	if ps := d.PodSelector; ps != nil {
		pp := r.path.Child("podSelector")
		if ts := ps.ComponentTypeSelector; ts != nil {
			c.TypeKey = cc.compile(ts.KeyPath, expr.Pod, pp.Child("componentTypeSelector", "keyPath"))
			c.TypeValue = ts.Value
			c.MatchLabels = ts.MatchLabels
		}
		if is := ps.ComponentInstanceSelector; is != nil {
			c.InstanceKey = cc.compile(is.IDPath, expr.Pod, pp.Child("componentInstanceSelector", "idPath"))
		}
		if rs := ps.ReplicaSelector; rs != nil {
			c.ReplicaKey = cc.compile(rs.KeyPath, expr.Pod, pp.Child("replicaSelector", "keyPath"))
		}
	}
	if sd := d.SuspendDefinition; sd != nil {
		for i, a := range sd.SuspendActions {
			cc.compileMode(a.Path, expr.Object, expr.Action, r.path.Child("suspendDefinition", "suspendActions").Index(i).Child("path"))
		}
		for i, a := range sd.ResumeActions {
			cc.compileMode(a.Path, expr.Object, expr.Action, r.path.Child("suspendDefinition", "resumeActions").Index(i).Child("path"))
		}
	}
	return c
}

// fields lists the set fragment paths by their json names.
func (f *FragmentedPodSpecDefinition) fields() map[string]Expr {
	all := map[string]Expr{
		"schedulerNamePath": f.SchedulerNamePath, "labelsPath": f.LabelsPath, "annotationsPath": f.AnnotationsPath,
		"resourcesPath": f.ResourcesPath, "resourceClaimsPath": f.ResourceClaimsPath, "podAffinityPath": f.PodAffinityPath,
		"nodeAffinityPath": f.NodeAffinityPath, "containersPath": f.ContainersPath, "containerPath": f.ContainerPath,
		"priorityClassNamePath": f.PriorityClassNamePath, "imagePath": f.ImagePath,
	}
	for k, v := range all {
		if v.IsZero() {
			delete(all, k)
		}
	}
	return all
}

// orderComponents links parents and children and returns the root followed by every child
// after its parent (definition order among siblings). Validation has ruled out cycles and
// dangling owners.
func orderComponents(k *Karta, byName map[string]*Component) []*Component {
	refs := k.componentRefs()
	root := byName[refs[0].def.Name]
	for _, r := range refs[1:] {
		c := byName[r.def.Name]
		c.Parent = byName[*r.def.OwnerRef]
		c.Parent.Children = append(c.Parent.Children, c)
	}
	var out []*Component
	var walk func(c *Component)
	walk = func(c *Component) {
		out = append(out, c)
		for _, ch := range c.Children {
			walk(ch)
		}
	}
	walk(root)
	return out
}

// EvaluateVariables evaluates spec.variables on the workload object, in order (a variable may
// use the ones before it). Errors name the variable.
func (c *Compiled) EvaluateVariables(ctx context.Context, obj map[string]any) (map[string]any, error) {
	if len(c.Variables) == 0 {
		return nil, nil
	}
	vars := map[string]any{}
	for _, v := range c.Variables {
		res, err := v.Program.Eval(ctx, expr.Input{Object: obj, Variables: vars})
		if err != nil {
			return nil, fmt.Errorf("spec.variables[%s]: %w", v.Name, err)
		}
		if len(res) > 0 {
			vars[v.Name] = res[0]
		} else {
			vars[v.Name] = nil
		}
	}
	return vars, nil
}

// IsSegmentLeader reports whether comp is another component's segment leader
// (spec.gangmap.components[].segmentLeader): its pod joins that component's segments.
func (c *Compiled) IsSegmentLeader(comp *Component) bool {
	for _, o := range c.byName {
		if o.SegmentLeader != nil && o.SegmentLeader == comp {
			return true
		}
	}
	return false
}
