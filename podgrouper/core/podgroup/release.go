package podgroup

import (
	"github.com/gangmap/gangmap/podgrouper/core/kairelease"
)

// FitRelease drops from md what the PodGroup CRD of KAI release r does not have
// (kai-releases.md §3), so that gangmap writes only PodGroups that release can read, and so that
// a field an older CRD would prune does not make every later Apply see a difference and write
// again:
//
//   - no preemptibility before v0.10: Preemptibility is cleared;
//   - no preemptionDelay or stalenessGracePeriod before v0.17: both are cleared;
//   - no minSubGroup before v0.15: a gang with sub-groups becomes flat (minMember = the sum of
//     its leaf sub-groups' minMember but deferred ones, at least 1) and loses its sub-groups. The workloadmap grouper
//     flattens the plan itself (gang.Plan.Flatten), so this is a guard for any other Metadata;
//   - no sub-group parent or sub-group topology before v0.10: both are cleared.
//
// A nil r is the latest release: md is left as it is. md is changed in place.
func FitRelease(md *Metadata, r *kairelease.Release) {
	if r == nil || md == nil {
		return
	}
	if !r.Preemptibility {
		md.Preemptibility = ""
	}
	if !r.Delays {
		md.PreemptionDelay, md.StalenessGracePeriod = nil, nil
	}
	if !r.MinSubGroup && (md.MinSubGroup != nil || len(md.SubGroups) > 0) {
		var sum int32
		parents := map[string]bool{}
		for _, sg := range md.SubGroups {
			if sg != nil && sg.Parent != nil {
				parents[*sg.Parent] = true
			}
		}
		for _, sg := range md.SubGroups {
			if sg != nil && !parents[sg.Name] && sg.MinSubGroup == nil && sg.Deferred == "" {
				sum += sg.MinAvailable
			}
		}
		md.MinSubGroup, md.SubGroups = nil, nil
		md.MinAvailable = max(sum, 1)
	}
	if !r.SubGroupParent {
		for _, sg := range md.SubGroups {
			if sg != nil {
				sg.Parent, sg.TopologyConstraints = nil, nil
			}
		}
	}
}
