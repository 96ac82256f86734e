package definitions

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	specPath      = field.NewPath("spec")
	structurePath = specPath.Child("structureDefinition")
	gangPath      = specPath.Child("optimizationInstructions", "gangScheduling")
	gangmapPath   = specPath.Child("gangmap")
)

// componentRef is a component definition with the field path it was read from.
type componentRef struct {
	def  *ComponentDefinition
	path *field.Path
}

// componentRefs lists the root then the children, each with its field path.
func (k *Karta) componentRefs() []componentRef {
	sd := &k.Spec.StructureDefinition
	out := []componentRef{{def: &sd.RootComponent, path: structurePath.Child("rootComponent")}}
	for i := range sd.ChildComponents {
		out = append(out, componentRef{def: &sd.ChildComponents[i], path: structurePath.Child("childComponents").Index(i)})
	}
	return out
}

// ValidateStructure checks the rules that need no expression compiler: upstream's structural
// rules (unique component names, a full root GVK with no ownerRef and a statusDefinition,
// children owned by existing components without cycles, at most one pod-spec shape,
// instanceIdPath together with componentInstanceSelector, alpha members that exist) and
// gangmap's own (podGroup sub-groups and extensions name existing components; topology has a name and a
// level). Every error carries its field path; all errors are returned, not only the first.
func ValidateStructure(k *Karta) field.ErrorList {
	var errs field.ErrorList
	if k.Metadata.Name == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), "a definition needs a name"))
	}
	refs := k.componentRefs()
	names := map[string]*field.Path{}
	for _, r := range refs {
		np := r.path.Child("name")
		switch {
		case r.def.Name == "":
			errs = append(errs, field.Required(np, "every component needs a name"))
			continue
		case names[r.def.Name] != nil:
			errs = append(errs, field.Duplicate(np, r.def.Name))
			continue
		}
		names[r.def.Name] = r.path
	}
	errs = append(errs, validateRoot(refs[0])...)
	for _, r := range refs[1:] {
		errs = append(errs, validateChild(r, names)...)
	}
	errs = append(errs, validateCycles(refs)...)
	for _, r := range refs {
		errs = append(errs, validateComponentShape(r)...)
	}
	errs = append(errs, validateSelectorsExclusive(refs)...)
	errs = append(errs, validateGang(k, names)...)
	errs = append(errs, validateExtensions(k, names)...)
	return errs
}

func validateRoot(r componentRef) field.ErrorList {
	var errs field.ErrorList
	c := r.def
	switch {
	case c.Kind == nil:
		errs = append(errs, field.Required(r.path.Child("kind"), "the root component needs the workload's group, version and kind"))
	default:
		if c.Kind.Version == "" {
			errs = append(errs, field.Required(r.path.Child("kind", "version"), "the root kind needs a version"))
		}
		if c.Kind.Kind == "" {
			errs = append(errs, field.Required(r.path.Child("kind", "kind"), "the root kind needs a kind"))
		}
		if c.Kind.Group == "" && c.Kind.Version != "v1" {
			errs = append(errs, field.Required(r.path.Child("kind", "group"), "only core (v1) kinds may have an empty group"))
		}
	}
	if c.OwnerRef != nil {
		errs = append(errs, field.Forbidden(r.path.Child("ownerRef"), "the root component has no owner"))
	}
	if c.StatusDefinition == nil {
		errs = append(errs, field.Required(r.path.Child("statusDefinition"), "the root component needs a statusDefinition (upstream rule)"))
	}
	return errs
}

func validateChild(r componentRef, names map[string]*field.Path) field.ErrorList {
	var errs field.ErrorList
	c := r.def
	switch {
	case c.OwnerRef == nil || *c.OwnerRef == "":
		errs = append(errs, field.Required(r.path.Child("ownerRef"), "a child component names its parent component"))
	case names[*c.OwnerRef] == nil:
		errs = append(errs, field.NotFound(r.path.Child("ownerRef"), *c.OwnerRef))
	case *c.OwnerRef == c.Name:
		errs = append(errs, field.Invalid(r.path.Child("ownerRef"), *c.OwnerRef, "a component cannot own itself"))
	}
	if c.Kind != nil && (c.Kind.Version == "" || c.Kind.Kind == "") {
		errs = append(errs, field.Invalid(r.path.Child("kind"), c.Kind.String(), "a component kind needs version and kind"))
	}
	if c.StatusDefinition != nil {
		// Upstream says statusDefinition "should be added only for the root component".
		errs = append(errs, field.Forbidden(r.path.Child("statusDefinition"), "only the root component has a statusDefinition"))
	}
	return errs
}

