package definitions

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FieldExpr is one expression of a definition with its field path.
type FieldExpr struct {
	Field string
	Expr  Expr
}

// ObjectExpressions lists every set expression of k that reads the workload object (spec,
// scale, instance ids, status, suspend actions, gangmap additions), with its field path, in
// definition order. Pod-side expressions (selectors, grouping keys, filters) are not listed.
func ObjectExpressions(k *Karta) []FieldExpr {
	var out []FieldExpr
	add := func(p *field.Path, e Expr) {
		if !e.IsZero() {
			out = append(out, FieldExpr{Field: p.String(), Expr: e})
		}
	}
	for _, r := range k.componentRefs() {
		c := r.def
		add(r.path.Child("instanceIdPath"), c.InstanceIDPath)
		if sd := c.SpecDefinition; sd != nil {
			sp := r.path.Child("specDefinition")
			add(sp.Child("podTemplateSpecPath"), sd.PodTemplateSpecPath)
			add(sp.Child("podSpecPath"), sd.PodSpecPath)
			add(sp.Child("metadataPath"), sd.MetadataPath)
			if f := sd.FragmentedPodSpecDefinition; f != nil {
				fields := f.fields()
				for _, name := range slices.Sorted(maps.Keys(fields)) {
					add(sp.Child("fragmentedPodSpecDefinition", name), fields[name])
				}
			}
		}
		if s := c.ScaleDefinition; s != nil {
			sp := r.path.Child("scaleDefinition")
			add(sp.Child("replicasPath"), s.ReplicasPath)
			add(sp.Child("minReplicasPath"), s.MinReplicasPath)
			add(sp.Child("maxReplicasPath"), s.MaxReplicasPath)
		}
		if st := c.StatusDefinition; st != nil {
			sp := r.path.Child("statusDefinition")
			if st.PhaseDefinition != nil {
				add(sp.Child("phaseDefinition", "path"), st.PhaseDefinition.Path)
			}
			if st.ConditionsDefinition != nil {
				add(sp.Child("conditionsDefinition", "path"), st.ConditionsDefinition.Path)
			}
			for _, m := range st.StatusMappings.byName() {
				for i, sm := range m.matchers {
					if be := sm.ByExpression; be != nil {
						e := CELExpr(be.Expression)
						if be.ExpectedResult != nil {
							e = JQExpr(be.Expression)
						}
						add(sp.Child("statusMappings", string(m.status)).Index(i).Child("byExpression", "expression"), e)
					}
				}
			}
		}
		if sd := c.SuspendDefinition; sd != nil {
			for i, a := range sd.SuspendActions {
				add(r.path.Child("suspendDefinition", "suspendActions").Index(i).Child("path"), a.Path)
			}
			for i, a := range sd.ResumeActions {
				add(r.path.Child("suspendDefinition", "resumeActions").Index(i).Child("path"), a.Path)
			}
		}
	}
	if ext := k.Spec.Gangmap; ext != nil {
		for i, c := range ext.Components {
			cp := gangmapPath.Child("components").Index(i)
			add(cp.Child("podsPerReplicaPath"), c.PodsPerReplicaPath)
			add(cp.Child("segmentSizePath"), c.SegmentSizePath)
			if sl := c.SegmentLeader; sl != nil {
				add(cp.Child("segmentLeader", "policyPath"), sl.PolicyPath)
			}
			if o := c.Onboard; o != nil {
				add(cp.Child("onboard", "schedulerNamePath"), o.SchedulerNamePath)
				add(cp.Child("onboard", "labelsPath"), o.LabelsPath)
				add(cp.Child("onboard", "annotationsPath"), o.AnnotationsPath)
				for j, u := range o.Unreachable {
					add(cp.Child("onboard", "unreachable").Index(j).Child("when"), u.When)
				}
			}
		}
		if o := ext.OwnsNoPods; o != nil {
			add(gangmapPath.Child("ownsNoPods", "when"), o.When)
		}
		// spec.gangmap.notes[].when is left out: a note tests for a field that newer versions of
		// the kind have and older CRDs lack (JobSet spec.scheduling), so it is no drift.
		if g := ext.Gang; g != nil && g.Startup != nil {
			add(gangmapPath.Child("gang", "startup", "when"), g.Startup.When)
			add(gangmapPath.Child("gang", "startup", "firstInstances"), g.Startup.FirstInstances)
			add(gangmapPath.Child("gang", "startup", "holds"), g.Startup.Holds)
		}
	}
	return out
}

type namedMatchers struct {
	status   Status
	matchers []StatusMatcher
}

// byName lists the mappings in upstream's evaluation order.
func (m StatusMappings) byName() []namedMatchers {
	return []namedMatchers{
		{StatusResuming, m.Resuming}, {StatusSuspending, m.Suspending}, {StatusSuspended, m.Suspended},
		{StatusRunning, m.Running}, {StatusFailed, m.Failed}, {StatusCompleted, m.Completed},
		{StatusInitializing, m.Initializing}, {StatusDegraded, m.Degraded},
	}
}
