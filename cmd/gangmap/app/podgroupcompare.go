package app

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaiadmission"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/ownerskip"
	"github.com/gangmap/gangmap/podgrouper/core/workloadmap"
)

// ownedBy reports whether pg has an owner reference to the workload (by UID; offline, without
// UIDs, by kind and name).
func ownedBy(pg *v2alpha2.PodGroup, obj *unstructured.Unstructured) bool {
	return slices.ContainsFunc(pg.OwnerReferences, func(ref metav1.OwnerReference) bool {
		if obj.GetUID() != "" {
			return ref.UID == obj.GetUID()
		}
		return ref.Kind == obj.GetKind() && ref.Name == obj.GetName() && pg.Namespace == obj.GetNamespace()
	})
}

// comparePodGroups lists the planned PodGroups next to the existing ones owned by the workload.
func comparePodGroups(v *workloadView, obj *unstructured.Unstructured, existing []*v2alpha2.PodGroup, live bool) []*podGroupView {
	out := []*podGroupView{}
	owned := map[string]*v2alpha2.PodGroup{}
	var ownedNames []string
	for _, pg := range existing {
		if ownedBy(pg, obj) {
			owned[pg.Name] = pg
			ownedNames = append(ownedNames, pg.Name)
		}
	}
	slices.Sort(ownedNames)
	var planned []*gang.PodGroup
	if v.plan != nil {
		planned = v.plan.PodGroups
	}
	for _, pg := range planned {
		pv := &podGroupView{Name: pg.Name, Planned: plannedShape(pg, owned[pg.Name])}
		switch ex := owned[pg.Name]; {
		case ex != nil:
			pv.Existing = existingShape(ex)
			pv.Differences = differences(pv.Planned, pv.Existing)
			pv.Verdict = verdictMatch
			if len(pv.Differences) > 0 {
				pv.Verdict = verdictDiffers
			}
			delete(owned, pg.Name)
		case v.NativeInKAI:
			pv.Verdict = verdictNative
		case live || len(existing) > 0:
			pv.Verdict = verdictMissing
		default:
			pv.Verdict = verdictPlanned
		}
		out = append(out, pv)
	}
	for _, name := range ownedNames {
		ex := owned[name]
		if ex == nil {
			continue
		}
		pv := &podGroupView{Name: name, Existing: existingShape(ex), Verdict: verdictForeign}
		defaultName := name == fmt.Sprintf("pg-%s-%s", obj.GetName(), obj.GetUID()) || name == fmt.Sprintf("pg-%s-%s%s", obj.GetName(), obj.GetUID(), workloadmap.UngroupedSuffix)
		switch {
		case defaultName && obj.GetAnnotations()[ownerskip.SetBy] == ownerskip.SetByValue && !v.NativeInKAI:
			// gangmap marked the workload, so KAI's pod-grouper skips its pods: this PodGroup of
			// KAI's default shape is gangmap's own, for pods no gang of the plan takes
			// (workloadmap ungrouped), or KAI's from before the mark; the PodGroup does not say which.
			pv.Writer = markedDefaultWriter
		case defaultName:
			pv.Writer = "KAI's default grouper (pg-<name>-<uid>)"
			if v.NativeInKAI {
				pv.Writer = "KAI's " + obj.GetKind() + " plugin (pg-<name>-<uid>)"
			}
		}
		if !defaultName && ex.Annotations[kaikeys.Definition] != "" {
			pv.Writer = "gangmap (" + ex.Annotations[kaikeys.Definition] + "), for an older plan"
		}
		if len(planned) == 1 {
			for _, d := range differences(plannedShape(planned[0], nil), pv.Existing) {
				pv.Differences = append(pv.Differences, d+" (vs gangmap's "+planned[0].Name+")")
			}
		} else if len(planned) == 0 {
			pv.Differences = []string{"gangmap plans no PodGroup for this workload"}
		}
		out = append(out, pv)
	}
	return out
}

// markedDefaultWriter is the writer of a pg-<name>-<uid> PodGroup of a workload gangmap marked.
const markedDefaultWriter = "gangmap, for pods no gang of the plan takes (KAI's default shape pg-<name>-<uid>; KAI's pod-grouper skips a workload gangmap marked), or KAI's default grouper before the mark"

