package app

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/runtime/kaitopology"
)

// placementPodGroup is describe's topology tree of one planned PodGroup (issue 30): its own
// constraint and its sub-groups as the plan nests them (a role over its segments, LWS segment-0
// over leader and workers), each with its constraint and the workload's pods the plan puts in it.
type placementPodGroup struct {
	PodGroup  string                          `json:"podGroup"`
	Topology  *definitions.TopologyConstraint `json:"topology,omitempty"`
	SubGroups []*placementSubGroup            `json:"subGroups"`
}

// placementSubGroup is one sub-group of a placementPodGroup.
type placementSubGroup struct {
	Name        string                          `json:"name"`
	Segment     *int32                          `json:"segment,omitempty"`
	MinMember   *int32                          `json:"minMember,omitempty"`
	MinSubGroup *int32                          `json:"minSubGroup,omitempty"`
	Topology    *definitions.TopologyConstraint `json:"topology,omitempty"`
	Children    []*placementSubGroup            `json:"children,omitempty"`
	Pods        []*placementPod                 `json:"pods,omitempty"`
}

// placementPod is one pod of a sub-group: its node and, live, that node's labels of the levels
// of the Topologies the plan names (NodeTopology: node label → value).
type placementPod struct {
	Name         string            `json:"name"`
	Phase        string            `json:"phase"`
	Node         string            `json:"node,omitempty"`
	NodeTopology map[string]string `json:"nodeTopology,omitempty"`
}

// maxPlacementNodes bounds the nodes describe reads for their topology labels (one GET each).
const maxPlacementNodes = 200

// buildPlacement is the topology tree of every planned PodGroup that has a constraint of its own
// or in a sub-group (nil when none has): the sub-groups nested by parent, the pods (views, placed
// by placePodView) under the sub-group the plan gives them.
func buildPlacement(plan *gang.Plan, views []*podView) []*placementPodGroup {
	if plan == nil {
		return nil
	}
	var out []*placementPodGroup
	for _, pg := range plan.PodGroups {
		has := pg.Topology != nil
		byName := map[string]*placementSubGroup{}
		var top []*placementSubGroup
		for _, sg := range pg.SubGroups {
			has = has || sg.Topology != nil
			n := &placementSubGroup{Name: sg.Name, Segment: sg.Segment, MinMember: sg.MinMember, MinSubGroup: sg.MinSubGroup, Topology: sg.Topology}
			byName[sg.Name] = n
			if sg.Parent == nil {
				top = append(top, n)
			} else if p := byName[*sg.Parent]; p != nil {
				p.Children = append(p.Children, n)
			}
		}
		if !has {
			continue
		}
		for _, pv := range views {
			if n := byName[pv.SubGroup]; pv.PodGroup == pg.Name && n != nil {
				n.Pods = append(n.Pods, &placementPod{Name: pv.Name, Phase: pv.Phase, Node: pv.Node})
			}
		}
		out = append(out, &placementPodGroup{PodGroup: pg.Name, Topology: pg.Topology, SubGroups: top})
	}
	return out
}

// walkPlacement calls f on every sub-group of the tree.
func walkPlacement(sgs []*placementSubGroup, f func(*placementSubGroup)) {
	for _, sg := range sgs {
		f(sg)
		walkPlacement(sg.Children, f)
	}
}

// addNodeTopology fills, live, each placed pod's NodeTopology from its node's labels of the
// levels of the Topologies the constraints name (each Topology and each node read once, at most
// maxPlacementNodes nodes), and notes a named Topology that does not exist or a level it lacks,
// as the grouper's TopologyNotFound finding does (docs/findings.md).
func (v *workloadView) addNodeTopology(ctx context.Context, r *kubeClients) {
	type use struct {
		c     definitions.TopologyConstraint
		where string
		more  int
	}
	var uses []*use
	note := func(where string, c *definitions.TopologyConstraint) {
		if c == nil || c.TopologyName == "" {
			return
		}
		if i := slices.IndexFunc(uses, func(u *use) bool { return u.c == *c }); i >= 0 {
			uses[i].more++
			return
		}
		uses = append(uses, &use{c: *c, where: where})
	}
	var pods []*placementPod
	for _, pg := range v.Placement {
		note("PodGroup "+pg.PodGroup, pg.Topology)
		walkPlacement(pg.SubGroups, func(sg *placementSubGroup) {
			note("sub-group "+sg.Name, sg.Topology)
			pods = append(pods, sg.Pods...)
		})
	}
	topologies := map[string]*kaitopology.Topology{}
	var levelKeys []string
	for _, u := range uses {
		c, where := u.c, u.where
		if n := u.more; n > 0 {
			where += fmt.Sprintf(" (and %d more with the same constraint)", n)
		}
		t, seen := topologies[c.TopologyName]
		if !seen {
			// A Topology that does not exist, or KAI's Topology API missing, is not found.
			u, err := r.dynamic.Resource(kaitopology.GroupVersionResource).Get(ctx, c.TopologyName, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				v.Notes = append(v.Notes, fmt.Sprintf("topology: %s names KAI Topology %q, which does not exist: KAI leaves it unscheduled", where, c.TopologyName))
			case err != nil:
				v.Notes = append(v.Notes, fmt.Sprintf("topology: reading KAI Topology %q: %v", c.TopologyName, err))
			default:
				t = ptr.To(kaitopology.FromUnstructured(u))
				for _, l := range t.Levels {
					levelKeys = append(levelKeys, l.NodeLabel)
				}
			}
			topologies[c.TopologyName] = t
		}
		for _, lv := range []string{c.RequiredTopologyLevel, c.PreferredTopologyLevel} {
			if t != nil && lv != "" && !t.HasLevel(lv) {
				v.Notes = append(v.Notes, fmt.Sprintf("topology: %s asks for level %q, not a level of Topology %q (%s)", where, lv, t.Name, strings.Join(t.LevelNames(), ", ")))
			}
		}
	}
	v.nodeTopology(ctx, r, pods, levelKeys)
}

