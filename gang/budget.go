package gang

import (
	"fmt"
	"math"
)

// MaxPlanElements bounds the size of one workload's plan: its PodGroups, their sub-groups and
// the role shares in them (a role's part of one PodGroup), counted together. Their number comes
// from the workload's counts (replicas), which its author writes, so without a bound one object
// and one pod could make the grouper build and cache millions of them: a LeaderWorkerSet of
// 100,000 replicas planned 100,000 PodGroups (about 160 MB of the grouper's heap, kept in the
// plan cache; three such objects passed the chart's 512 MiB limit), and a JobSet whose replicated
// job has 500,000 multi-pod replicas one PodGroup of 500,000 sub-groups, which no API server
// would store (etcd's 1.5 MiB request limit). 50,000 holds a LeaderWorkerSet of 10,000 groups of a
// leader and workers (10,000 PodGroups, 20,000 sub-groups, 20,000 shares; about 20 MB), far above
// real workloads.
const MaxPlanElements = 50000

// MaxSubGroupsPerPodGroup bounds the sub-groups of one PodGroup. A PodGroup is one API object:
// etcd stores at most 1.5 MiB per request, and a sub-group with a 63-character name and parent is
// about 170 bytes of JSON, so 5,000 (a JobSet replicated job of 5,000 multi-pod slices) always
// fits, where a larger PodGroup would be refused by the API server at every write of every pod.
const MaxSubGroupsPerPodGroup = 5000

// planBudget counts the elements of a plan being built against MaxPlanElements.
type planBudget struct {
	used int64
}

// TooLargeError says a workload's plan would exceed MaxPlanElements. Field names the definition
// field whose count made it so ("" when it is the product of several).
type TooLargeError struct {
	Field string
	// PodGroup is set when one PodGroup's sub-groups are past MaxSubGroupsPerPodGroup (then Max
	// is that bound), "" for the whole plan's MaxPlanElements.
	PodGroup string
	// Count is how many elements the plan (or the PodGroup) would hold at least, counting those
	// asked for by the request that failed; Max is the bound.
	Count, Max int64
}

func (e *TooLargeError) Error() string {
	where := ""
	if e.Field != "" {
		where = e.Field + ": "
	}
	if e.PodGroup != "" {
		return fmt.Sprintf("%sPodGroup %s would have more than %d sub-groups (at least %d); gangmap plans no PodGroup that large (one API object: etcd's request limit, gang.MaxSubGroupsPerPodGroup)", where, e.PodGroup, e.Max, e.Count)
	}
	return fmt.Sprintf("%sthe plan would hold more than %d PodGroups, sub-groups and role shares (at least %d); gangmap plans no workload that large (a bound on the grouper's memory per workload, gang.MaxPlanElements)", where, e.Max, e.Count)
}

// take reserves n elements; field names the definition field whose count asks for them.
func (b *planBudget) take(n int64, field string) error {
	if n < 0 || n > MaxPlanElements-b.used {
		total := n // what the plan would reach: a request of one element past the bound says 50,001, not 1
		if n >= 0 && n <= math.MaxInt64-b.used {
			total += b.used
		}
		return &TooLargeError{Field: field, Count: total, Max: MaxPlanElements}
	}
	b.used += n
	return nil
}
