package gang

import (
	"fmt"
	"math"
	"strconv"

	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/definitions"
)

// memberSegments are the segment sub-groups of one member (a role's share of one PodGroup).
// Two shapes, both KAI v0.17's own:
//
//   - role segments (KAI pytorch_grouper.go buildWorkerSubGroups): the role's sub-group becomes a
//     parent, minSubGroup = the number of segments, of the leaves <role>-0 … <role>-(n-1), each
//     with the segment constraint; a pod of index i joins <role>-(i / size)
//     (getPodSegmentIndex);
//   - leader segments (KAI lws_grouper.go buildSubGroupsWithSegmentation): the leader's pod has
//     index 0 and the role's pods 1 … R-1 of one index space of R pods; top-level segments
//     segment-0 … segment-(n-1), each with the constraint; pod i is in segment getSegmentIndex(i)
//     (i-1)/size when divides by size (the leader is an extra pod of the first segment),
//     else i/size. LeaderWorker: segment-0 is the parent (minSubGroup 2) of the leader's
//     sub-group and the role's sub-group, which holds the role's pods of segment 0
//     (handleLeaderInFirstSegment); LeaderExcluded: the leader keeps its own top-level sub-group
//     and the role's pods are all in segments (addExcludedLeaderSegments, which needs to
//     divide by size).
type memberSegments struct {
	size int64
	// leaves are, by segment index, the sub-group a pod of the role in that segment joins.
	leaves []*SubGroup
	// pods and mins are, by segment index, the role's pods in the segment and how many of them
	// the gang requires.
	pods []int64
	// parent is the role's own sub-group when it is the segments' parent (role segments).
	parent *SubGroup
	// leader: the index space starts with the leader's pod (leader segments); shifted says a pod
	// of index i is in segment (i-1)/size, not i/size.
	leader, shifted bool
}

// segmentIndex is the segment of the pod of index i (see memberSegments).
func (s *memberSegments) segmentIndex(i int64) int64 {
	if s.shifted {
		return (i - 1) / s.size
	}
	return i / s.size
}

// segmentPodGroup gives the PodGroup's members their role topology (Role.Topology, where the
// definition's sub-group mapping sets none) and the PodGroup the workload's topology (where the
// definition sets none), then builds the segments of every member whose role asks for them (see
// memberSegments). A request the PodGroup cannot hold is a TopologyIssue and the member keeps its
// plain sub-group.
func (p *Plan) segmentPodGroup(pg *PodGroup, budget *planBudget) error {
	if pg.Topology == nil && p.workloadTopo != nil {
		t := *p.workloadTopo
		pg.Topology = &t
	}
	for _, m := range pg.members {
		if sg := m.subGroup; sg != nil && m.role.Topology != nil {
			if sg.Topology == nil {
				t := *m.role.Topology
				sg.Topology = &t
			} else if *sg.Topology != *m.role.Topology {
				p.Notes = append(p.Notes, fmt.Sprintf("role %s: the definition's sub-group topology (%s) wins over the pod template's topology annotations (%s), as the definition's PodGroup topology wins over the workload's in KAI's Karta path", roleLabel(m.role), constraintText(*sg.Topology), constraintText(*m.role.Topology)))
			}
		}
	}
	for _, m := range pg.members {
		s := m.role.Segments
		if s == nil || m.subGroup == nil {
			continue
		}
		field := "spec.gangmap.components[" + m.role.component.Name + "].podIndexPath"
		var why string
		var err error
		switch {
		case m.role.StartupHold != "":
			p.Notes = append(p.Notes, fmt.Sprintf("role %s: not segmented while the start rule holds it (%s); its segments are written once its pods are due", roleLabel(m.role), m.role.StartupHold))
			continue
		case s.leader != nil:
			why, err = p.leaderSegments(pg, m, budget, field)
		case len(m.replicaLeaves) > 0:
			why = replicaSegments(m)
		default:
			why, err = pg.roleSegments(m, budget, field)
		}
		if err != nil {
			return err
		}
		if why != "" {
			p.topologyIssue(roleLabel(m.role), fmt.Sprintf("segments of %d pods (%s) in PodGroup %s: %s; not segmented", s.Size, s.SizeFrom, pg.Name, why))
			continue
		}
		if m.seg != nil && s.leader == nil && m.gangPods < m.pods && m.gangPods%s.Size != 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("role %s: its minimum %d is not a whole number of segments of %d: the gang requires exactly %d of its pods (the last required segment %d of %d); KAI's own PyTorchJob plugin would require whole segments, %d (pytorch_grouper.go buildWorkerSubGroups mandatorySegments)",
				roleLabel(m.role), m.gangPods, s.Size, m.gangPods, m.gangPods%s.Size, s.Size, min(m.pods, (m.gangPods+s.Size-1)/s.Size*s.Size)))
		}
	}
	return nil
}

