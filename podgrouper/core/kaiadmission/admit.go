package kaiadmission

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kairelease"
)

// Verdict is the model's answer for one PodGroup and the pods that exist.
type Verdict struct {
	// Admitted says that, with room for every pod, KAI's allocate action brings the PodGroup to
	// its minimum (AlreadyMet: its bound pods met it before, and nothing was needed).
	Admitted   bool
	AlreadyMet bool
	// Partial says a commit left the PodGroup below its minimum: KAI bound those pods (Steps)
	// while the rest of the gang could not be bound in the same commit, so with too little room
	// for the rest they hold resources alone. A gang admitted whole is Admitted && !Partial.
	Partial bool
	// Steps lists the pods each commit binds, in order (names sorted within a commit).
	Steps [][]string
	// BoundAtAdmission is how many of the PodGroup's pods are bound when its minimum is first
	// met (0 when it never is, or was met already).
	BoundAtAdmission int
	// Blocking names the sub-group that stops KAI ("default" for a PodGroup without
	// sub-groups); "" when nothing blocks. Reason says why, in one sentence.
	Blocking string
	Reason   string
	// Stranded lists the pods whose sub-group label names no leaf of the PodGroup: KAI never
	// schedules them (job_info.go AddTaskInfo, addInvalidSubGroupTask).
	Stranded []string
	// NotReady says KAI's allocate action skips the PodGroup as not ready for scheduling
	// (FilterUnready); Finished then names a sub-group it requires whose pods would meet its
	// minimum if its finished (Succeeded) ones counted, which KAI never does ("" when none).
	NotReady bool
	Finished string
	// pending and bound are how many of the pods in the PodGroup's leaves are pending (before any
	// commit) and bound (after the commits so far).
	pending, bound int
}

// Evaluate runs KAI's allocate action on pg and pods as the release rel does (nil: the latest),
// with room for every pod: see the package doc. pods are not modified.
func Evaluate(pg *v2alpha2.PodGroup, pods []Pod, rel *kairelease.Release) *Verdict {
	return evaluate(pg, pods, rel, false)
}

// evaluate is Evaluate; untilMet stops the attempts once the PodGroup's minimum is met (Steps
// then end with the admitting commit).
func evaluate(pg *v2alpha2.PodGroup, pods []Pod, rel *kairelease.Release, untilMet bool) *Verdict {
	v := &Verdict{}
	tree := rel.SubGroupTreeAdmission()
	root, leaves, err := buildTree(pg, tree)
	if err != nil {
		v.Reason = "KAI cannot read the PodGroup's sub-groups (subgroup_info FromPodGroup): " + err.Error()
		for _, p := range pods {
			v.Stranded = append(v.Stranded, p.Name)
		}
		return v
	}
	for _, p := range pods {
		leaf := leaves[cmp.Or(p.SubGroup, defaultSubGroup)]
		if leaf == nil {
			v.Stranded = append(v.Stranded, p.Name)
			continue
		}
		leaf.pods = append(leaf.pods, &p)
		switch p.State {
		case Pending:
			v.pending++
		case Bound:
			v.bound++
		}
	}
	v.AlreadyMet = root.satisfied()
	switch {
	case v.pending == 0:
		v.Admitted = v.AlreadyMet
		if !v.AlreadyMet {
			v.Blocking, v.Reason = blockerOf(root, tree)
			v.Reason = "no pod of the PodGroup is pending, so KAI's allocate action skips it (FilterNonPending); " + v.Reason
		}
	case !root.ready():
		v.Admitted, v.NotReady = v.AlreadyMet, true
		v.Blocking, v.Reason = notReady(root)
		v.Finished = finishedLeaf(root)
	default:
		v.run(root, tree, untilMet)
	}
	return v
}

// run repeats allocate attempts, as allocate.go Execute pushes a committed job back while it has
// pending pods, until an attempt has no task.
func (v *Verdict) run(root *node, tree, untilMet bool) {
	met := v.AlreadyMet
	for pending := v.pending; pending > 0 && !(untilMet && met); {
		var tasks []*Pod
		if tree {
			tasks = root.collect()
		} else {
			tasks = collectLeaves(root)
		}
		if len(tasks) == 0 {
			break
		}
		step := make([]string, len(tasks))
		for i, t := range tasks {
			t.State = Bound
			step[i] = t.Name
		}
		pending -= len(tasks)
		v.bound += len(tasks)
		v.Steps = append(v.Steps, step)
		switch {
		case root.satisfied() && !met:
			met = true
			v.BoundAtAdmission = v.bound
		case !root.satisfied():
			v.Partial = true
		}
	}
	v.Admitted = met
	if !met {
		v.Blocking, v.Reason = blockerOf(root, tree)
	}
}

