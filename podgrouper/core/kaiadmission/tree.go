package kaiadmission

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// defaultSubGroup is KAI's name of the leaf of a PodGroup without sub-groups, and of the
// sub-group of a pod without the sub-group label (job_info.go DefaultSubGroup).
const defaultSubGroup = "default"

// node is one SubGroupSet (children) or PodSet (leaf, pods) of KAI's tree.
type node struct {
	name string
	leaf bool
	// min is a leaf's minAvailable; minSubGroup is a set's (nil: all children).
	min         int
	minSubGroup *int32
	children    []*node
	pods        []*Pod
	parent      *node
}

// buildTree is subgroup_info/factory.go FromPodGroup plus job_info.go setSubGroups: the root set
// takes spec.minSubGroup; a sub-group with children is a set with its minSubGroup, one without
// is a leaf whose minimum is its minMember (0 when unset); parents are matched lower-cased
// (formatParentName). Without sub-groups the root holds the "default" leaf of minimum
// max(spec.minMember, 1). The error is KAI's (a duplicate name, a missing parent): KAI then keeps
// no sub-group of the PodGroup.
func buildTree(pg *v2alpha2.PodGroup) (*node, map[string]*node, error) {
	root := &node{name: "", minSubGroup: pg.Spec.MinSubGroup}
	leaves := map[string]*node{}
	if len(pg.Spec.SubGroups) == 0 {
		m := int32(1)
		if pg.Spec.MinMember != nil {
			m = max(*pg.Spec.MinMember, 1)
		}
		d := &node{name: defaultSubGroup, leaf: true, min: int(m), parent: root}
		root.children = append(root.children, d)
		leaves[defaultSubGroup] = d
		return root, leaves, nil
	}
	all := map[string]*v2alpha2.SubGroup{}
	hasChildren := map[string]bool{}
	for i := range pg.Spec.SubGroups {
		sg := &pg.Spec.SubGroups[i]
		if _, dup := all[sg.Name]; dup {
			return nil, nil, fmt.Errorf("subgroup <%s> already exists", sg.Name)
		}
		all[sg.Name] = sg
		hasChildren[parentName(sg.Parent)] = true
	}
	nodes := map[string]*node{"": root}
	for i := range pg.Spec.SubGroups {
		sg := &pg.Spec.SubGroups[i]
		n := &node{name: sg.Name}
		if hasChildren[sg.Name] {
			n.minSubGroup = sg.MinSubGroup
		} else {
			n.leaf = true
			if sg.MinMember != nil {
				n.min = int(max(*sg.MinMember, 0))
			}
		}
		nodes[sg.Name] = n
	}
	for i := range pg.Spec.SubGroups {
		sg := &pg.Spec.SubGroups[i]
		p, ok := nodes[parentName(sg.Parent)]
		if !ok {
			return nil, nil, fmt.Errorf("parent subgroup <%s> of <%s> not found", parentName(sg.Parent), sg.Name)
		}
		n := nodes[sg.Name]
		n.parent = p
		p.children = append(p.children, n)
	}
	// Only leaves under the root are KAI's PodSets (GetDescendantPodSets); a parent cycle is
	// never reached from the root, and its pods are in no PodSet.
	var walk func(n *node)
	walk = func(n *node) {
		for _, c := range n.children {
			if c.leaf {
				leaves[c.name] = c
			} else {
				walk(c)
			}
		}
	}
	walk(root)
	return root, leaves, nil
}

func parentName(p *string) string {
	if p == nil {
		return ""
	}
	return strings.ToLower(*p)
}

// bound is a leaf's active allocated pods (podset.go GetNumActiveAllocatedTasks).
func (n *node) bound() int {
	c := 0
	for _, p := range n.pods {
		if p.State.allocated() {
			c++
		}
	}
	return c
}

// pending lists a leaf's pods KAI would allocate (pod_info.go ShouldAllocate), by name (KAI's
// task order prefers masters, heads and priorities; the count taken is the same).
func (n *node) pending() []*Pod {
	var out []*Pod
	for _, p := range n.pods {
		if p.State == Pending {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// minToSatisfy is GetMinMembersToSatisfy: a leaf's minimum; a set's minSubGroup, or the number
// of its children when unset.
func (n *node) minToSatisfy() int {
	if n.leaf {
		return n.min
	}
	if n.minSubGroup != nil {
		return int(*n.minSubGroup)
	}
	return len(n.children)
}

// members is GetNumActiveAllocatedMembers: a leaf's bound pods, a set's satisfied children
// (subgroupset.go GetNumActiveAllocatedDirectSubGroups).
func (n *node) members() int {
	if n.leaf {
		return n.bound()
	}
	c := 0
	for _, ch := range n.children {
		if ch.satisfied() {
			c++
		}
	}
	return c
}

// satisfied is IsMinRequirementSatisfied (a set) or bound >= minAvailable (a leaf).
func (n *node) satisfied() bool { return n.members() >= n.minToSatisfy() }

// ready is IsReadyForScheduling: a leaf has at least its minimum of alive, ungated pods; a set
// has at least K ready children.
func (n *node) ready() bool {
	if n.leaf {
		c := 0
		for _, p := range n.pods {
			if p.State.alive() && p.State != Gated {
				c++
			}
		}
		return c >= n.min
	}
	c := 0
	for _, ch := range n.children {
		if ch.ready() {
			c++
		}
	}
	return c >= n.minToSatisfy()
}

// sorted returns the children in KAI's order: session_plugins.go SubGroupOrderFn, which asks the
// subgrouporder plugin and breaks its ties by name.
func (n *node) sorted() []*node {
	out := append([]*node(nil), n.children...)
	sort.Slice(out, func(i, j int) bool {
		if c := orderByAllocationRatio(out[i].members(), out[i].minToSatisfy(), out[j].members(), out[j].minToSatisfy()); c != 0 {
			return c < 0
		}
		return out[i].name < out[j].name
	})
	return out
}

// orderByAllocationRatio is plugins/subgrouporder/subgroup_order.go orderByAllocationRatio
// (the same rule as v0.14's PodSetOrderFn for leaves): unsatisfied children tie and come first;
// among satisfied ones, required (threshold > 0) before optional, optional ones by fewer bound,
// required ones by the lower ratio of bound to threshold.
func orderByAllocationRatio(lCount, lThreshold, rCount, rThreshold int) int {
	lSat, rSat := lCount >= lThreshold, rCount >= rThreshold
	switch {
	case !lSat && !rSat:
		return 0
	case !lSat:
		return -1
	case !rSat:
		return 1
	case lThreshold == 0 && rThreshold > 0:
		return 1
	case rThreshold == 0 && lThreshold > 0:
		return -1
	case lThreshold == 0 && rThreshold == 0:
		return cmpInt(lCount, rCount)
	}
	lr, rr := float64(lCount)/float64(lThreshold), float64(rCount)/float64(rThreshold)
	switch {
	case lr < rr:
		return -1
	case rr < lr:
		return 1
	}
	return 0
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case b < a:
		return 1
	}
	return 0
}
