package podgroup

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/apis/scheduling/v2alpha2"
)

// ActualNames returns the names of the PodGroups in namespace that a plan's PodGroup names
// (planned) stand for, for writers that key something by PodGroup (the gangmap.io/status and
// gangmap.io/health annotations, the workload metrics' PodGroup conditions). A planned name
// without a placeholder is the PodGroup's name, returned as is (the PodGroup may not exist yet).
// A planned alpha name with a {<expression>} placeholder (gang.HasKeyPlaceholder: a grouping
// key the plan cannot read before the pods exist) stands for every PodGroup of the namespace
// whose name it can take (gang.PlannedNameMatches: pg-<UID>-<a pod's value>): the namespace's
// PodGroups are listed from r (the manager's cache, without deep copies) only when some planned
// name has a placeholder. complete is false when a placeholder name matched no PodGroup yet (its
// pods are not grouped yet). Errors: the list's.
func ActualNames(ctx context.Context, r client.Reader, namespace string, planned []string) (names []string, complete bool, err error) {
	var patterns []func(string) bool
	out := make([]string, 0, len(planned))
	for _, name := range planned {
		if gang.HasKeyPlaceholder(name) {
			patterns = append(patterns, gang.PlannedNameMatcher(name))
		} else {
			out = append(out, name)
		}
	}
	if len(patterns) == 0 {
		return out, true, nil
	}
	pgs := &v2alpha2.PodGroupList{}
	if err := r.List(ctx, pgs, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return out, false, err
	}
	matched := make([]bool, len(patterns))
	for i := range pgs.Items {
		name := pgs.Items[i].Name
		for j, matches := range patterns {
			if matches(name) {
				matched[j] = true
				out = append(out, name)
				break
			}
		}
	}
	complete = true
	for _, m := range matched {
		complete = complete && m
	}
	return out, complete, nil
}
