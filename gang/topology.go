package gang

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gangmap/gangmap/definitions"
)

// KAI's topology and segment annotation keys (KAI v0.17
// pkg/podgrouper/podgrouper/plugins/constants/constants.go: TopologyKey, SegmentSizeKey,
// SegmentTopologyRequiredPlacementKey, SegmentTopologyPreferredPlacementKey; the default grouper
// reads the three topology keys on the top owner, defaultgrouper/default_grouper.go).
const (
	AnnotationTopology          = "kai.scheduler/topology"
	AnnotationTopologyRequired  = "kai.scheduler/topology-required-placement"
	AnnotationTopologyPreferred = "kai.scheduler/topology-preferred-placement"
	AnnotationSegmentSize       = "kai.scheduler/segment-size"
	AnnotationSegmentRequired   = "kai.scheduler/segment-topology-required-placement"
	AnnotationSegmentPreferred  = "kai.scheduler/segment-topology-preferred-placement"
)

// The policies of a segment leader (LWS subGroupPolicyType, sigs.k8s.io/lws api
// SubGroupPolicyType; KAI lws_grouper.go getSegmentationPolicy defaults to LeaderWorker).
const (
	PolicyLeaderWorker   = "LeaderWorker"
	PolicyLeaderExcluded = "LeaderExcluded"
)

// MaxSegmentsPerRole is KAI's bound on the segments of one role (pytorch_grouper.go and
// lws_grouper.go maxAllowedSegmentation).
const MaxSegmentsPerRole = 10000

// Segmentation is what a role's annotations (or its definition) ask for: its pods split, by their
// index, into segments of Size pods, each its own sub-group with Topology (docs/topology/segments.md
// of KAI v0.17). Whether a PodGroup got the segments is in its sub-groups (SubGroup.Segment).
type Segmentation struct {
	// Size is the pods per segment; SizeFrom says where it was read (the definition's
	// segmentSizePath, the role's pod template or the workload annotation).
	Size     int64  `json:"size"`
	SizeFrom string `json:"sizeFrom"`
	// Topology is every segment's constraint: the kai.scheduler/topology name and the segment
	// placement levels.
	Topology definitions.TopologyConstraint `json:"topology"`
	// IndexPath is the definition's pod index expression that places each pod in its segment.
	IndexPath string `json:"indexPath"`
	// Leader is the leader role that joins the segments (LWS), Policy how (LeaderWorker or
	// LeaderExcluded); both "" without a leader.
	Leader string `json:"leader,omitempty"`
	Policy string `json:"policy,omitempty"`

	leader *definitions.Component
}

// TopologyIssue is a topology or segment request gangmap could not honour, with the reason; the
// plan writes the role (or PodGroup) without it. The grouper reports each as a Warning Event and
// a TopologyUnresolved finding, the CLI in plan and describe.
type TopologyIssue struct {
	// Role is the role's label ("" for the whole PodGroup or workload).
	Role   string `json:"role,omitempty"`
	Reason string `json:"reason"`
}

// annotationSource reads one KAI key where KAI reads it: the role's pod template first, then the
// workload (docs/topology/segments.md: "When both are set, the PodTemplate annotation wins").
type annotationSource struct {
	template, workload map[string]string
}

func (a annotationSource) get(key string) (value, from string) {
	if v := a.template[key]; v != "" {
		return v, "pod template annotation " + key
	}
	if v := a.workload[key]; v != "" {
		return v, "workload annotation " + key
	}
	return "", ""
}

type rolePlacementKey struct{}

// WithoutRolePlacement returns a context under which Build writes no segments and no per-role
// topology constraint (the grouper's --topology-segments=off, or a KAI release whose PodGroup has
// none); a plan whose roles ask for them says so once, with reason. The PodGroup's own constraint
// (the workload's kai.scheduler/topology annotations, the definition's) is kept: every KAI
// release has it.
func WithoutRolePlacement(ctx context.Context, reason string) context.Context {
	return context.WithValue(ctx, rolePlacementKey{}, reason)
}

// dropRolePlacement clears the roles' topology and segments when ctx says so (see
// WithoutRolePlacement), noting it once.
func (p *Plan) dropRolePlacement(ctx context.Context) {
	reason, ok := ctx.Value(rolePlacementKey{}).(string)
	if !ok {
		return
	}
	var asked []string
	for _, r := range p.Roles {
		if r.Topology != nil || r.Segments != nil {
			asked = append(asked, roleLabel(r))
			r.Topology, r.Segments = nil, nil
		}
	}
	if len(asked) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("roles %s ask for segments or a topology of their own; not written: %s", strings.Join(asked, ", "), reason))
	}
}

// readTopology reads, for every role, its own topology constraint (kai.scheduler/topology with
// kai.scheduler/topology-required-placement or -preferred-placement on the role's pod template)
// and its segmentation (see readSegmentation), and the PodGroup-level constraint of the workload
// annotations when the definition sets none. What cannot be honoured is a TopologyIssue.
func (p *Plan) readTopology(c *definitions.Compiled, workload map[string]string) {
	if pgTopo, ok := p.workloadTopology(workload); ok {
		p.workloadTopo = pgTopo
	}
	for _, r := range p.Roles {
		var tpl map[string]string
		if r.instance != nil && r.instance.Template != nil {
			tpl = r.instance.Template.Annotations
		}
		src := annotationSource{template: tpl, workload: workload}
		name, _ := src.get(AnnotationTopology)
		if req, pref := tpl[AnnotationTopologyRequired], tpl[AnnotationTopologyPreferred]; req != "" || pref != "" {
			if name == "" {
				p.topologyIssue(roleLabel(r), fmt.Sprintf("the pod template asks for a topology level (%s) but neither it nor the workload names a KAI Topology (%s): the role's sub-group gets no topology constraint", levels(req, pref), AnnotationTopology))
			} else {
				r.Topology = &definitions.TopologyConstraint{TopologyName: name, RequiredTopologyLevel: req, PreferredTopologyLevel: pref}
			}
		}
		p.readSegmentation(c, r, src, name)
	}
}