// roleSegments builds role segments (see memberSegments) of m. It returns why not when the role
// cannot be segmented: a size above its pods here (KAI's docs: "not greater than the replica
// count") or more segments than KAI allows.
func (pg *PodGroup) roleSegments(m *member, budget *planBudget, field string) (string, error) {
	s := m.role.Segments
	if s.Size > m.pods {
		return fmt.Sprintf("the size is above the role's %d pods here (KAI docs/topology/segments.md: not greater than the replica count)", m.pods), nil
	}
	n := (m.pods + s.Size - 1) / s.Size
	if why, err := pg.reserveSegments(n, budget, field); why != "" || err != nil {
		return why, err
	}
	ms := &memberSegments{size: s.Size, parent: m.subGroup}
	parent := m.subGroup.Name
	for i := int64(0); i < n; i++ {
		leaf := &SubGroup{Name: SanitizeLabel(fmt.Sprintf("%s-%d", parent, i)), Parent: &parent, Segment: ptr.To(int32(i)), Topology: constraintCopy(s.Topology)}
		ms.leaves = append(ms.leaves, leaf)
		ms.pods = append(ms.pods, min(s.Size, m.pods-i*s.Size))
	}
	if why := pg.insertAfter(m.subGroup, ms.leaves); why != "" {
		return why, nil
	}
	m.seg = ms
	return "", nil
}

// replicaSegments puts the segment constraint on the per-replica leaves of m when a segment is
// one replica (the size equals the pods per replica: JobSet Jobs of parallelism = segment size);
// any other size would split or join replicas that gangmap keeps whole.
func replicaSegments(m *member) string {
	s := m.role.Segments
	if ppr := m.role.PodsPerReplica; s.Size != ppr {
		return fmt.Sprintf("the role's pods are in replicas of %d pods, each its own sub-group; gangmap segments such a role only at the replica size (%d)", ppr, ppr)
	}
	for i, leaf := range m.replicaLeaves {
		leaf.Topology, leaf.Segment = constraintCopy(s.Topology), ptr.To(int32(i))
	}
	return ""
}

// leaderSegments builds leader segments (see memberSegments) of m with its leader's member in pg.
func (p *Plan) leaderSegments(pg *PodGroup, m *member, budget *planBudget, field string) (string, error) {
	s := m.role.Segments
	var lm *member
	for _, o := range pg.members {
		if o.role.component == s.leader {
			lm = o
		}
	}
	switch {
	case lm == nil || lm.subGroup == nil:
		return fmt.Sprintf("the leader component %q has no pod in this PodGroup", s.leader.Name), nil
	case lm.pods != 1:
		return fmt.Sprintf("the leader role %s has %d pods here; a segment leader is one pod (index 0)", roleLabel(lm.role), lm.pods), nil
	case lm.role.StartupHold != "":
		p.Notes = append(p.Notes, fmt.Sprintf("role %s: not segmented while the start rule holds its leader %s (%s)", roleLabel(m.role), roleLabel(lm.role), lm.role.StartupHold))
		return "", nil
	}
	total := m.pods + 1
	if s.Size > total {
		return fmt.Sprintf("the size is above the %d pods of the leader and the role here (KAI lws_grouper.go getSegmentSize refuses it)", total), nil
	}
	ms := &memberSegments{size: s.Size, leader: true, shifted: (total-1)%s.Size == 0}
	if s.Policy == PolicyLeaderExcluded && !ms.shifted {
		return fmt.Sprintf("policy %s needs the role's %d pods to divide into segments of %d (KAI lws_grouper.go addExcludedLeaderSegments)", PolicyLeaderExcluded, m.pods, s.Size), nil
	}
	n := ms.segmentIndex(total-1) + 1
	if s.Policy == PolicyLeaderExcluded {
		n = (m.pods + s.Size - 1) / s.Size
	}
	if why, err := pg.reserveSegments(n, budget, field); why != "" || err != nil {
		return why, err
	}
	segs := make([]*SubGroup, n)
	ms.pods = make([]int64, n)
	for k := range segs {
		segs[k] = &SubGroup{Name: fmt.Sprintf("segment-%d", k), Segment: ptr.To(int32(k)), Topology: constraintCopy(s.Topology)}
	}
	for i := int64(1); i < total; i++ {
		ms.pods[ms.segmentIndex(i)]++
	}
	ms.leaves = segs
	switch s.Policy {
	case PolicyLeaderExcluded:
		// leader, segment-0 … : the role's own sub-group is replaced by the segments.
		if why := pg.replace(m.subGroup, segs); why != "" {
			return why, nil
		}
		m.subGroup = nil
	default:
		// segment-0 (leader, <role>), segment-1 …: the leader's and the role's sub-groups move
		// under segment-0; the role's sub-group holds its pods of segment 0.
		first := segs[0].Name
		if why := pg.replace(lm.subGroup, segs); why != "" {
			return why, nil
		}
		pg.moveToEnd(lm.subGroup, m.subGroup)
		lm.subGroup.Parent, m.subGroup.Parent = &first, &first
		ms.leaves = append([]*SubGroup{m.subGroup}, segs[1:]...)
		ms.parent = segs[0]
	}
	m.seg = ms
	return "", nil
}

