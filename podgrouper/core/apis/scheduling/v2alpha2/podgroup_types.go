package v2alpha2

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var (
	_ runtime.Object       = &PodGroup{}
	_ metav1.Object        = &PodGroup{}
	_ runtime.Object       = &PodGroupList{}
	_ metav1.ListInterface = &PodGroupList{}
	_ fmt.Stringer         = UnschedulableExplanations{}
)

// PodGroupSpec is the desired state of a PodGroup: KAI podgroup_types.go PodGroupSpec.
type PodGroupSpec struct {
	// MinMember defines the minimal number of members to run the PodGroup;
	// if there are not enough resources to start all required members, the scheduler will not start anyone.
	// Mutually exclusive with MinSubGroup.
	// +kubebuilder:validation:Minimum=1
	MinMember *int32 `json:"minMember,omitempty"`

	// MinSubGroup defines the minimal number of direct child SubGroups required for this PodGroup to be schedulable.
	// Only applicable when SubGroups are defined.
	// Mutually exclusive with MinMember.
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=1
	MinSubGroup *int32 `json:"minSubGroup,omitempty"`

	// Queue defines the queue to allocate resource for PodGroup; if queue does not exist,
	// the PodGroup will not be scheduled.
	Queue string `json:"queue,omitempty"`

	// If specified, indicates the PodGroup's priority. "system-node-critical" and
	// "system-cluster-critical" are two special keywords which indicate the
	// highest priorities with the former being the highest priority. Any other
	// name must be defined by creating a PriorityClass object with that name.
	// If not specified, the PodGroup priority will be default or zero if there is no
	// default.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// Preemptibility determines if this PodGroup can be preempted by higher priority workloads.
	// When unspecified, preemptibility is determined by the PriorityClass value - values below 100 are considered preemptible.
	Preemptibility Preemptibility `json:"preemptibility,omitempty"`

	// TopologyConstraint defines the topology constraints for this PodGroup
	TopologyConstraint TopologyConstraint `json:"topologyConstraint,omitempty"`

	// SubGroups defines finer-grained subsets of pods within the PodGroup with individual scheduling constraints
	SubGroups []SubGroup `json:"subGroups,omitempty"`

	// Should add "Unschedulable" event to the pods or not.
	MarkUnschedulable *bool `json:"markUnschedulable,omitempty"`

	// The number of scheduling cycles to try before marking the pod group as UnschedulableOnNodePool. Currently only supporting -1 and 1
	SchedulingBackoff *int32 `json:"schedulingBackoff,omitempty"`

	// PreemptionDelay is the minimal time the PodGroup must be pending, counted from
	// max(creation time, last eviction time), before it may trigger eviction of other
	// workloads (preempt, reclaim and consolidation actions). It does not affect plain
	// allocation into free capacity, nor the PodGroup's own evictability.
	// +optional
	PreemptionDelay *metav1.Duration `json:"preemptionDelay,omitempty"`

	// StalenessGracePeriod is the minimum duration a stale PodGroup must remain in stale
	// status before stale workloads may be evicted to make room. Negative values disable
	// eviction for this PodGroup. Defaults to the scheduler's global staleness grace period.
	// +optional
	StalenessGracePeriod *metav1.Duration `json:"stalenessGracePeriod,omitempty"`
}

// Preemptibility defines whether this PodGroup can be preempted
//
// Supported values are:
// - `preemptible` - PodGroup can be preempted by higher-priority workloads
// - `non-preemptible` - PodGroup runs to completion once scheduled
//
// Defaults to priority-based preemptibility determination (preemptible if priority < 100)
//
// Mirrors KAI podgroup_types.go Preemptibility.
//
// +kubebuilder:validation:Enum=preemptible;non-preemptible
// +optional
type Preemptibility string

// The Preemptibility values KAI accepts (podgroup_types.go Preemptible, NonPreemptible).
const (
	Preemptible    Preemptibility = "preemptible"
	NonPreemptible Preemptibility = "non-preemptible"
)

