package kaiadmission

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kairelease"
)

// Every expected value below is worked out by hand from KAI v0.17.0's scheduler source (files
// under pkg/scheduler/), named in each test; kairelease decides which algorithm a release runs.

func flat(minMember *int32) *v2alpha2.PodGroup {
	return &v2alpha2.PodGroup{Spec: v2alpha2.PodGroupSpec{MinMember: minMember}}
}

func leaf(name string, minMember int32, parent ...string) v2alpha2.SubGroup {
	sg := v2alpha2.SubGroup{Name: name, MinMember: ptr.To(minMember)}
	if len(parent) > 0 {
		sg.Parent = ptr.To(parent[0])
	}
	return sg
}

func set(name string, minSubGroup *int32, parent ...string) v2alpha2.SubGroup {
	sg := v2alpha2.SubGroup{Name: name, MinSubGroup: minSubGroup}
	if len(parent) > 0 {
		sg.Parent = ptr.To(parent[0])
	}
	return sg
}

func tree(minSubGroup *int32, sgs ...v2alpha2.SubGroup) *v2alpha2.PodGroup {
	return &v2alpha2.PodGroup{Spec: v2alpha2.PodGroupSpec{MinSubGroup: minSubGroup, SubGroups: sgs}}
}

// pods makes n pods of a sub-group in one state, named <subgroup>-<i> (<prefix> when the
// sub-group is "").
func pods(subGroup string, n int, s State) []Pod {
	out := make([]Pod, n)
	name := subGroup
	if name == "" {
		name = "pod"
	}
	for i := range out {
		out[i] = Pod{Name: fmt.Sprintf("%s-%d", name, i), SubGroup: subGroup, State: s}
	}
	return out
}

func join(ps ...[]Pod) []Pod {
	var out []Pod
	for _, p := range ps {
		out = append(out, p...)
	}
	return out
}

// A PodGroup without sub-groups is one "default" leaf of minimum max(minMember, 1)
// (podgroup_info/job_info.go setSubGroups); below its minimum the leaf gives minMember - bound
// pending pods at once, above it one pod per attempt (podgroup_info/allocation_info.go
// collectTasksFromPodSet, getNumTasksToAllocate), and allocate.go Execute retries the job while
// it has pending pods.
func TestFlatGang(t *testing.T) {
	v := Evaluate(flat(ptr.To[int32](2)), pods("", 4, Pending), nil)
	assert.True(t, v.Admitted)
	assert.False(t, v.Partial)
	assert.Equal(t, [][]string{{"pod-0", "pod-1"}, {"pod-2"}, {"pod-3"}}, v.Steps)
	assert.Equal(t, 2, v.BoundAtAdmission)

	v = Evaluate(flat(nil), pods("", 1, Pending), nil) // minMember unset: 1
	assert.True(t, v.Admitted)
	assert.Equal(t, 1, v.BoundAtAdmission)
}

// A flat gang with fewer pods than minMember is not ready for scheduling: allocate.go takes
// only jobs that are (actions/utils/input_jobs.go FilterUnready, podset.go IsReadyForScheduling:
// alive minus gated pods >= minAvailable); gated pods do not count.
func TestFlatGangWaitsForItsPods(t *testing.T) {
	v := Evaluate(flat(ptr.To[int32](3)), pods("", 2, Pending), nil)
	assert.False(t, v.Admitted)
	assert.Empty(t, v.Steps)
	assert.Equal(t, "default", v.Blocking)
	assert.Contains(t, v.Reason, `waiting for 3 pods for sub-group "default", currently 2 exist, 0 are gated`)

	v = Evaluate(flat(ptr.To[int32](3)), join(pods("", 2, Pending), []Pod{{Name: "g", State: Gated}}), nil)
	assert.False(t, v.Admitted)
	assert.Contains(t, v.Reason, "currently 3 exist, 1 are gated")

	// Bound pods are alive and count towards the minimum: the last pending pod completes it.
	v = Evaluate(flat(ptr.To[int32](3)), join([]Pod{{Name: "b-0", State: Bound}, {Name: "b-1", State: Bound}}, pods("", 1, Pending)), nil)
	assert.True(t, v.Admitted)
	assert.False(t, v.Partial)
	assert.Equal(t, [][]string{{"pod-0"}}, v.Steps)
	assert.Equal(t, 3, v.BoundAtAdmission)
}

