package gang

import (
	"context"
	"fmt"
	"strconv"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
)

// gangSpec is one gang of the definition before it is split per replica.
type gangSpec struct {
	name      string
	roles     []*Role
	subGroups []definitions.SubGroupMapping // nil: no sub-groups
	topology  *definitions.TopologyConstraint
}

// buildGangs decides the gangs, splits them per replica where the definition says so, and fills
// their members and sub-groups.
func (p *Plan) buildGangs(ctx context.Context, c *definitions.Compiled, w *definitions.Workload, ownerKey string) error {
	specs, err := p.gangSpecs(ctx, c)
	if err != nil {
		return err
	}
	p.perReplica = c.PerReplicaOf
	if p.perReplica == nil {
		p.perReplica = alphaReplicaComponent(c)
	}
	keys, err := p.replicaKeys(w, c.PerReplicaOf == nil, specs)
	if err != nil {
		return err
	}
	p.ownerKey = ownerKey
	budget := &planBudget{}
	if c.IsAlphaForm() {
		if err := p.buildAlphaPodGroups(ctx, c, specs, keys, budget); err != nil {
			return err
		}
		return p.sumGPUs()
	}
	for _, gs := range specs {
		for _, key := range keys {
			if err := budget.take(1, ""); err != nil {
				return err
			}
			pg := &PodGroup{Name: PodGroupName(ownerKey, gs.name, key), Gang: gs.name, Replica: key, Topology: gs.topology, SubGroups: []*SubGroup{}}
			for _, r := range gs.roles {
				m, err := p.share(r, int64(len(keys)))
				if err != nil {
					return err
				}
				if m.pods > 0 {
					if err := budget.take(1, ""); err != nil {
						return err
					}
					pg.members = append(pg.members, m)
				}
			}
			if len(pg.members) == 0 {
				continue // nothing to group: never a PodGroup with a made-up size
			}
			if gs.subGroups != nil || pg.asksForPlacement() || pg.defersAGang() {
				if err := pg.buildSubGroups(gs.subGroups, c, p.perReplica, budget); err != nil {
					return err
				}
			}
			if err := p.segmentPodGroup(pg, budget); err != nil {
				return err
			}
			if err := pg.finish(); err != nil {
				return err
			}
			p.PodGroups = append(p.PodGroups, pg)
			p.gangIndex.set(gangKey{gang: gs.name, replica: key}, pg)
			for _, m := range pg.members {
				m.role.gang, m.role.grouped = gs.name, true
			}
		}
	}
	return p.sumGPUs()
}

// defersAGang reports whether a member of the PodGroup is a role the start rule holds until the
// operator creates its pods (not one whose pods have finished) with more than one pod of its own
// minimum. A flat PodGroup cannot defer it: its pods would join the gang already admitted and
// KAI's elastic phase binds them one at a time (allocation_info.go collectTasksFromSubGroupSet,
// getNumTasksToAllocate: one task per attempt once the minimum is met), so a Volcano task with
// dependsOn could run on part of its pods. Such a PodGroup gets a sub-group per role instead
// (buildSubGroups), whose held one is Deferred and later written with its own minimum (finish):
// the held pods then start together. A held role of one pod needs none: one pod is whole (an
// MPIJob's launcher with launcherCreationPolicy WaitForWorkersReady keeps the flat PodGroup
// KAI's own MPI plugin writes).
func (pg *PodGroup) defersAGang() bool {
	for _, m := range pg.members {
		if m.role.StartupHold != "" && !m.role.StartupFinished && m.heldPods > 1 {
			return true
		}
	}
	return false
}

// sumGPUs sets each role's gang and total GPUs and the plan's total. Errors: a count out of
// range (MaxGPUs, checked arithmetic: a role's per-pod GPUs times its pods, or the sum over the
// roles), an error on the workload rather than a wrapped-around negative count.
func (p *Plan) sumGPUs() error {
	for _, r := range p.Roles {
		r.GangGPUs, r.GPUs = r.GPUsPerPod.Times(r.GangPods), r.GPUsPerPod.Times(r.Pods)
		if r.GPUs.Saturated() {
			return fmt.Errorf("role %q: %s devices per pod times %d pods is more than gangmap counts (%s devices, gang.MaxGPUs)",
				r.Name, r.GPUsPerPod, r.Pods, MaxGPUs)
		}
		p.TotalGPUs = p.TotalGPUs.Plus(r.GPUs)
	}
	if p.TotalGPUs.Saturated() {
		return fmt.Errorf("the roles' GPUs sum to more than gangmap counts (%s devices, gang.MaxGPUs)", MaxGPUs)
	}
	return nil
}