// SubGroup is a finer-grained subset of a PodGroup's pods with its own gang minimum: KAI
// podgroup_types.go SubGroup.
type SubGroup struct {
	// Name uniquely identifies the SubGroup within the PodGroup.
	// Must be a valid DNS label (RFC 1123).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// MinMember defines the minimal number of members to run this SubGroup;
	// if there are not enough resources to start all required members, the scheduler will not start anyone.
	// Mutually exclusive with MinSubGroup.
	// +kubebuilder:validation:Minimum=0
	MinMember *int32 `json:"minMember,omitempty"`

	// MinSubGroup defines the minimal number of direct child SubGroups required for this SubGroup to be schedulable.
	// Only applicable when this SubGroup has child SubGroups.
	// Mutually exclusive with MinMember.
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=0
	MinSubGroup *int32 `json:"minSubGroup,omitempty"`

	// Parent is an optional attribute that specifies the name of the parent SubGroup.
	// Must be a valid DNS label (RFC 1123).
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Parent *string `json:"parent,omitempty"`

	// TopologyConstraint defines the topology constraints for this SubGroup
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`
}

// TopologyConstraint places a PodGroup or SubGroup within a level of a KAI Topology: KAI
// podgroup_types.go TopologyConstraint.
type TopologyConstraint struct {
	// PreferredTopologyLevel defines the preferred level in the topology hierarchy
	// that this constraint applies to (e.g., "rack", "zone", "datacenter").
	// Jobs will be scheduled to maintain locality at this level when possible.
	PreferredTopologyLevel string `json:"preferredTopologyLevel,omitempty"`

	// RequiredTopologyLevel defines the maximal level in the topology hierarchy
	// that all pods must be scheduled within.
	// If set, all pods of the job must be scheduled within a single domain at this level.
	RequiredTopologyLevel string `json:"requiredTopologyLevel,omitempty"`

	// Topology specifies the name of the topology CRD that defines the
	// physical layout to use for this constraint. This allows for supporting
	// multiple different topology configurations in the same cluster.
	Topology string `json:"topology,omitempty"`
}

// PodGroupStatus is the observed state of a PodGroup, written by KAI's scheduler and
// podgroupcontroller, never by a pod grouper: KAI podgroup_types.go PodGroupStatus.
type PodGroupStatus struct {
	// The conditions of PodGroup.
	// +optional
	Conditions []PodGroupCondition `json:"conditions,omitempty"`

	// The scheduling conditions of PodGroup.
	// +optional
	SchedulingConditions []SchedulingCondition `json:"schedulingConditions,omitempty"`

	// Status of resources related to pods connected to this pod group.
	// +optional
	ResourcesStatus PodGroupResourcesStatus `json:"resourcesStatus,omitempty"`
}

// PodGroupConditionType is the type of a PodGroupCondition (KAI podgroup_types.go).
type PodGroupConditionType string

// PodGroupResourcesStatus contains the status of resources related to pods connected to this
// pod group: KAI podgroup_types.go PodGroupResourcesStatus.
type PodGroupResourcesStatus struct {
	// Current allocated GPU (in fracions), CPU (in millicpus), Memory in megabytes and any extra resources in ints
	// for all preemptible resources used by pods of this pod group
	// +optional
	Allocated corev1.ResourceList `json:"allocated,omitempty"`

	// Current allocated GPU (in fracions), CPU (in millicpus) and Memory in megabytes and any extra resources in ints
	// for all non-preemptible resources used by pods of this pod group
	// +optional
	AllocatedNonPreemptible corev1.ResourceList `json:"allocatedNonPreemptible,omitempty"`

	// Current requested GPU (in fracions), CPU (in millicpus) and Memory in megabytes
	// by all running and pending jobs in queue and child queues
	// +optional
	Requested corev1.ResourceList `json:"requested,omitempty"`
}

// PodGroupCondition contains details for the current state of this pod group: KAI
// podgroup_types.go PodGroupCondition.
type PodGroupCondition struct {
	// Type is the type of the condition
	Type PodGroupConditionType `json:"type,omitempty"`

	// Status is the status of the condition.
	Status corev1.ConditionStatus `json:"status,omitempty"`

	// The ID of condition transition.
	TransitionID string `json:"transitionID,omitempty"`

	// Last time the phase transitioned from another to current phase.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`

	// Unique, one-word, CamelCase reason for the phase's last transition.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Human-readable message indicating details about last transition.
	// +optional
	Message string `json:"message,omitempty"`
}

