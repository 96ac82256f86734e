package kaiadmission

import "github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"

// buildLeaves is the PodGroup as KAI v0.9 to v0.14 schedules it: one flat list of leaves (the
// sub-groups without children, minimum their minMember, or the "default" leaf of minimum
// max(spec.minMember, 1)), all of them required (job_info.go setSubGroups and
// IsReadyForScheduling at v0.14.7). The root is a set over them with no minSubGroup, so that
// ready and satisfied mean "every leaf" as there.
func buildLeaves(pg *v2alpha2.PodGroup) (*node, map[string]*node) {
	root := &node{}
	leaves := map[string]*node{}
	add := func(name string, m int) {
		if _, dup := leaves[name]; dup {
			return
		}
		l := &node{name: name, leaf: true, min: m, parent: root}
		root.children = append(root.children, l)
		leaves[name] = l
	}
	if len(pg.Spec.SubGroups) == 0 {
		m := int32(1)
		if pg.Spec.MinMember != nil {
			m = max(*pg.Spec.MinMember, 1)
		}
		add(defaultSubGroup, int(m))
		return root, leaves
	}
	parents := map[string]bool{}
	for _, sg := range pg.Spec.SubGroups {
		parents[parentName(sg.Parent)] = true
	}
	for _, sg := range pg.Spec.SubGroups {
		if parents[sg.Name] {
			continue
		}
		m := 0
		if sg.MinMember != nil {
			m = int(max(*sg.MinMember, 0))
		}
		add(sg.Name, m)
	}
	return root, leaves
}

// collectLeaves is GetTasksToAllocate at v0.14.7: leaves are popped in the subgrouporder order
// (PodSetOrderFn, ties by name) and those with a task give it, until as many leaves gave tasks as
// there are leaves below their minimum (one when none is).
func collectLeaves(root *node) []*Pod {
	want := 0
	for _, l := range root.children {
		if !l.satisfied() {
			want++
		}
	}
	want = max(want, 1)
	var tasks []*Pod
	got := 0
	for _, l := range root.sorted() {
		if got >= want {
			break
		}
		t := collectLeaf(l)
		if len(t) == 0 {
			continue
		}
		tasks = append(tasks, t...)
		got++
	}
	return tasks
}