// gangSpecs reads the gang hints: the current podGroup form (one gang, optional sub-groups), the
// alpha podGroups form (one gang per entry, over its members' roles), or, without hints, one
// gang of every role named after the root component.
func (p *Plan) gangSpecs(ctx context.Context, c *definitions.Compiled) ([]*gangSpec, error) {
	gs := c.Loaded.Karta.Spec.OptimizationInstructions.GangScheduling
	switch {
	case gs != nil && gs.PodGroup != nil:
		// KAI names the PodGroup pg-<UID>-<podGroup.name> as written; gangmap accepts any name
		// and writes it as a DNS label (lower case: SanitizeLabel), which KAI's name needs.
		spec := &gangSpec{name: SanitizeLabel(gs.PodGroup.Name), roles: p.Roles, topology: gs.PodGroup.Topology}
		if len(gs.PodGroup.SubGroups) > 0 {
			spec.subGroups = gs.PodGroup.SubGroups
		}
		return []*gangSpec{spec}, nil
	case gs != nil && len(gs.PodGroups) > 0:
		for _, g := range gs.PodGroups {
			p.alphaNames = append(p.alphaNames, SanitizeLabel(g.Name))
		}
		return p.alphaGangs(ctx, c, gs.PodGroups)
	default:
		return []*gangSpec{{name: SanitizeLabel(c.Root().Name), roles: p.Roles}}, nil
	}
}

// alphaGangs places each role in the first alpha pod group whose member is the role's own
// component (direct mentions first) or an ancestor of it, and whose filters hold on the role's
// pod template, or read pod labels or annotations the template lacks (then each pod is judged
// on itself in Assign). Roles in no gang are noted and left to KAI.
func (p *Plan) alphaGangs(ctx context.Context, c *definitions.Compiled, groups []definitions.PodGroupDefinition) ([]*gangSpec, error) {
	specs := make([]*gangSpec, len(groups))
	for i, g := range groups {
		specs[i] = &gangSpec{name: SanitizeLabel(g.Name)}
	}
	for _, r := range p.Roles {
		m, ok, err := p.alphaMemberOf(ctx, c, r)
		if err != nil {
			return nil, err
		}
		if !ok {
			p.Notes = append(p.Notes, fmt.Sprintf("role %s is in no pod group of the definition; gangmap leaves its pods to KAI", roleLabel(r)))
			continue
		}
		if p.alphaMember == nil {
			p.alphaMember = map[*Role]definitions.AlphaMember{}
		}
		p.alphaMember[r] = m
		specs[m.Group].roles = append(specs[m.Group].roles, r)
	}
	return specs, nil
}

// alphaMemberOf is the alpha pod group member that takes role r's pods (see alphaGangs); ok is
// false when none does.
func (p *Plan) alphaMemberOf(ctx context.Context, c *definitions.Compiled, r *Role) (definitions.AlphaMember, bool, error) {
	var tplPod map[string]any
	for _, cand := range c.AlphaCandidates(r.component) {
		if len(c.AlphaFilters[cand.Group][cand.Member]) > 0 && tplPod == nil {
			var err error
			if tplPod, err = templatePod(r); err != nil {
				return definitions.AlphaMember{}, false, err
			}
		}
		ok, err := c.PassesAlphaFilters(ctx, cand.Group, cand.Member, tplPod)
		if err != nil {
			return definitions.AlphaMember{}, false, err
		}
		if ok {
			return cand, true, nil
		}
		var labels, annotations map[string]string
		if r.instance != nil && r.instance.Template != nil {
			labels, annotations = r.instance.Template.Labels, r.instance.Template.Annotations
		}
		if c.AlphaFiltersReadAbsentMetadata(cand, labels, annotations) {
			p.Notes = append(p.Notes, fmt.Sprintf("role %s: the filters of podGroups[%d].members[%d] read pod labels or annotations its template does not set (the operator sets them): the plan counts the role in pod group %q, and each pod joins it only if the filters hold on the pod itself (as KAI's fallback judges them); a pod they reject is left to KAI", roleLabel(r), cand.Group, cand.Member, c.Loaded.Karta.Spec.OptimizationInstructions.GangScheduling.PodGroups[cand.Group].Name))
			return cand, true, nil
		}
	}
	return definitions.AlphaMember{}, false, nil
}

