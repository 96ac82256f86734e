package gang

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/definitions"
)

// buildSubGroups gives every member a sub-group named after its role: first the members under
// each listed component (in the listed order, with that mapping's topology), then the members no
// listed component covers, so that every pod lands in exactly one leaf (KAI never schedules a
// pod of a PodGroup with sub-groups that lands in none).
//
// A role whose replicas are multi-pod units that its pods can name (its component has a
// podSelector.replicaSelector, more than one replica in this PodGroup, and more than one pod per
// replica: a JobSet replicated job of several multi-pod Jobs) gets a parent sub-group with one
// leaf per replica, <role>-<index>, so that KAI keeps each replica's pods together; the parent
// requires min replicas of its leaves.
//
// Every sub-group is taken from budget first; past it, the error names the role's replicasPath.
func (pg *PodGroup) buildSubGroups(mappings []definitions.SubGroupMapping, c *definitions.Compiled, perReplica *definitions.Component, budget *planBudget) error {
	covered := map[*member]bool{}
	add := func(m *member, topo *definitions.TopologyConstraint) error {
		field := m.role.component.Path.Child("scaleDefinition", "replicasPath").String()
		if err := budget.take(1, field); err != nil {
			return err
		}
		if len(pg.SubGroups) >= MaxSubGroupsPerPodGroup {
			return &TooLargeError{Field: field, PodGroup: pg.Name, Count: int64(len(pg.SubGroups)) + 1, Max: MaxSubGroupsPerPodGroup}
		}
		sg := &SubGroup{Name: m.role.Name, Topology: topo}
		m.subGroup = sg
		covered[m] = true
		pg.SubGroups = append(pg.SubGroups, sg)
		ppr := m.role.PodsPerReplica
		if comp := m.role.component; comp.ReplicaKey == nil || comp == perReplica || ppr < 2 || m.pods/ppr < 2 {
			return nil
		}
		if err := budget.take(m.pods/ppr, field); err != nil {
			return err
		}
		if n := int64(len(pg.SubGroups)) + m.pods/ppr; n > MaxSubGroupsPerPodGroup {
			return &TooLargeError{Field: field, PodGroup: pg.Name, Count: n, Max: MaxSubGroupsPerPodGroup}
		}
		parent := sg.Name
		for i := int64(0); i < m.pods/ppr; i++ {
			leaf := &SubGroup{Name: SanitizeLabel(fmt.Sprintf("%s-%d", sg.Name, i)), Parent: &parent}
			m.replicaLeaves = append(m.replicaLeaves, leaf)
			pg.SubGroups = append(pg.SubGroups, leaf)
		}
		return nil
	}
	for _, sm := range mappings {
		comp := c.Component(sm.ComponentName)
		for _, m := range pg.members {
			if !covered[m] && (m.role.component == comp || comp.IsAncestorOf(m.role.component)) {
				if err := add(m, sm.Topology); err != nil {
					return err
				}
			}
		}
	}
	for _, m := range pg.members {
		if !covered[m] {
			if err := add(m, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// finish sets the counts. With sub-groups: each leaf's minMember is its role's minimum (the
// gang pods; the held pods of a role the start rule defers, whose sub-groups are Deferred; 0 for
// a role whose pods have all finished), and minSubGroup counts the top-level sub-groups written
// now, that is all but the Deferred ones (at least 1): KAI takes the first minSubGroup of them
// in its order, ties by name (allocation_info.go collectTasksFromSubGroupSet), so the count is
// "all of them" and no name order can leave a required one out or let one of minimum 0 stand in
// for it. Without: minMember is the sum of the gang pods over all members, and at least 1,
// because minMember 0 would mean "no gang" for pods that exist.
func (pg *PodGroup) finish() error {
	var gangPods int64
	for _, m := range pg.members {
		pg.Pods += m.pods
		pg.GPUs = pg.GPUs.Plus(m.role.GPUsPerPod.Times(m.pods))
		gangPods += m.gangPods
		if m.seg != nil {
			m.seg.finish(m, m.gangPods) // a held role is never segmented (segmentPodGroup)
			continue
		}
		if m.subGroup != nil {
			m.finishSubGroups()
		}
	}
	if pg.Pods > math.MaxInt32 {
		return fmt.Errorf("PodGroup %s: %d pods do not fit a PodGroup's int32 counts", pg.Name, pg.Pods)
	}
	if len(pg.SubGroups) > 0 {
		written := int32(0)
		for _, sg := range pg.SubGroups {
			if sg.Parent == nil && !sg.Deferred {
				written++
			}
		}
		pg.MinSubGroup = ptr.To(max(written, 1))
		return nil
	}
	pg.MinMember = ptr.To(int32(max(gangPods, 1)))
	return nil
}

// finishSubGroups sets the member's sub-group (and per-replica leaves): pods, GPUs, minimums and
// whether the start rule defers them.
func (m *member) finishSubGroups() {
	sg := m.subGroup
	sg.Pods = m.pods
	sg.GPUsPerPod = m.role.GPUsPerPod
	sg.GPUs = m.role.GPUsPerPod.Times(m.pods)
	roleMin, leafMin, deferred := m.gangPods, m.role.PodsPerReplica, false
	if m.role.StartupHold != "" {
		if m.role.StartupFinished {
			roleMin, leafMin = 0, 0
		} else {
			roleMin, deferred = m.heldPods, true
		}
	}
	sg.Deferred = deferred
	if len(m.replicaLeaves) == 0 {
		sg.MinMember = ptr.To(int32(roleMin))
		return
	}
	ppr := m.role.PodsPerReplica
	sg.MinSubGroup = ptr.To(int32(roleMin / ppr))
	for _, leaf := range m.replicaLeaves {
		leaf.MinMember, leaf.Pods = ptr.To(int32(leafMin)), ppr
		leaf.GPUsPerPod, leaf.GPUs = m.role.GPUsPerPod, m.role.GPUsPerPod.Times(ppr)
		leaf.Deferred = deferred
	}
}

// applyOverrides applies the first min-member annotation present on the top owner
// (AnnotationMinMember, then AnnotationKAIBatchMinMember) to every PodGroup. A value that is not
// a whole number, is below 1, or (for AnnotationMinMember) is above a PodGroup's pods is refused,
// not applied. What a value means follows KAI's native plugins:
//   - on a PodGroup without sub-groups both set minMember, in pods (KAI's Job plugin);
//   - on a PodGroup with sub-groups, AnnotationKAIBatchMinMember counts sub-groups, as KAI's
//     JobSet plugin (computePodGroupMinSubGroup) does: minSubGroup = min(value, top-level
//     sub-groups), each sub-group keeping its own minimum;
//   - on a PodGroup with sub-groups, AnnotationMinMember counts pods: the PodGroup gets a flat
//     minMember of that many pods and its sub-groups require nothing of their own (leaves
//     minMember 0, parents minSubGroup 0), kept for placement and topology only. KAI's webhook
//     accepts it: minMember without minSubGroup at the root, a minMember on every leaf.
func (p *Plan) applyOverrides(annotations map[string]string) {
	for _, key := range []string{AnnotationMinMember, AnnotationKAIBatchMinMember} {
		v, ok := annotations[key]
		if !ok {
			continue
		}
		o := Override{Annotation: key, Value: v}
		n, err := strconv.ParseInt(v, 10, 32)
		switch {
		case err != nil:
			o.Reason = fmt.Sprintf("expected a whole number, got %q", v)
		default:
			o.Reason = p.checkOverride(key, int32(n))
		}
		if o.Reason == "" {
			for _, pg := range p.PodGroups {
				o.Effect = pg.override(key, int32(n))
			}
			o.Applied = true
		}
		p.Overrides = append(p.Overrides, o)
		return
	}
}

func (p *Plan) checkOverride(key string, n int32) string {
	if n < 1 {
		return fmt.Sprintf("%d is below 1", n)
	}
	for _, pg := range p.PodGroups {
		if (key == AnnotationMinMember || len(pg.SubGroups) == 0) && int64(n) > pg.Pods {
			return fmt.Sprintf("%d is above the %d pods of PodGroup %s", n, pg.Pods, pg.Name)
		}
	}
	return ""
}

// override applies one accepted annotation value to the PodGroup (see applyOverrides) and says
// what it set.
func (pg *PodGroup) override(key string, n int32) string {
	switch {
	case len(pg.SubGroups) == 0:
		pg.MinMember = ptr.To(n)
		return fmt.Sprintf("minMember %d", n)
	case key == AnnotationKAIBatchMinMember:
		top := int32(0)
		for _, sg := range pg.SubGroups {
			if sg.Parent == nil {
				top++
			}
		}
		pg.MinSubGroup = ptr.To(min(n, top))
		return fmt.Sprintf("minSubGroup %d of %d sub-groups (counted in sub-groups, as KAI's JobSet plugin does)", min(n, top), top)
	default:
		pg.MinMember, pg.MinSubGroup = ptr.To(n), nil
		for _, sg := range pg.SubGroups {
			if sg.MinSubGroup != nil {
				sg.MinSubGroup = ptr.To[int32](0)
			} else {
				sg.MinMember = ptr.To[int32](0)
			}
		}
		return fmt.Sprintf("flat minMember %d pods; sub-groups kept for placement with no minimum of their own", n)
	}
}

// ErrNotGrouped says the pod's role is in no gang of the definition: gangmap leaves the pod to KAI.
var ErrNotGrouped = errors.New("the pod's role is in no gang of the definition")

// ErrNotInPlan says the pod is in an instance or replica of its role that the plan does not
// count: the plan was built from an older version of the workload (a scale-up the caller has not
// seen yet), or the definition never names that instance (its instanceIdPath or replicasPath does
// not list it, or its role was counted as 0 pods). Errors that wrap it are *NotInPlanError.
var ErrNotInPlan = errors.New("the pod's instance is not in the plan")

// NotInPlanError is Assign's error for a pod outside the plan (errors.Is ErrNotInPlan). Instance
// names what the pod is in, as the plan names roles: "component", "component[instance]", with
// "replica r" when the pod's replica is the missing part.
type NotInPlanError struct {
	Instance string
	msg      string
}

// Error implements error.
func (e *NotInPlanError) Error() string { return e.msg }

// Is makes errors.Is(err, ErrNotInPlan) true.
func (e *NotInPlanError) Is(target error) bool { return target == ErrNotInPlan }

func notInPlan(instance, format string, args ...any) error {
	return &NotInPlanError{Instance: instance, msg: fmt.Sprintf(format, args...)}
}

// Assignment is where one pod goes.
type Assignment struct {
	// PodGroup is the planned PodGroup of the pod's gang; Name is the name of the PodGroup the pod
	// goes in: PodGroup.Name, except in the alpha form, where it is named by the pod's own
	// grouping-key values as KAI's fallback names it (AlphaPodGroupName).
	PodGroup *PodGroup
	Name     string
	// SubGroup is the pod's leaf sub-group; nil when the PodGroup has none.
	SubGroup *SubGroup
	Role     *Role
}

// Assign finds the PodGroup and sub-group of a pod placed in the workload's tree. It does no
// expression evaluation and no allocation beyond the result. Errors: ErrNotGrouped (wrapped)
// for a role in no gang; *NotInPlanError (ErrNotInPlan) for an instance or replica the plan does
// not have (the workload changed since the plan: rebuild from the fresh workload; or the
// definition never names it).
func (p *Plan) Assign(pl *definitions.PodPlacement) (*Assignment, error) {
	r := p.roleIndex.get(roleKey{pl.Component.Name, pl.InstanceID})
	if r == nil {
		inst := pl.Component.Name
		if pl.InstanceID != "" {
			inst += "[" + pl.InstanceID + "]"
		}
		return nil, notInPlan(inst, "component %q has no instance %q in the plan", pl.Component.Name, pl.InstanceID)
	}
	gang, ok := r.gang, r.grouped
	if !ok {
		if r.Pods == 0 {
			return nil, notInPlan(roleLabel(r), "role %s has 0 pods in the plan, but a pod of it exists", roleLabel(r))
		}
		return nil, fmt.Errorf("role %s: %w", roleLabel(r), ErrNotGrouped)
	}
	if pl.AlphaJudged && pl.AlphaGroup < len(p.alphaNames) {
		if pl.AlphaGroup < 0 {
			return nil, fmt.Errorf("role %s: the alpha podGroups filters reject this pod: %w", roleLabel(r), ErrNotGrouped)
		}
		if got := p.alphaNames[pl.AlphaGroup]; got != gang {
			return nil, fmt.Errorf("role %s: the alpha podGroups filters put this pod in pod group %q, but the plan counts the role in %q (filters that split one role between pod groups cannot be sized): %w", roleLabel(r), got, gang, ErrNotGrouped)
		}
	}
	key := ""
	if p.perReplica != nil {
		key, ok = pl.ReplicaKeys[p.perReplica.Name]
		if !ok {
			return nil, fmt.Errorf("role %s: the pod has no replica key for per-replica component %q", roleLabel(r), p.perReplica.Name)
		}
	}
	pg := p.gangIndex.get(gangKey{gang: gang, replica: key})
	if pg == nil {
		pg = p.gangIndex.get(gangKey{gang: gang, replica: key, role: r})
	}
	if pg == nil {
		return nil, notInPlan(fmt.Sprintf("%s replica %s", roleLabel(r), key), "role %s: replica %q of %q is not in the plan", roleLabel(r), key, p.perReplica.Name)
	}
	a := &Assignment{PodGroup: pg, Name: pg.Name, Role: r}
	if _, alpha := p.alphaMember[r]; alpha {
		// KAI's fallback names the pod's PodGroup by the pod's own grouping-key values.
		if pl.AlphaKeysErr != nil {
			return nil, fmt.Errorf("role %s: the pod's PodGroup name cannot be read from it (KAI's fallback groups it nowhere either): %w", roleLabel(r), pl.AlphaKeysErr)
		}
		a.Name = AlphaPodGroupName(p.ownerKey, pl.AlphaKeys...)
	}
	for _, m := range pg.members {
		if m.role != r {
			continue
		}
		a.SubGroup = m.subGroup
		if m.seg != nil {
			leaf, err := m.seg.leafFor(r, pl, p.perReplica)
			if err != nil {
				return nil, err
			}
			a.SubGroup = leaf
			break
		}
		if len(m.replicaLeaves) > 0 {
			name := r.component.Name
			rk, ok := pl.ReplicaKeys[name]
			if !ok {
				return nil, fmt.Errorf("role %s: the pod names no replica (it needs one to join its replica's sub-group): %v", roleLabel(r), pl.ReplicaKeyErrors[name])
			}
			i, err := strconv.Atoi(rk)
			if err != nil || i < 0 || i >= len(m.replicaLeaves) {
				return nil, notInPlan(fmt.Sprintf("%s replica %s", roleLabel(r), rk), "role %s: replica %q is not one of the %d planned replicas", roleLabel(r), rk, len(m.replicaLeaves))
			}
			a.SubGroup = m.replicaLeaves[i]
		}
		break
	}
	return a, nil
}

// Member is a role's share of one PodGroup.
type Member struct {
	Role *Role
	// Pods and GangPods are the role's pods in this PodGroup and how many the gang requires.
	Pods, GangPods int64
	// SubGroup is the role's sub-group here, or nil; with per-replica leaves it is their parent.
	SubGroup *SubGroup
}

// Members lists the roles of the PodGroup with their shares, in plan order.
func (pg *PodGroup) Members() []Member {
	out := make([]Member, 0, len(pg.members))
	for _, m := range pg.members {
		out = append(out, Member{Role: m.role, Pods: m.pods, GangPods: m.gangPods, SubGroup: m.subGroup})
	}
	return out
}

// Flatten rewrites every PodGroup with sub-groups as a flat gang, for a KAI whose PodGroup has no
// minSubGroup (KAI before v0.15, kai-releases.md §3; KAI's own JobSet plugin wrote flat PodGroups
// until v0.16): minMember is the sum of the gang pods of its roles (at least 1, as finish), and
// no sub-group is written or assigned (Assign then returns no SubGroup). Roles, pods and GPUs are
// unchanged. reason is added to Notes once when a PodGroup was flattened. A plan without
// sub-groups is left as it is.
func (p *Plan) Flatten(reason string) {
	flattened := false
	for _, pg := range p.PodGroups {
		if len(pg.SubGroups) == 0 {
			continue
		}
		var gangPods int64
		for _, m := range pg.members {
			gangPods += m.gangPods
			m.subGroup, m.replicaLeaves, m.seg = nil, nil, nil
		}
		pg.SubGroups, pg.MinSubGroup = []*SubGroup{}, nil
		if pg.MinMember == nil { // set already by a gangmap.io/min-member override: kept
			pg.MinMember = ptr.To(int32(max(gangPods, 1)))
		}
		flattened = true
	}
	if flattened && reason != "" {
		p.Notes = append(p.Notes, reason)
	}
}

// PodGroupOfReplica returns the plan's first PodGroup of the per-replica gang's replica key, or
// nil when no PodGroup has that replica (a replica the plan lacks, or a plan not per replica).
func (p *Plan) PodGroupOfReplica(key string) *PodGroup {
	for _, pg := range p.PodGroups {
		if pg.Replica != "" && pg.Replica == key {
			return pg
		}
	}
	return nil
}