// finish sets the counts of m's segments for the role minimum roleMin (see finish): segment k
// requires the role's pods of segment k that are among its first roleMin by index (KAI
// pytorch_grouper.go: segments past the role's minimum are elastic, minMember 0); a role
// segments' parent requires every segment (minSubGroup = their number, as KAI), a leader's
// segment-0 its two children (handleLeaderInFirstSegment). The parent's sub-group reports the
// role's pods.
func (s *memberSegments) finish(m *member, roleMin int64) {
	left := roleMin
	gpp := m.role.GPUsPerPod
	for k, leaf := range s.leaves {
		need := min(left, s.pods[k])
		left -= need
		leaf.MinMember, leaf.Pods = ptr.To(int32(need)), s.pods[k]
		leaf.GPUsPerPod, leaf.GPUs = gpp, gpp.Times(s.pods[k])
	}
	if par := s.parent; par != nil {
		par.MinMember = nil
		switch {
		case s.leader:
			par.MinSubGroup = ptr.To[int32](2)
			par.Pods = s.pods[0] + 1
		default:
			par.MinSubGroup = ptr.To(int32(len(s.leaves)))
			par.Pods, par.GPUsPerPod, par.GPUs = m.pods, gpp, gpp.Times(m.pods)
		}
	}
}

// reserveSegments takes n segment sub-groups from the plan's budget and checks KAI's bound on a
// role's segments and gangmap's on a PodGroup's sub-groups: why not, or a budget error.
func (pg *PodGroup) reserveSegments(n int64, budget *planBudget, field string) (string, error) {
	if n > MaxSegmentsPerRole {
		return fmt.Sprintf("%d segments, more than KAI allows a role (maxAllowedSegmentation %d)", n, MaxSegmentsPerRole), nil
	}
	if c := int64(len(pg.SubGroups)) + n; c > MaxSubGroupsPerPodGroup {
		return "", &TooLargeError{Field: field, PodGroup: pg.Name, Count: c, Max: MaxSubGroupsPerPodGroup}
	}
	return "", budget.take(n, field)
}

// insertAfter puts sgs right after sg in the PodGroup's sub-groups; why not when a name is taken.
func (pg *PodGroup) insertAfter(sg *SubGroup, sgs []*SubGroup) string {
	if why := pg.namesFree(sgs, nil); why != "" {
		return why
	}
	for i, o := range pg.SubGroups {
		if o == sg {
			out := append(append(append([]*SubGroup{}, pg.SubGroups[:i+1]...), sgs...), pg.SubGroups[i+1:]...)
			pg.SubGroups = out
			return ""
		}
	}
	return "internal: the role's sub-group is not in the PodGroup"
}

// replace puts sgs in the place of sg in the PodGroup's sub-groups.
func (pg *PodGroup) replace(sg *SubGroup, sgs []*SubGroup) string {
	if why := pg.namesFree(sgs, sg); why != "" {
		return why
	}
	for i, o := range pg.SubGroups {
		if o == sg {
			pg.SubGroups = append(append(append([]*SubGroup{}, pg.SubGroups[:i]...), sgs...), pg.SubGroups[i+1:]...)
			return ""
		}
	}
	return "internal: the role's sub-group is not in the PodGroup"
}

// moveToEnd appends sgs to the PodGroup's sub-groups (in that order), removed from where they
// were, keeping KAI's LWS order: segments, then the leader and the workers of segment-0.
func (pg *PodGroup) moveToEnd(sgs ...*SubGroup) {
	out := pg.SubGroups[:0:0]
	for _, o := range pg.SubGroups {
		keep := true
		for _, s := range sgs {
			keep = keep && o != s
		}
		if keep {
			out = append(out, o)
		}
	}
	pg.SubGroups = append(out, sgs...)
}