// workloadTopology is the PodGroup constraint of the workload's annotations (what KAI's default
// grouper reads on the top owner), with an issue when it names levels but no Topology.
func (p *Plan) workloadTopology(workload map[string]string) (*definitions.TopologyConstraint, bool) {
	name, req, pref := workload[AnnotationTopology], workload[AnnotationTopologyRequired], workload[AnnotationTopologyPreferred]
	switch {
	case req == "" && pref == "":
		return nil, false
	case name == "":
		p.topologyIssue("", fmt.Sprintf("the workload asks for a topology level (%s) but names no KAI Topology (%s): the PodGroup gets no topology constraint", levels(req, pref), AnnotationTopology))
		return nil, false
	}
	return &definitions.TopologyConstraint{TopologyName: name, RequiredTopologyLevel: req, PreferredTopologyLevel: pref}, true
}

// readSegmentation reads what the role asks for (see Segmentation): the size from the
// definition's segmentSizePath, else kai.scheduler/segment-size on the role's pod template, else
// on the workload; the placement levels and the topology name from the template, else the
// workload. A request that cannot be honoured is a TopologyIssue and the role is not segmented:
// a size that is not a whole number above 1 (KAI's docs: "Must be greater than 1"), no pod index
// in the definition, no topology name or no level (KAI ignores segment annotations then), an
// unknown leader policy. A leader role (another component's segmentLeader) is segmented with its
// component, never alone.
func (p *Plan) readSegmentation(c *definitions.Compiled, r *Role, src annotationSource, topology string) {
	comp := r.component
	if c.IsSegmentLeader(comp) {
		return
	}
	var raw, from string
	if r.instance != nil && r.instance.SegmentSize != nil && *r.instance.SegmentSize != 0 {
		raw, from = strconv.FormatInt(*r.instance.SegmentSize, 10), "spec.gangmap.components["+comp.Name+"].segmentSizePath"
	} else {
		raw, from = src.get(AnnotationSegmentSize)
	}
	if raw == "" {
		return
	}
	label := roleLabel(r)
	if comp.PodIndex == nil {
		if src.template[AnnotationSegmentSize] == "" && !strings.HasPrefix(from, "spec.gangmap") {
			p.Notes = append(p.Notes, fmt.Sprintf("role %s: the workload's %s is not applied to it: its definition gives its pods no index (spec.gangmap.components[].podIndexPath)", label, AnnotationSegmentSize))
			return
		}
		p.topologyIssue(label, fmt.Sprintf("%s asks for segments of %s pods, but the definition gives the role's pods no index to place them by (spec.gangmap.components[%s].podIndexPath): not segmented", from, raw, comp.Name))
		return
	}
	size, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || size <= 1 {
		p.topologyIssue(label, fmt.Sprintf("%s is %q: expected a whole number of pods per segment above 1 (KAI docs/topology/segments.md): not segmented", from, raw))
		return
	}
	req, _ := src.get(AnnotationSegmentRequired)
	pref, _ := src.get(AnnotationSegmentPreferred)
	switch {
	case topology == "":
		p.topologyIssue(label, fmt.Sprintf("%s asks for segments of %d pods, but neither the pod template nor the workload names a KAI Topology (%s); KAI ignores segment annotations then (docs/topology/segments.md): not segmented", from, size, AnnotationTopology))
		return
	case req == "" && pref == "":
		p.topologyIssue(label, fmt.Sprintf("%s asks for segments of %d pods, but sets no placement level (%s or %s); KAI writes no segment constraint then: not segmented", from, size, AnnotationSegmentRequired, AnnotationSegmentPreferred))
		return
	}
	s := &Segmentation{Size: size, SizeFrom: from, IndexPath: comp.PodIndex.Source(),
		Topology: definitions.TopologyConstraint{TopologyName: topology, RequiredTopologyLevel: req, PreferredTopologyLevel: pref}}
	if comp.SegmentLeader != nil {
		s.leader, s.Policy = comp.SegmentLeader, PolicyLeaderWorker
		if pol := r.instance.SegmentPolicy; pol != "" {
			s.Policy = pol
		}
		if s.Policy != PolicyLeaderWorker && s.Policy != PolicyLeaderExcluded {
			p.topologyIssue(label, fmt.Sprintf("spec.gangmap.components[%s].segmentLeader.policyPath gave %q: expected %s or %s: not segmented", comp.Name, s.Policy, PolicyLeaderWorker, PolicyLeaderExcluded))
			return
		}
		for _, lr := range p.Roles {
			if lr.component == comp.SegmentLeader {
				s.Leader = lr.Name
				break
			}
		}
	}
	r.Segments = s
}

func (p *Plan) topologyIssue(role, reason string) {
	p.TopologyIssues = append(p.TopologyIssues, TopologyIssue{Role: role, Reason: reason})
	if role != "" {
		p.Notes = append(p.Notes, "role "+role+": "+reason)
		return
	}
	p.Notes = append(p.Notes, reason)
}

func levels(req, pref string) string {
	switch {
	case req != "" && pref != "":
		return "required " + req + ", preferred " + pref
	case req != "":
		return "required " + req
	}
	return "preferred " + pref
}