// templatePod renders a role's pod template as a pod (metadata and spec), so that pod-side
// filters can be judged in a plan before any pod exists.
func templatePod(r *Role) (map[string]any, error) {
	if r.instance == nil || r.instance.Template == nil {
		return map[string]any{"metadata": map[string]any{}, "spec": map[string]any{}}, nil
	}
	return expr.FromObject(r.instance.Template)
}

// replicaKeys lists the gang keys: [""] for a whole-workload gang, or "0".."R-1" for the R
// replicas of the per-replica component (its replicasPath; 1 without one). inferred says the
// per-replica component comes from the alpha form's grouping keys (alphaReplicaComponent), not
// from spec.gangmap.gang.perReplicaOf: then a component whose replicas cannot be counted gives
// one gang for all replicas, and R may come from its roles (alphaReplicaCount), with a note.
func (p *Plan) replicaKeys(w *definitions.Workload, inferred bool, specs []*gangSpec) ([]string, error) {
	if p.perReplica == nil {
		return []string{""}, nil
	}
	rc := w.Component(p.perReplica.Name)
	if inferred {
		if why := p.alphaUnsplittable(rc, specs); why != "" {
			p.Notes = append(p.Notes, why)
			p.perReplica = nil
			return []string{""}, nil
		}
	}
	if len(rc.Instances) != 1 {
		return nil, fmt.Errorf("spec.gangmap.gang.perReplicaOf: component %q has %d instances on this workload, so its replicas cannot be counted (KAI's fallback has no per-replica gangs: it would make one PodGroup of every pod); for gangmap, name a single-instance component that counts the replicas (a component without instanceIdPath whose replicasPath is the number of replicas, e.g. a kind-less \"replica\" component above the roles)", p.perReplica.Name, len(rc.Instances))
	}
	n := int64(1)
	if p.perReplica.Replicas != nil {
		n = 0
		if v := rc.Instances[0].Replicas; v != nil {
			n = *v
		}
	}
	if n < 0 {
		return nil, fmt.Errorf("%s: expected a count >= 0, got %d", p.perReplica.Path.Child("scaleDefinition", "replicasPath"), n)
	}
	if inferred {
		n = p.alphaReplicaCount(n)
	}
	if n > MaxPlanElements {
		// Refused before the keys are allocated; buildGangs counts the PodGroups themselves.
		return nil, &TooLargeError{Field: p.perReplica.Path.Child("scaleDefinition", "replicasPath").String(), Count: n, Max: MaxPlanElements}
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	return keys, nil
}

// share is a role's part of one gang: all of it, or 1/R of it in each of R per-replica gangs.
// Roles outside the per-replica component's subtree, and counts that do not divide evenly, are
// errors: the definition's scale convention disagrees with its gang shape.
func (p *Plan) share(r *Role, gangs int64) (*member, error) {
	if p.perReplica == nil {
		return &member{role: r, pods: r.Pods, gangPods: r.GangPods, heldPods: r.HeldPods}, nil
	}
	if p.perReplica != r.component && !p.perReplica.IsAncestorOf(r.component) {
		return nil, fmt.Errorf("spec.gangmap.gang.perReplicaOf: role %s is not under per-replica gang component %q (KAI's fallback has no per-replica gangs: it would make one PodGroup of every pod); for gangmap, name a component above every role of the gang, or move the role under it", roleLabel(r), p.perReplica.Name)
	}
	if r.Pods%gangs != 0 || r.GangPods%gangs != 0 || r.HeldPods%gangs != 0 {
		return nil, fmt.Errorf("%s: role %s: %d pods (gang %d) do not divide evenly among %d replicas of %q (KAI's fallback would size one PodGroup at the product of the counts along the tree); for gangmap, make the role's replicasPath count its units across the whole workload (replicas × units per replica) and its pods per unit spec.gangmap.components[].podsPerReplicaPath",
			r.component.Path.Child("scaleDefinition", "replicasPath"), roleLabel(r), r.Pods, r.GangPods, gangs, p.perReplica.Name)
	}
	return &member{role: r, pods: r.Pods / gangs, gangPods: r.GangPods / gangs, heldPods: r.HeldPods / gangs}, nil
}