// namesFree says which of the new sub-groups' names another sub-group of the PodGroup (but
// except) has already.
func (pg *PodGroup) namesFree(sgs []*SubGroup, except *SubGroup) string {
	taken := map[string]bool{}
	for _, o := range pg.SubGroups {
		if o != except {
			taken[o.Name] = true
		}
	}
	for _, s := range sgs {
		if taken[s.Name] {
			return fmt.Sprintf("sub-group name %s is taken by another role", s.Name)
		}
	}
	return ""
}

// leafFor is the segment leaf of the pod placed at pl: by its index in the role (see
// rolePodIndex). perReplica is the plan's per-replica gang component (nil without).
func (s *memberSegments) leafFor(r *Role, pl *definitions.PodPlacement, perReplica *definitions.Component) (*SubGroup, error) {
	i, err := rolePodIndex(r, pl, perReplica)
	if err != nil {
		return nil, err
	}
	if s.leader && i == 0 {
		return nil, fmt.Errorf("role %s: the pod has index 0, which is its segment leader's", roleLabel(r))
	}
	k := s.segmentIndex(i)
	if k < 0 || k >= int64(len(s.leaves)) {
		return nil, notInPlan(fmt.Sprintf("%s index %d", roleLabel(r), i), "role %s: pod index %d is past its %d segments of %d pods", roleLabel(r), i, len(s.leaves), s.size)
	}
	return s.leaves[k], nil
}

// rolePodIndex is the pod's index among its role's pods in its PodGroup: the definition's
// podIndexPath value, offset by replica × pods per replica when the definition counts it within a
// replica (podReplicaIndexPath, else the component's own replica key: a JobSet pod's job-index
// over its Job's completion index), unless the replicas are the per-replica gangs themselves.
func rolePodIndex(r *Role, pl *definitions.PodPlacement, perReplica *definitions.Component) (int64, error) {
	if !pl.HasPodIndex {
		return 0, fmt.Errorf("role %s is segmented, but the pod's index cannot be read (it needs one to join its segment): %v", roleLabel(r), pl.PodIndexErr)
	}
	i := pl.PodIndex
	comp := r.component
	if comp == perReplica {
		return i, nil
	}
	switch {
	case pl.HasPodReplica:
		return replicaPodIndex(r, pl.PodReplica, i)
	case comp.ReplicaKey != nil:
		rk, ok := pl.ReplicaKeys[comp.Name]
		if !ok {
			return 0, fmt.Errorf("role %s is segmented, but the pod names no replica: %v", roleLabel(r), pl.ReplicaKeyErrors[comp.Name])
		}
		n, err := strconv.ParseInt(rk, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("role %s is segmented, but the pod's replica key %q is not a whole number", roleLabel(r), rk)
		}
		return replicaPodIndex(r, n, i)
	}
	return i, nil
}

// replicaPodIndex is replica × pods per replica + i, the index of pod i of that replica among the
// role's pods; an error naming the role when it passes int64 (the replica comes from the pod, and
// a wrapped product would put the pod in a low segment instead of refusing it).
func replicaPodIndex(r *Role, replica, i int64) (int64, error) {
	ppr := r.PodsPerReplica
	if ppr > 0 && replica > (math.MaxInt64-i)/ppr {
		return 0, fmt.Errorf("role %s is segmented, but the pod's replica index %d × %d pods per replica + its index %d passes %d", roleLabel(r), replica, ppr, i, int64(math.MaxInt64))
	}
	return replica*ppr + i, nil
}

func constraintCopy(t definitions.TopologyConstraint) *definitions.TopologyConstraint { return &t }

// constraintText renders a topology constraint for notes: "<topology>: required <level>".
func constraintText(t definitions.TopologyConstraint) string {
	return t.TopologyName + ": " + levels(t.RequiredTopologyLevel, t.PreferredTopologyLevel)
}

// asksForPlacement reports whether a member's role asks for a topology or segments of its own,
// which only sub-groups can carry: a PodGroup the definition leaves flat then gets one sub-group
// per role (as KAI's PyTorchJob plugin always writes its master and worker sub-groups).
func (pg *PodGroup) asksForPlacement() bool {
	for _, m := range pg.members {
		if m.role.Segments != nil || m.role.Topology != nil {
			return true
		}
	}
	return false
}