// plannedShape is the gang gangmap writes for pg over existing (nil: none yet): a sub-group the
// start rule defers (gang.SubGroup.Deferred) only once released, that is when existing has it,
// each released top-level one counted in minSubGroup.
func plannedShape(pg *gang.PodGroup, existing *v2alpha2.PodGroup) *podGroupShape {
	s := &podGroupShape{MinMember: pg.MinMember, MinSubGroup: pg.MinSubGroup, Pods: pg.Pods, GPUs: pg.GPUs}
	released := int32(0)
	for _, sg := range pg.SubGroups {
		if sg.Deferred && (existing == nil || !slices.ContainsFunc(existing.Spec.SubGroups, func(e v2alpha2.SubGroup) bool { return e.Name == sg.Name })) {
			continue
		}
		if sg.Deferred && sg.Parent == nil {
			released++
		}
		s.SubGroups = append(s.SubGroups, subGroupShapes([]*gang.SubGroup{sg})...)
	}
	if released > 0 && s.MinSubGroup != nil {
		s.MinSubGroup = ptr.To(*s.MinSubGroup + released)
	}
	return s
}

// admissions puts in each view of an existing PodGroup what KAI's scheduler does with it and
// the pods that name it (kai's pod-group-name annotation): the kaiadmission model's verdict.
func admissions(views []*podGroupView, existing []*v2alpha2.PodGroup, pods []*corev1.Pod) {
	byName := map[string]*v2alpha2.PodGroup{}
	for _, pg := range existing {
		byName[pg.Name] = pg
	}
	for _, pv := range views {
		pg := byName[pv.Name]
		if pg == nil || pv.Existing == nil {
			continue
		}
		var ps []kaiadmission.Pod
		for _, p := range pods {
			if p.Annotations[kaikeys.PodGroupName] == pg.Name {
				ps = append(ps, kaiadmission.PodFor(p))
			}
		}
		if len(ps) == 0 {
			continue
		}
		v := kaiadmission.Evaluate(pg, ps, nil)
		pv.Admission = &admissionView{Admitted: v.Admitted, Blocking: v.Blocking, Reason: v.Reason, Stranded: v.Stranded, Partial: v.Partial}
	}
}

// subGroupShapes are the shapes of the planned sub-groups sgs.
func subGroupShapes(sgs []*gang.SubGroup) []subGroupShape {
	out := make([]subGroupShape, len(sgs))
	for i, sg := range sgs {
		out[i] = subGroupShape{Name: sg.Name, MinMember: sg.MinMember, MinSubGroup: sg.MinSubGroup, Parent: ptr.Deref(sg.Parent, "")}
	}
	return out
}

func existingShape(pg *v2alpha2.PodGroup) *podGroupShape {
	s := &podGroupShape{MinMember: pg.Spec.MinMember, MinSubGroup: pg.Spec.MinSubGroup, Queue: pg.Spec.Queue}
	for _, sg := range pg.Spec.SubGroups {
		s.SubGroups = append(s.SubGroups, subGroupShape{Name: sg.Name, MinMember: sg.MinMember, MinSubGroup: sg.MinSubGroup, Parent: ptr.Deref(sg.Parent, "")})
	}
	return s
}

// differences lists, one line each, where the existing gang differs from the planned one.
func differences(planned, existing *podGroupShape) []string {
	var out []string
	if !ptr.Equal(planned.MinMember, existing.MinMember) {
		out = append(out, fmt.Sprintf("minMember: planned %s, existing %s", optInt(planned.MinMember), optInt(existing.MinMember)))
	}
	if !ptr.Equal(planned.MinSubGroup, existing.MinSubGroup) {
		out = append(out, fmt.Sprintf("minSubGroup: planned %s, existing %s", optInt(planned.MinSubGroup), optInt(existing.MinSubGroup)))
	}
	want := map[string]subGroupShape{}
	for _, sg := range planned.SubGroups {
		want[sg.Name] = sg
	}
	have := map[string]bool{}
	for _, sg := range existing.SubGroups {
		have[sg.Name] = true
		w, ok := want[sg.Name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("sub-group %s: not planned", sg.Name))
		case !ptr.Equal(w.MinMember, sg.MinMember) || !ptr.Equal(w.MinSubGroup, sg.MinSubGroup) || w.Parent != sg.Parent:
			out = append(out, fmt.Sprintf("sub-group %s: planned %s, existing %s", sg.Name, subGroupText(w), subGroupText(sg)))
		}
	}
	for _, sg := range planned.SubGroups {
		if !have[sg.Name] {
			out = append(out, fmt.Sprintf("sub-group %s: planned %s, missing", sg.Name, subGroupText(sg)))
		}
	}
	return out
}

func subGroupText(sg subGroupShape) string {
	s := "minMember " + optInt(sg.MinMember)
	if sg.MinSubGroup != nil {
		s = "minSubGroup " + optInt(sg.MinSubGroup)
	}
	if sg.Parent != "" {
		s += ", parent " + sg.Parent
	}
	return s
}