func validateCycles(refs []componentRef) field.ErrorList {
	parent := map[string]string{}
	paths := map[string]*field.Path{}
	for _, r := range refs {
		if r.def.OwnerRef != nil {
			parent[r.def.Name] = *r.def.OwnerRef
		}
		paths[r.def.Name] = r.path
	}
	var errs field.ErrorList
	for _, r := range refs {
		seen := sets.New(r.def.Name)
		for cur := parent[r.def.Name]; cur != ""; cur = parent[cur] {
			if seen.Has(cur) {
				errs = append(errs, field.Invalid(r.path.Child("ownerRef"), *r.def.OwnerRef, "ownership forms a cycle through component "+cur))
				break
			}
			seen.Insert(cur)
		}
	}
	return errs
}

func validateComponentShape(r componentRef) field.ErrorList {
	var errs field.ErrorList
	c := r.def
	if sd := c.SpecDefinition; sd != nil {
		shapes := 0
		if !sd.PodTemplateSpecPath.IsZero() {
			shapes++
		}
		if !sd.PodSpecPath.IsZero() {
			shapes++
		}
		if sd.FragmentedPodSpecDefinition != nil {
			shapes++
		}
		if shapes == 0 {
			errs = append(errs, field.Required(r.path.Child("specDefinition"),
				"an empty specDefinition gives the role no pod template: set one of podTemplateSpecPath, podSpecPath (with metadataPath) or fragmentedPodSpecDefinition, or remove specDefinition if the component has no pods"))
		}
		if shapes > 1 {
			errs = append(errs, field.Invalid(r.path.Child("specDefinition"), shapes,
				"expected exactly one of podTemplateSpecPath, podSpecPath (with metadataPath) or fragmentedPodSpecDefinition"))
		}
		if !sd.MetadataPath.IsZero() && sd.PodSpecPath.IsZero() {
			errs = append(errs, field.Invalid(r.path.Child("specDefinition", "metadataPath"), sd.MetadataPath.String(), "metadataPath goes with podSpecPath"))
		}
	}
	hasInstanceSel := c.PodSelector != nil && c.PodSelector.ComponentInstanceSelector != nil
	if !c.InstanceIDPath.IsZero() != hasInstanceSel {
		errs = append(errs, field.Invalid(r.path.Child("instanceIdPath"), c.InstanceIDPath.String(),
			"instanceIdPath and podSelector.componentInstanceSelector come together"))
	}
	if ps := c.PodSelector; ps != nil && ps.ComponentTypeSelector != nil {
		ts := ps.ComponentTypeSelector
		tp := r.path.Child("podSelector", "componentTypeSelector")
		if ts.KeyPath.IsZero() && len(ts.MatchLabels) == 0 {
			errs = append(errs, field.Required(tp.Child("keyPath"), "a componentTypeSelector needs keyPath or matchLabels"))
		}
		if ts.Value != nil && ts.KeyPath.IsZero() {
			errs = append(errs, field.Required(tp.Child("keyPath"), "value needs keyPath"))
		}
	}
	return errs
}

