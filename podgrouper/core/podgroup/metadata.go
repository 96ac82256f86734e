// Package podgroup turns the result of grouping a pod (Metadata) into a KAI PodGroup (Build),
// checks it (Validate) and writes it (Applier.Apply), following KAI Scheduler's contract for that
// step exactly (pkg/podgrouper/podgroup in KAI, release v0.17.0 line; each function names the
// KAI function it follows).
package podgroup

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// TopologyConstraintMetadata is the topology constraint of a subgroup, the three strings of a
// v2alpha2.TopologyConstraint (KAI pkg/podgrouper/podgroup/metadata.go TopologyConstraintMetadata).
type TopologyConstraintMetadata struct {
	PreferredTopologyLevel string
	RequiredTopologyLevel  string
	Topology               string
}

// SubGroupMetadata is one subgroup of a PodGroup (KAI pkg/podgrouper/podgroup/metadata.go
// SubGroupMetadata). PodsReferences is not written to the PodGroup: the pod grouper uses it to
// label pods (FindSubGroupForPod).
type SubGroupMetadata struct {
	// Name is the subgroup name; it must be a DNS label (KAI CRD pattern), and it becomes the
	// value of each member pod's kai.scheduler/subgroup-name label.
	Name string
	// MinAvailable is the subgroup's minMember, used when MinSubGroup is nil.
	MinAvailable int32
	// MinSubGroup is the number of direct child subgroups required; set only on a subgroup that
	// has children.
	MinSubGroup *int32
	// Parent names the parent subgroup; nil for a direct child of the PodGroup.
	Parent *string
	// PodsReferences lists the names of the pods (in the Metadata's namespace) of this subgroup.
	PodsReferences []string
	// TopologyConstraints is the subgroup's own topology constraint, or nil.
	TopologyConstraints *TopologyConstraintMetadata
	// Deferred, gangmap's addition, names the start the subgroup waits for (a start rule holds
	// its role until the operator creates its pods): the hold's reason, shared by every role the
	// operator creates on the same event; "" for a subgroup written now. Build leaves a deferred
	// subgroup out; Applier.Apply writes it once released: by the Metadata of a pod of a role
	// with that key (the grouper clears Deferred then), or because the existing PodGroup has a
	// subgroup of that key already (kept until Metadata.DropDeferred). A written top-level subgroup counts
	// in the PodGroup's minSubGroup, which counts those of MinSubGroup plus the released ones.
	Deferred string
}

// Metadata is everything a grouper decided about a pod's PodGroup (KAI
// pkg/podgrouper/podgroup/metadata.go Metadata): its identity, owner, gang minimum, subgroups,
// scheduling parameters and topology.
type Metadata struct {
	// Annotations and Labels are put on the PodGroup (merged into an existing PodGroup's).
	Annotations map[string]string
	Labels      map[string]string
	// PriorityClassName, Preemptibility, PreemptionDelay and StalenessGracePeriod are copied to
	// the PodGroup spec.
	PriorityClassName    string
	Preemptibility       v2alpha2.Preemptibility
	PreemptionDelay      *metav1.Duration
	StalenessGracePeriod *metav1.Duration
	// Queue is the PodGroup's queue; it is set at creation only (Apply keeps an existing queue).
	Queue string
	// Namespace and Name identify the PodGroup.
	Namespace string
	Name      string
	// MinAvailable is the PodGroup's minMember, used when MinSubGroup is nil.
	MinAvailable int32
	// MinSubGroup is the number of direct child subgroups required.
	MinSubGroup *int32
	// Owner becomes the PodGroup's only owner reference. KAI's groupers set only APIVersion, Kind,
	// Name and UID of the top owner (no Controller, no BlockOwnerDeletion); Build copies it as given.
	Owner metav1.OwnerReference
	// SubGroups are the PodGroup's subgroups, in order.
	SubGroups []*SubGroupMetadata
	// DropDeferred, gangmap's addition, says the deferred subgroups the existing PodGroup has
	// are dropped, not kept: the pod was of a role that starts first and has not started, so
	// the deferred roles' pods cannot exist (the workload starts over).
	DropDeferred bool
	// PreferredTopologyLevel, RequiredTopologyLevel and Topology make the PodGroup's topology
	// constraint. An empty Topology keeps an existing PodGroup's constraint (see Applier.Apply).
	PreferredTopologyLevel string
	RequiredTopologyLevel  string
	Topology               string
}

// FindSubGroupForPod returns the first subgroup whose PodsReferences contains the pod name, or nil
// when none does or when the pod is not in the Metadata's namespace (KAI
// pkg/podgrouper/podgroup/metadata.go FindSubGroupForPod). KAI's pod controller labels the pod
// kai.scheduler/subgroup-name=<name> only when a subgroup is found.
func (m *Metadata) FindSubGroupForPod(namespace, name string) *SubGroupMetadata {
	if m.Namespace != namespace {
		return nil
	}
	for _, subGroup := range m.SubGroups {
		if subGroup != nil && slices.Contains(subGroup.PodsReferences, name) {
			return subGroup
		}
	}
	return nil
}

// HasDeferred reports whether m has a subgroup of a deferred role (SubGroupMetadata.Deferred).
func (m *Metadata) HasDeferred() bool {
	return slices.ContainsFunc(m.SubGroups, func(sg *SubGroupMetadata) bool { return sg != nil && sg.Deferred != "" })
}

// ReasonWouldWrite is the reason of the Event that tells, in dry-run or shadow mode, the PodGroup
// gangmap would have written (the standalone grouper's --dry-run, gangmap-kai-podgrouper's
// --gangmap-shadow).
const ReasonWouldWrite = "DryRunPodGroup"
