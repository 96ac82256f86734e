// Package kaikeys names the annotation and label keys of KAI Scheduler's pod-grouper contract
// (KAI pkg/common/constants and pkg/podgrouper/podgrouper/plugins/constants, v0.17), and
// gangmap's own keys, so every package spells them once.
package kaikeys

// Keys KAI's scheduler and pod-grouper read or write.
const (
	// PodGroupName is the pod annotation naming the pod's PodGroup, read by KAI's scheduler.
	PodGroupName = "pod-group-name"
	// SubGroupName is the pod label naming the pod's sub-group, read by KAI's scheduler.
	SubGroupName = "kai.scheduler/subgroup-name"
	// SkipPodGrouper on a pod (or an owner KAI can read), with the exact value "true", makes
	// KAI's pod-grouper (v0.15+) leave the pod alone.
	SkipPodGrouper = "kai.scheduler/skip-podgrouper"
	// DefaultQueueLabel is KAI's default --queue-label-key.
	DefaultQueueLabel = "kai.scheduler/queue"
	// DefaultNodePoolLabel is KAI's default --nodepool-label-key.
	DefaultNodePoolLabel = "kai.scheduler/node-pool"
	// ProjectLabel gives the queue "<project>" or "<project>-<node pool>".
	ProjectLabel = "project"
	// UserLabel is copied from the pod to the PodGroup (label and annotation).
	UserLabel = "user"
	// PriorityClassLabel names a priority class on owners or the pod.
	PriorityClassLabel = "priorityClassName"
	// PreemptibilityLabel is "preemptible" or "non-preemptible" on owners or the pod.
	PreemptibilityLabel = "kai.scheduler/preemptibility"
	// PreemptionDelay and StalenessGracePeriod are duration annotations on owners or the pod.
	PreemptionDelay      = "kai.scheduler/preemption-delay"
	StalenessGracePeriod = "kai.scheduler/staleness-grace-period"
	// Topology annotations on the top owner make the PodGroup's topology constraint.
	Topology                  = "kai.scheduler/topology"
	TopologyRequiredPlacement = "kai.scheduler/topology-required-placement"
	TopologyPreferredPlace    = "kai.scheduler/topology-preferred-placement"
	// TopOwnerMetadata is the PodGroup annotation (YAML {name,uid,group,version,kind}) KAI's
	// default grouper writes.
	TopOwnerMetadata = "kai.scheduler/top-owner-metadata"
	// DefaultQueue is the queue of a pod with no queue label (KAI DefaultQueueName).
	DefaultQueue = "default-queue"
	// DefaultPriorityClass is the default grouper's fallback priority class (not validated).
	DefaultPriorityClass = "train"
	// WarningReason is the Event reason KAI's pod-grouper uses on pods.
	WarningReason = "PodGrouperWarning"
)

// gangmap's own keys.
const (
	// Prefix begins every key gangmap writes. On a PodGroup gangmap writes, the keys under it are
	// gangmap's alone: the top owner's own gangmap.io/ annotations (its author's
	// gangmap.io/min-member, or a forged gangmap.io/status) are not copied there.
	Prefix = "gangmap.io/"
	// Definition is the PodGroup annotation naming the definition and its source
	// ("<name> (<source>)").
	Definition = "gangmap.io/definition"
	// GPUs is the PodGroup annotation with the gang's total GPUs (devices, fractions allowed).
	GPUs = "gangmap.io/gpus"
	// RoleGPUs is the PodGroup annotation with per-role GPUs as JSON
	// [{"role","pods","gpusPerPod","gpus"}].
	RoleGPUs = "gangmap.io/role-gpus"
	// StartHeld is the PodGroup annotation, on PodGroups of a definition with a start rule
	// (spec.gangmap.gang.startup), mapping each role the rule keeps out of the gang minimum now
	// to the reason, as JSON {"<role>": "<reason>"}; {} when none is held.
	StartHeld = "gangmap.io/start-held"
	// Status is the PodGroup annotation with the workload's status in the common vocabulary of
	// its definition's status mapping ("running"; several words comma separated), kept current as
	// the workload's status changes. KAI's PodGroup CRD is KAI's, so no printer column shows it:
	// kubectl get podgroups -o custom-columns=NAME:.metadata.name,STATUS:.metadata.annotations.gangmap\.io/status
	Status = "gangmap.io/status"
	// GroupedBy is the pod annotation gangmap sets with the value "gangmap" on pods it grouped.
	GroupedBy = "gangmap.io/grouped-by"
	// Held is the pod annotation, value "true", gangmap sets beside KAI's skip annotation on a pod
	// of a kind it groups whose decision failed (a plan that failed, unusable definitions, an
	// owner it may not read): the pod waits with no PodGroup instead of being grouped alone by
	// KAI's pod-grouper. gangmap removes both once it groups the pod, or once the kind is no
	// longer gangmap's (its definitions removed: the pod is handed back to KAI's pod-grouper).
	Held = "gangmap.io/held"
)
