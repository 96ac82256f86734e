package kaiadmission

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/utils/ptr"

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
}

// buildTree returns the PodGroup's root set and its leaves by name. Without sub-groups the root
// holds the "default" leaf of minimum max(spec.minMember, 1) (job_info.go setSubGroups); a leaf's
// minimum is its minMember (0 when unset).
//
// With tree (v0.15 and later) it is subgroup_info/factory.go FromPodGroup: the root set takes
// spec.minSubGroup; a sub-group with children is a set with its minSubGroup, one without is a
// leaf; parents are matched lower-cased (formatParentName). The error is KAI's (a duplicate name,
// a missing parent): KAI then keeps no sub-group of the PodGroup.
//
// Without tree (v0.9 to v0.14) it is one flat list of leaves (the sub-groups without children),
// all of them required (job_info.go setSubGroups and IsReadyForScheduling at v0.14.7): the root
// is a set over them with no minSubGroup, so that ready and satisfied mean "every leaf" as there.
func buildTree(pg *v2alpha2.PodGroup, tree bool) (*node, map[string]*node, error) {
	root := &node{}
	if tree {
		root.minSubGroup = pg.Spec.MinSubGroup
	}
	leaves := map[string]*node{}
	if len(pg.Spec.SubGroups) == 0 {
		d := &node{name: defaultSubGroup, leaf: true, min: int(max(ptr.Deref(pg.Spec.MinMember, 1), 1))}
		root.children, leaves[defaultSubGroup] = []*node{d}, d
		return root, leaves, nil
	}
	hasChildren, seen := map[string]bool{}, map[string]bool{}
	for _, sg := range pg.Spec.SubGroups {
		hasChildren[parentName(sg.Parent)] = true
	}
	nodes := map[string]*node{"": root}
	for _, sg := range pg.Spec.SubGroups {
		dup := seen[sg.Name]
		if dup && tree {
			return nil, nil, fmt.Errorf("subgroup <%s> already exists", sg.Name)
		}
		seen[sg.Name] = true
		n := &node{name: sg.Name, leaf: !hasChildren[sg.Name]}
		if n.leaf {
			n.min = int(max(ptr.Deref(sg.MinMember, 0), 0))
		} else {
			n.minSubGroup = sg.MinSubGroup
		}
		switch {
		case tree:
			nodes[sg.Name] = n
		case n.leaf && !dup:
			root.children, leaves[sg.Name] = append(root.children, n), n
		}
	}
	if !tree {
		return root, leaves, nil
	}
	for _, sg := range pg.Spec.SubGroups {
		p, ok := nodes[parentName(sg.Parent)]
		if !ok {
			return nil, nil, fmt.Errorf("parent subgroup <%s> of <%s> not found", parentName(sg.Parent), sg.Name)
		}
		p.children = append(p.children, nodes[sg.Name])
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

func parentName(p *string) string { return strings.ToLower(ptr.Deref(p, "")) }

// count is how many of xs f accepts.
func count[T any](xs []T, f func(T) bool) int {
	c := 0
	for _, x := range xs {
		if f(x) {
			c++
		}
	}
	return c
}

// bound is a leaf's active allocated pods (podset.go GetNumActiveAllocatedTasks).
func (n *node) bound() int { return count(n.pods, func(p *Pod) bool { return p.State.allocated() }) }

// usable is a leaf's alive, ungated pods (podset.go IsReadyForScheduling).
func (n *node) usable() int {
	return count(n.pods, func(p *Pod) bool { return p.State.alive() && p.State != Gated })
}

// pending lists a leaf's pods KAI would allocate (pod_info.go ShouldAllocate), by name (KAI's
// task order prefers masters, heads and priorities; the count taken is the same).
func (n *node) pending() []*Pod {
	out := slices.DeleteFunc(slices.Clone(n.pods), func(p *Pod) bool { return p.State != Pending })
	slices.SortFunc(out, func(a, b *Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// minToSatisfy is GetMinMembersToSatisfy: a leaf's minimum; a set's minSubGroup, or the number
// of its children when unset.
func (n *node) minToSatisfy() int {
	if n.leaf {
		return n.min
	}
	return int(ptr.Deref(n.minSubGroup, int32(len(n.children))))
}

// members is GetNumActiveAllocatedMembers: a leaf's bound pods, a set's satisfied children
// (subgroupset.go GetNumActiveAllocatedDirectSubGroups).
func (n *node) members() int {
	if n.leaf {
		return n.bound()
	}
	return count(n.children, (*node).satisfied)
}

// satisfied is IsMinRequirementSatisfied (a set) or bound >= minAvailable (a leaf).
func (n *node) satisfied() bool { return n.members() >= n.minToSatisfy() }

// ready is IsReadyForScheduling: a leaf has at least its minimum of alive, ungated pods; a set
// has at least K ready children.
func (n *node) ready() bool {
	if n.leaf {
		return n.usable() >= n.min
	}
	return count(n.children, (*node).ready) >= n.minToSatisfy()
}

// sorted returns the children in KAI's order: session_plugins.go SubGroupOrderFn, which asks the
// subgrouporder plugin and breaks its ties by name.
func (n *node) sorted() []*node {
	return slices.SortedFunc(slices.Values(n.children), func(a, b *node) int {
		return cmp.Or(orderByAllocationRatio(a.members(), a.minToSatisfy(), b.members(), b.minToSatisfy()), strings.Compare(a.name, b.name))
	})
}

// byName returns ns sorted by name.
func byName(ns []*node) []*node {
	return slices.SortedFunc(slices.Values(ns), func(a, b *node) int { return strings.Compare(a.name, b.name) })
}

// firstK is the first k of children (all when fewer, none when k <= 0).
func firstK(children []*node, k int) []*node { return children[:min(max(k, 0), len(children))] }

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
		return cmp.Compare(lCount, rCount)
	}
	return cmp.Compare(float64(lCount)/float64(lThreshold), float64(rCount)/float64(rThreshold))
}