// validateSelectorsExclusive checks, where it can be decided statically, that the pod selectors
// of the pod-bearing components tell their pods apart: two components with the same
// componentTypeSelector (same keyPath text, value and matchLabels) would claim the same pods.
func validateSelectorsExclusive(refs []componentRef) field.ErrorList {
	var bearing []componentRef
	for _, r := range refs {
		if r.def.SpecDefinition != nil {
			bearing = append(bearing, r)
		}
	}
	if len(bearing) < 2 {
		return nil
	}
	var errs field.ErrorList
	seen := map[string]string{}
	for _, r := range bearing {
		sp := r.path.Child("podSelector", "componentTypeSelector")
		var ts *ComponentTypeSelector
		if r.def.PodSelector != nil {
			ts = r.def.PodSelector.ComponentTypeSelector
		}
		if ts == nil {
			continue // claims no pod by type; upstream allows it (instance selectors may place them)
		}
		key := selectorKey(ts)
		if other, ok := seen[key]; ok {
			errs = append(errs, field.Invalid(sp, ts.KeyPath.String(), fmt.Sprintf("the same selector as component %q: both would claim the same pods", other)))
			continue
		}
		seen[key] = r.def.Name
	}
	return errs
}

// selectorKey renders a componentTypeSelector canonically (matchLabels sorted).
func selectorKey(ts *ComponentTypeSelector) string {
	key := ts.KeyPath.String() + "\x00"
	if ts.Value != nil {
		key += "=" + *ts.Value
	}
	labels := sets.List(sets.KeySet(ts.MatchLabels))
	for _, l := range labels {
		key += "\x00" + l + "=" + ts.MatchLabels[l]
	}
	return key
}

func validateGang(k *Karta, names map[string]*field.Path) field.ErrorList {
	gs := k.Spec.OptimizationInstructions.GangScheduling
	if gs == nil {
		return nil
	}
	var errs field.ErrorList
	for i, pg := range gs.PodGroups {
		p := gangPath.Child("podGroups").Index(i)
		if pg.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "a pod group needs a name"))
		}
		if len(pg.Members) == 0 {
			errs = append(errs, field.Required(p.Child("members"), "a pod group needs members"))
		}
		for j, m := range pg.Members {
			if names[m.ComponentName] == nil {
				errs = append(errs, field.NotFound(p.Child("members").Index(j).Child("componentName"), m.ComponentName))
			}
		}
	}
	if pg := gs.PodGroup; pg != nil {
		p := gangPath.Child("podGroup")
		if pg.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "the pod group needs a name (it is part of the PodGroup name)"))
		}
		errs = append(errs, validateTopology(pg.Topology, p.Child("topology"))...)
		seen := sets.New[string]()
		for j, sg := range pg.SubGroups {
			sp := p.Child("subGroups").Index(j)
			switch {
			case names[sg.ComponentName] == nil:
				errs = append(errs, field.Invalid(sp.Child("componentName"), sg.ComponentName,
					"names no component (KAI's fallback accepts the definition but fails every pod's grouping with \"component not found\", so no pod is grouped); for gangmap, name one of the definition's components"))
			case seen.Has(sg.ComponentName):
				errs = append(errs, field.Duplicate(sp.Child("componentName"), sg.ComponentName))
			}
			seen.Insert(sg.ComponentName)
			errs = append(errs, validateTopology(sg.Topology, sp.Child("topology"))...)
		}
	}
	return errs
}

// validateTopology applies KAI's rule (validateTopologyConstraint): a topology name and at
// least one of the preferred or required levels.
func validateTopology(t *TopologyConstraint, p *field.Path) field.ErrorList {
	if t == nil {
		return nil
	}
	var errs field.ErrorList
	if t.TopologyName == "" {
		errs = append(errs, field.Required(p.Child("topologyName"), "a topology constraint names a KAI Topology (KAI's fallback fails every pod's grouping without one); for gangmap, set topologyName or remove the constraint"))
	}
	if t.PreferredTopologyLevel == "" && t.RequiredTopologyLevel == "" {
		errs = append(errs, field.Required(p.Child("requiredTopologyLevel"), "a topology constraint needs a preferred or required level (KAI's fallback fails every pod's grouping without one); for gangmap, set requiredTopologyLevel or preferredTopologyLevel"))
	}
	return errs
}