// collect is one attempt's tasks from n: a set's are allocation_info.go
// collectTasksFromSubGroupSet's; a leaf's are collectTasksFromPodSet's with getNumTasksToAllocate:
// below its minimum a leaf gives minimum - bound of its pending pods (fewer when fewer are
// pending), at or above it one.
func (n *node) collect() []*Pod {
	if n.leaf {
		p := n.pending()
		return p[:min(max(n.min-n.bound(), 1), len(p))]
	}
	children := n.sorted()
	if n.satisfied() { // the elastic phase: the first child with a task
		for _, c := range children {
			if t := c.collect(); len(t) > 0 {
				return t
			}
		}
		return nil
	}
	var tasks []*Pod
	for _, c := range firstK(children, n.minToSatisfy()) {
		if !c.satisfied() { // collectFromChildInGangPhase: a satisfied child gives nothing
			tasks = append(tasks, c.collect()...)
		}
	}
	return tasks
}

// collectLeaves is GetTasksToAllocate at v0.14.7: leaves are popped in the subgrouporder order
// (PodSetOrderFn, ties by name) and those with a task give it, until as many leaves gave tasks as
// there are leaves below their minimum (one when none is).
func collectLeaves(root *node) []*Pod {
	want := max(count(root.children, func(l *node) bool { return !l.satisfied() }), 1)
	var tasks []*Pod
	for _, l := range root.sorted() {
		if want == 0 {
			break
		}
		if t := l.collect(); len(t) > 0 {
			tasks = append(tasks, t...)
			want--
		}
	}
	return tasks
}

// blockerOf names the sub-group that stops an unsatisfied PodGroup when no attempt has a task,
// and says why.
func blockerOf(root *node, tree bool) (string, string) {
	s := root
	for {
		k := s.minToSatisfy()
		children := s.sorted()
		if !tree {
			k = len(children)
		}
		i := slices.IndexFunc(firstK(children, k), func(c *node) bool { return !c.satisfied() })
		if i < 0 {
			return s.name, fmt.Sprintf("%s requires %d satisfied sub-groups but has only %d", setLabel(s), k, len(children))
		}
		next := children[i]
		if !next.leaf {
			s = next
			continue
		}
		if next.name == defaultSubGroup && len(root.children) == 1 && s == root {
			return next.name, fmt.Sprintf("the PodGroup requires minMember %d and %s", next.min, leafCounts(next))
		}
		return next.name, fmt.Sprintf("sub-group %q is among the %d sub-groups KAI takes first from %s (unsatisfied sub-groups tie and are taken by name) and %s: no attempt has a task, every cycle (\"Could not allocate ... resources <[0 0 0 0]>\")",
			next.name, min(k, len(children)), setLabel(s), leafCounts(next))
	}
}

func setLabel(s *node) string {
	k := "all"
	if s.minSubGroup != nil {
		k = fmt.Sprint(*s.minSubGroup)
	}
	if s.name == "" {
		return "the PodGroup (minSubGroup " + k + ")"
	}
	return fmt.Sprintf("sub-group %q (minSubGroup %s)", s.name, k)
}

// leafCounts describes a leaf's pods against its minimum.
func leafCounts(l *node) string {
	counts := map[State]int{}
	for _, p := range l.pods {
		counts[p.State]++
	}
	parts := []string{fmt.Sprintf("%d bound", counts[Bound]), fmt.Sprintf("%d pending", counts[Pending])}
	for _, s := range []State{Gated, Succeeded, Failed, Releasing} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], strings.ToLower(string(s))))
		}
	}
	return fmt.Sprintf("has %s of its minMember %d", strings.Join(parts, ", "), l.min)
}

// unreadyLeaves lists the leaves that keep n from being ready for scheduling, by name, depth
// first.
func unreadyLeaves(n *node) []*node {
	var out []*node
	for _, c := range byName(n.children) {
		switch {
		case c.ready():
		case c.leaf:
			out = append(out, c)
		default:
			out = append(out, unreadyLeaves(c)...)
		}
	}
	return out
}

// notReady names the first leaf that keeps the PodGroup from being ready for scheduling, with
// KAI's own message (status_updater recordJobNotReadyEvent).
func notReady(root *node) (string, string) {
	leaves := unreadyLeaves(root)
	msgs := make([]string, len(leaves))
	for i, c := range leaves {
		gated := count(c.pods, func(p *Pod) bool { return p.State == Gated })
		alive := count(c.pods, func(p *Pod) bool { return p.State.alive() })
		msgs[i] = fmt.Sprintf("waiting for %d pods for sub-group %q, currently %d exist, %d are gated", c.min, c.name, alive, gated)
	}
	first := ""
	if len(leaves) > 0 {
		first = leaves[0].name
	}
	return first, "KAI's allocate action skips the PodGroup as not ready for scheduling (FilterUnready: IsReadyForScheduling): " + strings.Join(msgs, "; ")
}
