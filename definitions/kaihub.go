package definitions

import "k8s.io/apimachinery/pkg/runtime/schema"

// KAI's Karta hub finds a Karta only by these labels (KAI v0.17
// pkg/podgrouper/podgrouper/plugins/karta/grouper.go KartaGroupLabel, KartaVersionLabel,
// KartaKindLabel; hub.go lists Kartas with all three as a label selector).
const (
	KAIKartaGroupLabel   = "run.ai/karta-group"
	KAIKartaVersionLabel = "run.ai/karta-version"
	KAIKartaKindLabel    = "run.ai/karta-kind"
)

// KAIHubSees reports whether KAI's own Karta fallback (v0.17, --generic-karta-fallback) can pick
// this Karta for its root kind, and for which kind: the three index labels name the root kind's
// group, version and kind exactly, and it has gang scheduling instructions (podGroup or alpha
// podGroups), as KAI's hub.go getKartaForGvk requires. (KAI also runs Karta's own validator,
// which gangmap does not repeat here.) Cluster Kartas only: KAI never reads definition files.
func (k *Karta) KAIHubSees() (schema.GroupVersionKind, bool) {
	root := k.Spec.StructureDefinition.RootComponent.Kind
	gs := k.Spec.OptimizationInstructions.GangScheduling
	if root == nil || gs == nil || (gs.PodGroup == nil && len(gs.PodGroups) == 0) {
		return schema.GroupVersionKind{}, false
	}
	l := k.Metadata.Labels
	if l[KAIKartaGroupLabel] != root.Group || l[KAIKartaVersionLabel] != root.Version || l[KAIKartaKindLabel] != root.Kind || root.Kind == "" {
		return schema.GroupVersionKind{}, false
	}
	return root.GVK(), true
}