// nodeTopology sets each pod's NodeTopology to its node's values of keys.
func (v *workloadView) nodeTopology(ctx context.Context, r *kubeClients, pods []*placementPod, keys []string) {
	if len(keys) == 0 {
		return
	}
	nodes := map[string]map[string]string{}
	skipped := 0
	for _, p := range pods {
		if p.Node == "" {
			continue
		}
		labels, read := nodes[p.Node]
		if !read {
			if len(nodes) >= maxPlacementNodes {
				skipped++
				continue
			}
			n, err := r.kube.CoreV1().Nodes().Get(ctx, p.Node, metav1.GetOptions{})
			if err != nil {
				v.Notes = append(v.Notes, fmt.Sprintf("topology: reading node %s: %v", p.Node, err))
			} else {
				labels = n.Labels
			}
			nodes[p.Node] = labels
		}
		for _, k := range keys {
			if val, ok := labels[k]; ok {
				if p.NodeTopology == nil {
					p.NodeTopology = map[string]string{}
				}
				p.NodeTopology[k] = val
			}
		}
	}
	if skipped > 0 {
		v.Notes = append(v.Notes, fmt.Sprintf("topology: the node labels of %d more pod(s) not read (at most %d nodes)", skipped, maxPlacementNodes))
	}
}

// printPlacement writes the Placement section: per PodGroup with a constraint, the tree role →
// segment → pods, each pod with its node and the node's topology labels.
func printPlacement(w io.Writer, v *workloadView) {
	if len(v.Placement) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Placement (topology constraints, the sub-groups and their pods):")
	tw := newTable(w, "")
	for _, pg := range v.Placement {
		_ = tw.Flush()
		fmt.Fprintf(w, "  PodGroup %s: %s\n", pg.PodGroup, constraintLabel(pg.Topology))
		printTree(tw, "  ", subGroupLines(pg.SubGroups))
	}
	_ = tw.Flush()
}

// subGroupLines are the trees of sub-groups: each sub-group's line, then its children and pods.
func subGroupLines(sgs []*placementSubGroup) []treeLine {
	out := make([]treeLine, len(sgs))
	for i, sg := range sgs {
		label, min := sg.Name, "min "+optInt(sg.MinMember)
		if sg.Segment != nil {
			label += fmt.Sprintf(" (segment %d)", *sg.Segment)
		}
		if sg.MinSubGroup != nil {
			min = "sub-groups " + optInt(sg.MinSubGroup)
		}
		out[i] = treeLine{text: fmt.Sprintf("%s\t%s   %s   pods %d", label, constraintLabel(sg.Topology), min, len(sg.Pods)), under: subGroupLines(sg.Children)}
		for _, p := range sg.Pods {
			out[i].under = append(out[i].under, treeLine{text: strings.TrimRight(fmt.Sprintf("%s\t%s   node %s   %s", p.Name, p.Phase, cmp.Or(p.Node, "<none>"), pairsText(p.NodeTopology, " ")), " ")})
		}
	}
	return out
}

// constraintLabel renders a constraint: "topology T, required L, preferred P", or "-".
func constraintLabel(c *definitions.TopologyConstraint) string {
	if c == nil {
		return "-"
	}
	s := "topology " + c.TopologyName
	if c.RequiredTopologyLevel != "" {
		s += ", required " + c.RequiredTopologyLevel
	}
	if c.PreferredTopologyLevel != "" {
		s += ", preferred " + c.PreferredTopologyLevel
	}
	return s
}

// pairsText renders m as k=v pairs sorted by key, joined by sep.
func pairsText(m map[string]string, sep string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, sep)
}
