package realkai

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// The topology of the segment tests (issue 30): a KAI Topology of two levels, zone and rack, over
// fake nodes labelled by both.
const (
	ZoneLabel    = "e2e.gangmap.io/zone"
	RackLabel    = "e2e.gangmap.io/rack"
	TopologyName = "e2e-zone-rack"
)

// Racks are fake GPU nodes in racks: racks racks from number first, nodesPerRack nodes of gpus
// GPUs each, rack r in zone r%2; every node also carries labels (a test's own bed label).
type Racks struct {
	Prefix                           string
	First, Count, NodesPerRack, GPUs int
	Labels                           map[string]string
}

// NodeSpec is the racks' nodes, named <prefix>-rack<r>-<n>, with ZoneLabel zone<r%2> and
// RackLabel rack<r>.
func (r Racks) NodeSpec() NodeSpec {
	spec := NodeSpec{GPUs: r.GPUs, Labels: r.Labels, PerNode: map[string]map[string]string{}}
	for rack := r.First; rack < r.First+r.Count; rack++ {
		for n := 0; n < r.NodesPerRack; n++ {
			name := fmt.Sprintf("%s-rack%d-%d", r.Prefix, rack, n)
			spec.Names = append(spec.Names, name)
			spec.PerNode[name] = map[string]string{ZoneLabel: fmt.Sprintf("zone%d", rack%2), RackLabel: fmt.Sprintf("rack%d", rack)}
		}
	}
	return spec
}

// RacksOfSubGroups reads the nodes of bound pods (those selected by nodes) and returns, per
// sub-group (the pods' kai.scheduler/subgroup-name), the racks its pods are on, sorted.
func (c *Cluster) RacksOfSubGroups(ctx context.Context, bound []corev1.Pod, nodes client.MatchingLabels) (map[string][]string, error) {
	var list corev1.NodeList
	if err := c.Client.List(ctx, &list, nodes); err != nil {
		return nil, err
	}
	rackOf := map[string]string{}
	for _, n := range list.Items {
		rackOf[n.Name] = n.Labels[RackLabel]
	}
	sets := map[string]map[string]bool{}
	for _, p := range bound {
		sg := p.Labels[kaikeys.SubGroupName]
		if sets[sg] == nil {
			sets[sg] = map[string]bool{}
		}
		sets[sg][rackOf[p.Spec.NodeName]] = true
	}
	out := map[string][]string{}
	for sg, racks := range sets {
		for r := range racks {
			out[sg] = append(out[sg], r)
		}
		sort.Strings(out[sg])
	}
	return out, nil
}

// SegmentsEachInOwnRack reads the racks of the bound pods' sub-groups (RacksOfSubGroups) and
// checks that there are segments of them, each on exactly one rack and no two on the same one; it
// returns each sub-group's rack ("segment worker-0: rack8") for the log, or what failed.
func (c *Cluster) SegmentsEachInOwnRack(ctx context.Context, bound []corev1.Pod, nodes client.MatchingLabels, segments int) ([]string, error) {
	racksOf, err := c.RacksOfSubGroups(ctx, bound, nodes)
	if err != nil {
		return nil, err
	}
	if len(racksOf) != segments {
		return nil, fmt.Errorf("%d sub-groups of bound pods, want %d segments: %v", len(racksOf), segments, racksOf)
	}
	var lines, problems []string
	owner := map[string]string{}
	for sg, racks := range racksOf {
		if len(racks) != 1 {
			problems = append(problems, fmt.Sprintf("segment %s spans racks %v", sg, racks))
			continue
		}
		if o, taken := owner[racks[0]]; taken {
			problems = append(problems, fmt.Sprintf("segments %s and %s share rack %s", o, sg, racks[0]))
		}
		owner[racks[0]] = sg
		lines = append(lines, fmt.Sprintf("segment %s: %s", sg, racks[0]))
	}
	sort.Strings(lines)
	if len(problems) > 0 {
		sort.Strings(problems)
		return lines, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return lines, nil
}

// RackSegmentsProblems checks that pg has the shape gangmap writes for a role of segments pods
// split into segments of size (issue 30; the shape of KAI's own PyTorchJob segments,
// pkg/podgrouper/podgrouper/plugins/kubeflow/pytorch/pytorch_grouper.go buildWorkerSubGroups):
// its sub-groups are the role
// (minSubGroup segments) and then <role>-0 … <role>-<segments-1>, each under the role, with
// minMember size and the required rack level of TopologyName. It returns every difference, none
// when the shape is right.
func RackSegmentsProblems(pg *v2alpha2.PodGroup, role string, segments int, size int32) []string {
	sgs := pg.Spec.SubGroups
	if len(sgs) != segments+1 {
		return []string{fmt.Sprintf("%d sub-groups, want %s and its %d segments", len(sgs), role, segments)}
	}
	var problems []string
	differs := func(what string, got, want any) {
		if !reflect.DeepEqual(got, want) {
			problems = append(problems, fmt.Sprintf("%s: got %v, want %v", what, got, want))
		}
	}
	differs("sub-group 0 name", sgs[0].Name, role)
	differs(role+" minSubGroup", ptr.Deref(sgs[0].MinSubGroup, -1), int32(segments))
	for i, sg := range sgs[1:] {
		differs(fmt.Sprintf("sub-group %d name", i+1), sg.Name, fmt.Sprintf("%s-%d", role, i))
		differs(sg.Name+" parent", ptr.Deref(sg.Parent, ""), role)
		differs(sg.Name+" minMember", ptr.Deref(sg.MinMember, -1), size)
		if sg.TopologyConstraint == nil {
			problems = append(problems, sg.Name+": no topology constraint")
			continue
		}
		differs(sg.Name+" topology", sg.TopologyConstraint.Topology, TopologyName)
		differs(sg.Name+" required level", sg.TopologyConstraint.RequiredTopologyLevel, RackLabel)
	}
	return problems
}