// SchedulingCondition contains details for the current scheduling state of this pod group:
// KAI podgroup_types.go SchedulingCondition.
type SchedulingCondition struct {
	// Type is the type of the scheduling condition
	Type SchedulingConditionType `json:"type,omitempty"`

	// The Node Pool name on witch the scheduling condition happened
	NodePool string `json:"nodePool,omitempty"`

	// Unique, one-word, CamelCase reason for the phase's last transition.
	// Deprecated: use Reasons instead
	// +optional
	Reason string `json:"reason,omitempty"`

	// Human-readable message indicating details about the condition.
	// Deprecated: use Reasons instead
	// +optional
	Message string `json:"message,omitempty"`

	// Reasons is a map of UnschedulableReason to a human-readable message indicating details about the condition.
	// Clients can handle specific reasons, but more types of reasons could be added in the future.
	// +optional
	Reasons UnschedulableExplanations `json:"reasons,omitempty"`

	// Last time the phase transitioned from another to current phase.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`

	// Status is the status of the condition.
	// +optional
	Status corev1.ConditionStatus `json:"status,omitempty"`

	// The ID of condition transition.
	TransitionID string `json:"transitionID,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=pg

// PodGroup is the Schema for the podgroups API: a gang of pods KAI schedules together (KAI
// podgroup_types.go PodGroup; namespaced, shortName pg, status subresource).
type PodGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodGroupSpec   `json:"spec,omitempty"`
	Status PodGroupStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PodGroupList contains a list of PodGroup (KAI podgroup_types.go PodGroupList).
type PodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodGroup `json:"items"`
}

// SchedulingConditionType is the type of a SchedulingCondition (KAI podgroup_types.go).
type SchedulingConditionType string

const (
	// UnschedulableOnNodePool means the pod group is Unschedulable on the current node pool
	// (KAI podgroup_types.go).
	UnschedulableOnNodePool SchedulingConditionType = "UnschedulableOnNodePool"
)

const (
	// PodGroupReasonUnschedulable reason in SchedulingCondition means that the scheduler
	// can't schedule the pod group right now, for example due to insufficient resources in the
	// cluster (KAI podgroup_types.go).
	PodGroupReasonUnschedulable = "Unschedulable"
)

// UnschedulableReason is a brief, one-word reason a pod group is unschedulable (KAI
// podgroup_types.go).
type UnschedulableReason string

// UnschedulableExplanations lists why a pod group is unschedulable (KAI podgroup_types.go).
type UnschedulableExplanations []UnschedulableExplanation

// UnschedulableExplanation is one reason a pod group is unschedulable, with a message and
// optional structured details (KAI podgroup_types.go).
type UnschedulableExplanation struct {
	// Reason is a brief, one-word explanation of why the pod group is unschedulable.
	Reason UnschedulableReason `json:"reason,omitempty"`

	// Message is a human-readable explanation of why the pod group is unschedulable. Can be used by clients when not programmed to handle specific error.
	// +optional
	Message string `json:"message,omitempty"`

	// Details contains structured information about why the pod group is unschedulable. Can be used by clients to handle specific errors.
	// Different fields will be set depending on the reason for unschedulability. Use helper functions, such as AsQueueDetails(), to interpret the details.
	// +optional
	Details *UnschedulableExplanationDetails `json:"details,omitempty"`
}

// UnschedulableExplanationDetails holds structured details of an UnschedulableExplanation (KAI
// podgroup_types.go).
type UnschedulableExplanationDetails struct {
	// QueueDetails contains information about the queue that the pod group is trying to schedule in. Used in NonPreemptibleOverQuota and OverLimit reasons.
	// +optional
	QueueDetails *QuotaDetails `json:"queueDetails,omitempty"`
}

// QuotaDetails describes the queue quota a pod group ran into (KAI podgroup_types.go).
type QuotaDetails struct {
	// Name is the name of the queue.
	Name string `json:"name,omitempty"`

	// QueueRequestedResources is the requested resources of the queue at the time of the error.
	// +optional
	QueueRequestedResources corev1.ResourceList `json:"queueRequestedResources,omitempty"`

	// QueueDeservedResources is the deserved resources of the queue at the time of the error.
	// +optional
	QueueDeservedResources corev1.ResourceList `json:"queueDeservedResources,omitempty"`

	// QueueAllocatedNonPreemptibleResources is the allocated non-preemptible resources of the queue at the time of the error.
	// +optional
	QueueAllocatedNonPreemptibleResources corev1.ResourceList `json:"queueAllocatedNonPreemptibleResources,omitempty"`

	// PodGroupRequestedResources is the requested resources needed to satisfy the minimum number of pods for the pod group at the time of the error, including preemptible and non-preemptible resources.
	// +optional
	PodGroupRequestedResources corev1.ResourceList `json:"podGroupRequestedResources,omitempty"`

	// PodGroupRequestedNonPreemptibleResources is the requested non-preemptible resources of the pod group at the time of the error.
	// +optional
	PodGroupRequestedNonPreemptibleResources corev1.ResourceList `json:"podGroupRequestedNonPreemptibleResources,omitempty"`

	// QueueAllocatedResources is the allocated resources of the queue at the time of the error, including preemptible and non-preemptible resources.
	// +optional
	QueueAllocatedResources corev1.ResourceList `json:"queueAllocatedResources,omitempty"`

	// QueueResourceLimits is the resource limits of the queue at the time of the error.
	// +optional
	QueueResourceLimits corev1.ResourceList `json:"queueResourceLimits,omitempty"`
}

// The UnschedulableReason values KAI's scheduler writes (KAI podgroup_types.go).
const (
	// NonPreemptibleOverQuota means that the pod group is not schedulable because scheduling it would make the queue's
	// non-preemptible resource allocation larger than the queue's quota.
	NonPreemptibleOverQuota UnschedulableReason = "NonPreemptibleOverQuota"

	// OverLimit means that the pod group is not schedulable because scheduling it would exceed the queue's limits.
	OverLimit UnschedulableReason = "OverLimit"

	// PreemptionDelayNotElapsed means the pod group is within its preemption delay window
	// and may not yet trigger eviction of other workloads.
	PreemptionDelayNotElapsed UnschedulableReason = "PreemptionDelayNotElapsed"

	// QueueDoesNotExist means the pod group references a queue that doesn't exist or has no parent queue.
	QueueDoesNotExist UnschedulableReason = "QueueDoesNotExist"
)

// String renders the explanations one per line as "<reason>: <message>" (KAI
// podgroup_types.go UnschedulableExplanations.String).
func (e UnschedulableExplanations) String() string {
	var sb strings.Builder
	for _, v := range e {
		sb.WriteString(string(v.Reason))
		sb.WriteString(": ")
		sb.WriteString(v.Message)
		sb.WriteString("\n")
	}
	return sb.String()
}