// While a set's minimum is unmet KAI takes its first K = minSubGroup children in the
// subgrouporder order, in which all unsatisfied children tie, broken by name
// (allocation_info.go collectTasksFromSubGroupSet; plugins/subgrouporder/subgroup_order.go
// orderByAllocationRatio; framework/session_plugins.go SubGroupOrderFn). A child with no pending
// pod among them gives no task, and an attempt with no task allocates nothing (actions/common/
// allocate.go AllocateJob): the deadlock measured on the real scheduler (real-kai.md), with the
// held sub-group's name first; with the names the other way round the gang is admitted.
func TestFirstKChildrenByName(t *testing.T) {
	pg := tree(ptr.To[int32](1), leaf("a-init", 1), leaf("b-work", 2))
	v := Evaluate(pg, pods("b-work", 2, Pending), nil)
	assert.False(t, v.Admitted)
	assert.Empty(t, v.Steps)
	assert.Equal(t, "a-init", v.Blocking)
	assert.Contains(t, v.Reason, `sub-group "a-init" is among the 1 sub-groups KAI takes first from the PodGroup (minSubGroup 1)`)
	assert.Contains(t, v.Reason, "has 0 bound, 0 pending of its minMember 1")

	pg = tree(ptr.To[int32](1), leaf("a-work", 2), leaf("b-init", 1))
	v = Evaluate(pg, pods("a-work", 2, Pending), nil)
	assert.True(t, v.Admitted)
	assert.False(t, v.Partial)
	assert.Equal(t, [][]string{{"a-work-0", "a-work-1"}}, v.Steps)
}

// A finished role kept as a sub-group with its minimum: succeeded pods are neither alive nor
// allocated (pod_status.go), so its leaf stays unsatisfied with nothing to allocate. With
// minSubGroup counting only the other role and the finished one first by name, nothing is ever
// admitted (the JobSet initializer measured on the real scheduler); with minSubGroup 2 the job
// is never ready (the finished leaf has no alive pod: subgroupset.go IsReadyForScheduling).
func TestFinishedSubGroupKeptWithItsMinimum(t *testing.T) {
	ps := join(pods("initializer", 1, Succeeded), pods("worker", 3, Pending))
	v := Evaluate(tree(ptr.To[int32](1), leaf("initializer", 1), leaf("worker", 3)), ps, nil)
	assert.False(t, v.Admitted)
	assert.Equal(t, "initializer", v.Blocking)
	assert.Contains(t, v.Reason, "1 succeeded")

	v = Evaluate(tree(ptr.To[int32](2), leaf("initializer", 1), leaf("worker", 3)), ps, nil)
	assert.False(t, v.Admitted)
	assert.Empty(t, v.Steps)
	assert.Equal(t, "initializer", v.Blocking)
	assert.Contains(t, v.Reason, `waiting for 1 pods for sub-group "initializer", currently 0 exist`)
}

// Among the first K a child with no pending pod gives nothing while the others are bound: the
// job is ready (2 of its 3 children have their pods, subgroupset.go IsReadyForScheduling), the
// first attempt takes "a" (nothing) and "b", the second "a" and "c" ("b" is satisfied and sorts
// after them): admitted in two commits, the first a partial gang.
func TestEmptyChildAmongFirstKGivesPartialCommits(t *testing.T) {
	pg := tree(ptr.To[int32](2), leaf("a", 1), leaf("b", 1), leaf("c", 1))
	v := Evaluate(pg, join(pods("b", 1, Pending), pods("c", 1, Pending)), nil)
	assert.True(t, v.Admitted)
	assert.True(t, v.Partial)
	assert.Equal(t, [][]string{{"b-0"}, {"c-0"}}, v.Steps)
	assert.Equal(t, 2, v.BoundAtAdmission)
}

// Satisfied children are skipped in the gang phase (allocation_info.go
// collectFromChildInGangPhase) and sort after unsatisfied ones: a bound leader and pending
// workers under minSubGroup 2 admit the workers in one commit.
func TestSatisfiedChildrenSkipped(t *testing.T) {
	pg := tree(ptr.To[int32](2), leaf("a-leader", 1), leaf("b-workers", 2))
	v := Evaluate(pg, join(pods("a-leader", 1, Bound), pods("b-workers", 2, Pending)), nil)
	assert.True(t, v.Admitted)
	assert.False(t, v.Partial)
	assert.False(t, v.AlreadyMet)
	assert.Equal(t, [][]string{{"b-workers-0", "b-workers-1"}}, v.Steps)
	assert.Equal(t, 3, v.BoundAtAdmission)
}

// Nested sets (subgroup_info/factory.go FromPodGroup: a sub-group with children is a set with
// its own minSubGroup): the root takes "leader" and "workers" (both unsatisfied, by name), the
// workers set its first minSubGroup 1 leaf by name; once the root is satisfied the elastic phase
// takes the first child with a task, and within the workers set the unsatisfied leaf w-1 sorts
// first and gives its whole minimum.
func TestNestedSets(t *testing.T) {
	pg := tree(ptr.To[int32](2), leaf("leader", 1), set("workers", ptr.To[int32](1)), leaf("w-0", 2, "workers"), leaf("w-1", 2, "workers"))
	v := Evaluate(pg, join(pods("leader", 1, Pending), pods("w-0", 2, Pending), pods("w-1", 2, Pending)), nil)
	assert.True(t, v.Admitted)
	assert.False(t, v.Partial)
	assert.Equal(t, [][]string{{"leader-0", "w-0-0", "w-0-1"}, {"w-1-0", "w-1-1"}}, v.Steps)
	assert.Equal(t, 3, v.BoundAtAdmission)

	// A nested set that cannot be satisfied names its leaf: the workers' first leaf by name has
	// no pod.
	v = Evaluate(pg, join(pods("leader", 1, Pending), pods("w-1", 2, Pending)), nil)
	assert.False(t, v.Admitted)
	assert.True(t, v.Partial, "the leader is bound alone")
	assert.Equal(t, "w-0", v.Blocking)
	assert.Contains(t, v.Reason, `from sub-group "workers" (minSubGroup 1)`)
}

