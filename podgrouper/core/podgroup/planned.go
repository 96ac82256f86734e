package podgroup

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// OwnerLister gives the cached PodGroups of namespace whose only owner reference has UID owner
// (namespace "" for a cluster-scoped owner: every namespace): the informer's own objects, to be
// read only (strays.OwnerIndex, fed by the PodGroup informer's events, keyed by namespace and
// UID so that a look never costs another namespace's PodGroups). Its error says it cannot answer
// yet (strays.ErrOwnerIndexNotSynced: it has not seen the informer's initial list).
type OwnerLister interface {
	Owned(namespace string, owner types.UID) ([]*v2alpha2.PodGroup, error)
}

// ActualNames returns the names of the PodGroups in namespace that a plan's PodGroup names
// (planned) stand for, for writers that key something by PodGroup (the gangmap.io/status and
// gangmap.io/health annotations, the workload metrics' PodGroup conditions). A planned name
// without a placeholder is the PodGroup's name, returned as is (the PodGroup may not exist yet).
// A planned alpha name with a {<expression>} placeholder (gang.HasKeyPlaceholder: a grouping
// key the plan cannot read before the pods exist) stands for the PodGroups of the namespace whose
// name it can take (gang.PlannedNameMatches: pg-<UID>-<a pod's value>); they follow the names
// without a placeholder, sorted. complete is false when a placeholder name matched no PodGroup
// yet (its pods are not grouped yet). Nothing is looked up when no planned name has a
// placeholder.
//
// With owned and the workload's UID (owner), only the workload's own PodGroups are looked at
// (owned.Owned(namespace, owner): the PodGroups whose only owner reference is the workload, as
// gangmap's and KAI's pod-grouper's PodGroups of the workload are, see Build), at a cost of the
// workload's PodGroups. Without them (owned nil, owner ""), or while owned cannot answer (its
// error: not synced yet), every PodGroup of namespace is listed from r (the manager's cache,
// without deep copies) and matched, at a cost of the namespace's PodGroups. The two differ only
// on PodGroups that carry the workload's UID in their name but not the workload as their only
// owner (created by someone else, with no owner, several or another): the list counts them, the
// owner lookup leaves them alone, so that no writer annotates an object that is not the
// workload's. A PodGroup of another workload (another UID in its name) or of another namespace
// counts in neither. The owner lookup follows the informer's event handler, which may lag the
// cache's store by events not handled yet: a PodGroup created a moment ago may be found only at
// the writer's next look (the findings reporter retries an incomplete answer on its next tick).
// Errors: the list's.
func ActualNames(ctx context.Context, r client.Reader, owned OwnerLister, namespace string, owner types.UID, planned []string) (names []string, complete bool, err error) {
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
	fixed := len(out)
	matched := make([]bool, len(patterns))
	match := func(name string) {
		for j, matches := range patterns {
			if matches(name) {
				matched[j] = true
				out = append(out, name)
				return
			}
		}
	}
	var own []*v2alpha2.PodGroup
	lookup := owned != nil && owner != ""
	if lookup {
		own, err = owned.Owned(namespace, owner)
	}
	if lookup && err == nil {
		for _, pg := range own {
			if pg.Namespace == namespace {
				match(pg.Name)
			}
		}
	} else {
		pgs := &v2alpha2.PodGroupList{}
		if err := r.List(ctx, pgs, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
			return out, false, err
		}
		for i := range pgs.Items {
			match(pgs.Items[i].Name)
		}
	}
	slices.Sort(out[fixed:])
	return out, !slices.Contains(matched, false), nil
}