func validateExtensions(k *Karta, names map[string]*field.Path) field.ErrorList {
	ext := k.Spec.Gangmap
	if ext == nil {
		return nil
	}
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, c := range ext.Components {
		p := gangmapPath.Child("components").Index(i).Child("name")
		switch {
		case names[c.Name] == nil:
			errs = append(errs, field.NotFound(p, c.Name))
		case seen.Has(c.Name):
			errs = append(errs, field.Duplicate(p, c.Name))
		}
		seen.Insert(c.Name)
		if sl := c.SegmentLeader; sl != nil {
			lp := gangmapPath.Child("components").Index(i).Child("segmentLeader", "component")
			switch {
			case names[sl.Component] == nil:
				errs = append(errs, field.NotFound(lp, sl.Component))
			case sl.Component == c.Name:
				errs = append(errs, field.Invalid(lp, sl.Component, "the leader is another component than the segmented one"))
			}
			if c.PodIndexPath.IsZero() {
				errs = append(errs, field.Required(gangmapPath.Child("components").Index(i).Child("podIndexPath"), "segments with a leader place pods by their index (the leader has index 0): set the pod-side index expression"))
			}
		}
	}
	for i, n := range ext.Notes {
		if n.When.IsZero() {
			errs = append(errs, field.Required(gangmapPath.Child("notes").Index(i).Child("when"), "an object-side condition under which the plan gives the note"))
		}
		if n.Note == "" {
			errs = append(errs, field.Required(gangmapPath.Child("notes").Index(i).Child("note"), "the note's text"))
		}
	}
	if o := ext.OwnsNoPods; o != nil {
		if o.When.IsZero() {
			errs = append(errs, field.Required(gangmapPath.Child("ownsNoPods", "when"), "an object-side condition under which the workload creates no pods of its own"))
		}
		if o.Reason == "" {
			errs = append(errs, field.Required(gangmapPath.Child("ownsNoPods", "reason"), "say why the workload then creates no pods (the operator's code)"))
		}
	}
	if g := ext.Gang; g != nil {
		gp := gangmapPath.Child("gang")
		if g.PerReplicaOf != "" {
			if names[g.PerReplicaOf] == nil {
				errs = append(errs, field.NotFound(gp.Child("perReplicaOf"), g.PerReplicaOf))
			} else if c := k.component(g.PerReplicaOf); c.PodSelector == nil || c.PodSelector.ReplicaSelector == nil {
				errs = append(errs, field.Invalid(gp.Child("perReplicaOf"), g.PerReplicaOf,
					"a per-replica gang needs the component's podSelector.replicaSelector, so each pod can say which replica it is in"))
			}
		}
		if g.Startup != nil {
			if len(g.Startup.First) == 0 && g.Startup.FirstInstances.IsZero() && g.Startup.Holds.IsZero() {
				errs = append(errs, field.Required(gp.Child("startup", "first"), "name the components (first) or instances (firstInstances) whose pods are created first, or the roles the operator holds back (holds)"))
			}
			for i, n := range g.Startup.First {
				if names[n] == nil {
					errs = append(errs, field.NotFound(gp.Child("startup", "first").Index(i), n))
				}
			}
		}
	}
	return errs
}

// component returns the named component definition, or nil.
func (k *Karta) component(name string) *ComponentDefinition {
	for _, r := range k.componentRefs() {
		if r.def.Name == name {
			return r.def
		}
	}
	return nil
}

// DefinitionError is a definition that failed validation or compilation: every problem, each
// with its field path.
type DefinitionError struct {
	Name   string
	Origin string
	Errs   field.ErrorList
}

// Error names the definition and its origin and gives the first problem on the same line, so
// that a reader that shows one line (an Event's column, a log viewer) sees what is wrong (issue
// 31 point 8: "... is invalid:" with nothing after it); further problems follow, one a line.
func (e *DefinitionError) Error() string {
	switch len(e.Errs) {
	case 0:
		return fmt.Sprintf("definition %q (%s) is invalid", e.Name, e.Origin)
	case 1:
		return fmt.Sprintf("definition %q (%s) is invalid: %s", e.Name, e.Origin, e.Errs[0].Error())
	}
	s := fmt.Sprintf("definition %q (%s) is invalid (%d problems): %s", e.Name, e.Origin, len(e.Errs), e.Errs[0].Error())
	for _, fe := range e.Errs[1:] {
		s += "\n  " + fe.Error()
	}
	return s
}