// A leaf of minMember 0 is satisfied with no pod at all (podset.go: 0 >= 0) and counts towards
// its parent's minimum (subgroupset.go GetNumActiveAllocatedDirectSubGroups); pods that appear
// in it later are taken one per attempt in the elastic phase, after the required leaves
// (orderByAllocationRatio: required before optional): they are not started together.
func TestZeroMinimumLeaf(t *testing.T) {
	pg := tree(nil, leaf("held", 0), leaf("work", 2))
	v := Evaluate(pg, pods("work", 2, Pending), nil)
	assert.True(t, v.Admitted)
	assert.Equal(t, [][]string{{"work-0", "work-1"}}, v.Steps)

	v = Evaluate(pg, join(pods("work", 2, Bound), pods("held", 2, Pending)), nil)
	assert.True(t, v.AlreadyMet)
	assert.Equal(t, [][]string{{"held-0"}, {"held-1"}}, v.Steps, "one pod per commit: no gang")
}

// A pod whose sub-group label names no leaf of the PodGroup, or that has none in a PodGroup with
// sub-groups (it is then in "default"), is never scheduled (job_info.go AddTaskInfo,
// addInvalidSubGroupTask); it does not count towards any minimum.
func TestStrandedPods(t *testing.T) {
	pg := tree(nil, leaf("work", 1))
	v := Evaluate(pg, []Pod{{Name: "x", SubGroup: "typo", State: Pending}, {Name: "y", State: Pending}, {Name: "w", SubGroup: "work", State: Pending}}, nil)
	assert.Equal(t, []string{"x", "y"}, v.Stranded)
	assert.Equal(t, []string{"w"}, slices.Concat(v.Steps...))
}

// KAI rejects a tree with a missing parent or a duplicate name (FromPodGroup) and keeps no
// sub-group: the model admits nothing and says so.
func TestUnreadableTree(t *testing.T) {
	v := Evaluate(tree(nil, leaf("a", 1, "nope")), pods("a", 1, Pending), nil)
	assert.False(t, v.Admitted)
	assert.Contains(t, v.Reason, "parent subgroup <nope> of <a> not found")
	assert.Equal(t, []string{"a-0"}, v.Stranded)

	v = Evaluate(tree(nil, leaf("a", 1), leaf("a", 1)), nil, nil)
	assert.Contains(t, v.Reason, "subgroup <a> already exists")
}

// A PodGroup with no pending pod is skipped (input_jobs.go FilterNonPending): admitted only if
// its bound pods already meet its minimum.
func TestNoPendingPod(t *testing.T) {
	v := Evaluate(flat(ptr.To[int32](2)), pods("", 2, Bound), nil)
	assert.True(t, v.Admitted)
	assert.True(t, v.AlreadyMet)

	v = Evaluate(flat(ptr.To[int32](2)), pods("", 1, Bound), nil)
	assert.False(t, v.Admitted)
	assert.Contains(t, v.Reason, "no pod of the PodGroup is pending")
}

// v0.9 to v0.14 (kairelease SubGroupTree false): every leaf is required and the job is ready
// only when every leaf has its pods (job_info.go IsReadyForScheduling at v0.14.7); the tasks are
// those of every leaf below its minimum (allocation_info.go GetTasksToAllocate at v0.14.7). The
// v0.17 rule would take only the first minSubGroup leaf.
func TestLegacyReleaseRequiresEveryLeaf(t *testing.T) {
	old := kairelease.MustParse("v0.14")
	pg := tree(ptr.To[int32](1), leaf("a", 1), leaf("b", 2))
	ps := join(pods("a", 1, Pending), pods("b", 2, Pending))
	v := Evaluate(pg, ps, old)
	assert.True(t, v.Admitted)
	assert.Equal(t, [][]string{{"a-0", "b-0", "b-1"}}, v.Steps)

	v = Evaluate(pg, ps, nil)
	assert.Equal(t, [][]string{{"a-0"}, {"b-0", "b-1"}}, v.Steps, "v0.17: minSubGroup 1 takes a alone; b follows in the elastic phase")

	v = Evaluate(pg, pods("b", 2, Pending), old)
	assert.False(t, v.Admitted)
	assert.Equal(t, "a", v.Blocking)
	assert.Contains(t, v.Reason, "not ready for scheduling")
}

func TestEvaluateDoesNotModifyPods(t *testing.T) {
	ps := pods("", 2, Pending)
	Evaluate(flat(ptr.To[int32](2)), ps, nil)
	require.Equal(t, Pending, ps[0].State)
}
