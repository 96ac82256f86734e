package onboard

import "fmt"

// groupingKeys are the pod keys through which a pod's PodGroup is decided, which onboarding must
// never set: KAI's pod-grouper contract (KAI pkg/common/constants: the annotation
// "pod-group-name" that names the pod's PodGroup, the label "kai.scheduler/subgroup-name" that
// names its sub-group, and the annotation "kai.scheduler/skip-podgrouper" that makes KAI's
// pod-grouper (v0.15+, pod_controller.go) leave the pod alone). Only a grouper writes them, per
// pod: set by onboarding on every pod of a kind, they would put every pod in one named PodGroup
// whatever its workload, or (the skip annotation) hide from KAI's pod-grouper the pods gangmap
// does not group (a kind KAI groups natively, a role in no gang), which then never get a
// PodGroup and are never scheduled. The values equal podgrouper/core/kaikeys (checked by
// podgrouper/runtime/onboarding's tests; definitions may not import podgrouper).
var groupingKeys = map[string]string{
	"pod-group-name":                "KAI's pod-grouper annotation naming the pod's PodGroup",
	"kai.scheduler/subgroup-name":   "KAI's pod-grouper label naming the pod's sub-group",
	"kai.scheduler/skip-podgrouper": "KAI's skip annotation: pods gangmap does not group would get no PodGroup at all",
}

// GroupingKeys returns the label and annotation keys onboarding refuses to set (see
// CheckKey), in no particular order.
func GroupingKeys() []string {
	out := make([]string, 0, len(groupingKeys))
	for k := range groupingKeys {
		out = append(out, k)
	}
	return out
}

// CheckKey returns an error when key is one of the pod keys a grouper owns (KAI's pod-group-name,
// sub-group label and skip annotation), which onboarding never sets as a label or an annotation:
// the grouper (gangmap's webhook and controller, or KAI's pod-grouper) writes them per pod.
// It returns nil for every other key; whether the key is a valid label key is checked elsewhere.
func CheckKey(key string) error {
	if why, ok := groupingKeys[key]; ok {
		return fmt.Errorf("%s is set by the pod-grouper per pod, never by onboarding (%s)", key, why)
	}
	return nil
}
