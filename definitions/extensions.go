package definitions

// ExtensionsAnnotation is the annotation on a Karta object that carries gangmap's additions
// (the JSON form of Extensions) when the object is stored through the upstream Karta CRD, whose
// structural schema prunes spec.gangmap. The loader merges it into Spec.Gangmap.
const ExtensionsAnnotation = "gangmap.io/extensions"

// Extensions are gangmap's additions to the Workload Map format: the gang facts upstream's format
// cannot express. In a file they sit at spec.gangmap; in the cluster they sit in the
// ExtensionsAnnotation, because the upstream Karta CRD prunes unknown fields (a definition read
// back from the API server would otherwise silently lose them).
type Extensions struct {
	// Components adds facts to named components of the structure definition.
	Components []ComponentExtension `json:"components,omitempty"`
	// Gang shapes the gang beyond what optimizationInstructions can say.
	Gang *GangExtension `json:"gang,omitempty"`
	// OwnsNoPods says when a workload of the kind creates no pods of its own (a RayJob with
	// spec.clusterSelector runs on an existing RayCluster, whose pods are that RayCluster's): its
	// plan is then empty by design, the paths that resolve to nothing on it are not drift, and
	// the plan gives Reason.
	OwnsNoPods *OwnsNoPods `json:"ownsNoPods,omitempty"`
	// Notes are what the plan says when a workload uses a field of its kind gangmap does not
	// follow (JobSet spec.scheduling.replicatedJobPolicies), and what it does instead.
	Notes []DefinitionNote `json:"notes,omitempty"`
}

// DefinitionNote is a plan note the definition gives when When holds on the workload.
type DefinitionNote struct {
	// When is an object-side boolean expression. Required.
	When Expr `json:"when"`
	// Note says what the workload asks for, what gangmap does instead and why (citing what the
	// native KAI plugin does for the same manifest). Required.
	Note string `json:"note"`
}

// OwnsNoPods is a condition under which the workload creates no pods of its own, and why.
type OwnsNoPods struct {
	// When is an object-side boolean expression. Required.
	When Expr `json:"when"`
	// Reason says why, for a person, citing the operator's code. Required.
	Reason string `json:"reason"`
}

// ComponentExtension adds facts to one component, named by Name.
type ComponentExtension struct {
	// Name is the component's name in the structure definition.
	Name string `json:"name"`
	// PodsPerReplicaPath yields the pods each replica of the component runs, per instance (JobSet
	// parallelism, LWS size, Ray numOfHosts, Dynamo multinode nodeCount). Absent means 1. An
	// object-side expression; numbers or numeric strings.
	PodsPerReplicaPath Expr `json:"podsPerReplicaPath,omitzero"`
	// PodIndexPath yields, on the pod, the pod's 0-based index among its role's pods in its
	// PodGroup: the operator's per-pod index label (Kubeflow training.kubeflow.org/replica-index,
	// Job batch.kubernetes.io/job-completion-index, LWS leaderworkerset.sigs.k8s.io/worker-index).
	// A pod-side expression; one whole number. It places the pod in its segment when the role is
	// segmented (kai.scheduler/segment-size, see Segments in package gang): segment = index / size,
	// as KAI's PyTorchJob plugin (pytorch_grouper.go getPodSegmentIndex). Without it the role is
	// never segmented (a plan note says so when segment annotations ask for it).
	PodIndexPath Expr `json:"podIndexPath,omitzero"`
	// PodReplicaIndexPath yields, on the pod, its replica's index when podIndexPath counts the
	// pod within its replica (a Grove PodCliqueScalingGroup replica of a multi-node Dynamo
	// component: grove.io/podcliquescalinggroup-replica-index): the pod's index in its role is
	// then replica × pods per replica + podIndexPath. Without it, the component's own
	// podSelector.replicaSelector (JobSet job-index over the Job's completion index) plays that
	// part when it has one. A pod-side expression; one whole number.
	PodReplicaIndexPath Expr `json:"podReplicaIndexPath,omitzero"`
	// SegmentSizePath yields the framework's own segment size for the component's pods, per
	// instance, when the framework has a field for it (LWS
	// spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize, which KAI's LWS plugin reads before
	// the kai.scheduler/segment-size annotation: lws_grouper.go getSegmentSize). 0 says the
	// workload sets none (the annotations decide; write `<path> // 0`, as null is a path miss).
	// An object-side expression; a number or numeric string.
	SegmentSizePath Expr `json:"segmentSizePath,omitzero"`
	// SegmentLeader, on a segmented component, names a one-pod role whose pod takes index 0 of
	// this component's index space (the LWS leader: worker-index "0"; its workers count from 1)
	// and joins the segments as KAI's LWS plugin joins the leader (lws_grouper.go
	// buildSubGroupsWithSegmentation): policy LeaderWorker puts it in the first segment,
	// LeaderExcluded keeps it in its own sub-group before the segments.
	SegmentLeader *SegmentLeader `json:"segmentLeader,omitempty"`
	// Onboard says where in the workload object the component's pods take their scheduler name,
	// labels and annotations, for `gangmap onboard`, when the definition builds the component's
	// pod template from the framework's own fields (KServe's predictor, Dynamo's services) instead
	// of finding it. It wins over the places onboarding would derive from the spec definition.
	Onboard *OnboardPaths `json:"onboard,omitempty"`
}

// OnboardPaths are plain jq paths into the workload object (jq's path() must accept them; `A //
// B` is read as A), each yielding one place per instance of the component, in instance order.
// A field the operator does not expose is left out: onboarding then says it cannot write it.
type OnboardPaths struct {
	// SchedulerNamePath is the string the operator copies into its pods' spec.schedulerName.
	SchedulerNamePath Expr `json:"schedulerNamePath,omitzero"`
	// LabelsPath and AnnotationsPath are the maps the operator copies into its pods' labels and
	// annotations.
	LabelsPath      Expr `json:"labelsPath,omitzero"`
	AnnotationsPath Expr `json:"annotationsPath,omitzero"`
	// Unreachable lists pods of the component that the operator builds without taking some of
	// these fields from the workload object (NIMService's multi-node workers get no scheduler
	// name; no TrainJob field reaches its pods' scheduler name): there is no place to write, so
	// `gangmap onboard` refuses the workload naming the component, those pods and Reason, and
	// points to the grouper's onboarding policy, which sets the fields on the pods at creation.
	Unreachable []OnboardUnreachable `json:"unreachable,omitempty"`
}

// OnboardUnreachable says which pod fields the operator gives no way to set for some pods of a
// component, and why (the operator's code that builds those pods).
type OnboardUnreachable struct {
	// Pods names those pods for a person ("multi-node worker pods"). Required.
	Pods string `json:"pods"`
	// When is an object-side boolean expression: the pods exist only when it holds (a multi-node
	// NIMService). Absent: always.
	When Expr `json:"when,omitzero"`
	// Fields are the pod fields the operator does not take from the workload for them: any of
	// schedulerName, labels, annotations. Required.
	Fields []string `json:"fields"`
	// Reason says why, citing the operator's source (file and type or function). Required.
	Reason string `json:"reason"`
}

// SegmentLeader names the leader role of a segmented component and how it joins the segments.
type SegmentLeader struct {
	// Component is the leader's component: a role of one pod per PodGroup, whose pod has index 0
	// of the segmented component's podIndexPath. Required.
	Component string `json:"component"`
	// PolicyPath yields the policy per instance: "LeaderWorker" (the leader is in the first
	// segment; the default when absent or null) or "LeaderExcluded" (the leader has its own
	// sub-group; the workers must divide evenly into segments). LWS's
	// spec.leaderWorkerTemplate.subGroupPolicy.subGroupPolicyType // "LeaderWorker". An
	// object-side expression.
	PolicyPath Expr `json:"policyPath,omitzero"`
}

// GangExtension shapes the gang.
type GangExtension struct {
	// PerReplicaOf names a component whose every replica is its own gang: one PodGroup per
	// replica (LWS: one gang per group index). The component needs a podSelector.replicaSelector
	// so each pod can say which replica it belongs to. Its descendants' pods are divided evenly
	// among its replicas.
	PerReplicaOf string `json:"perReplicaOf,omitempty"`
	// Startup describes a workload that creates some roles only after others are Ready or
	// Complete (JobSet dependsOn and InOrder, LWS LeaderReady, MPIJob WaitForWorkersReady): the
	// gang minimum counts only the roles whose pods exist or can be created now, so the gang
	// never waits for pods that cannot exist yet.
	Startup *StartupPolicy `json:"startup,omitempty"`
}

// StartupPolicy says which roles a workload's operator creates late (after others are Ready or
// Complete) or has finished, so the gang minimum is satisfiable at every step of the start
// sequence. A role the policy holds keeps its own sub-group and that sub-group's minimum (its
// pods, once they exist, still start as one unit), but the PodGroup's minimum does not count it:
// minSubGroup counts only the top-level sub-groups of roles not held, and a flat minMember only
// their pods.
//
// Two forms, usable together:
//   - static (first, firstInstances): while When holds, every role not named starts after the
//     named ones (LWS LeaderReady, MPIJob WaitForWorkersReady);
//   - from the workload's state (holds): the operator's own creation rule written over the
//     workload's spec and status (JobSet dependsOn and InOrder: a replicated job is created only
//     once the ones it depends on reached Ready or Complete).
type StartupPolicy struct {
	// When is an object-side boolean expression (jq or CEL); the policy applies when it is true.
	// Absent means always.
	When Expr `json:"when,omitzero"`
	// First lists the components whose pods are created first. Only their roles (and those of
	// FirstInstances) count towards the gang minimum while the policy applies; the other roles'
	// pods still join the PodGroup, in their own sub-groups where there are sub-groups.
	First []string `json:"first,omitempty"`
	// FirstInstances is an object-side expression yielding the instance ids that are created
	// first, for workloads that order instances of one component.
	FirstInstances Expr `json:"firstInstances,omitzero"`
	// Holds is an object-side expression yielding an object that maps a role (an instance id, or
	// a component name for all of its instances) to the reason the gang minimum leaves it out
	// now: its pods cannot exist yet ("created when initializer is Complete") or have all run to
	// completion (KAI counts only live pods towards a gang). It is evaluated on every plan, so
	// the gang follows the workload's status; null or an empty object holds nothing.
	Holds Expr `json:"holds,omitzero"`
}

// ComponentExtension returns the extension of the named component, or nil.
func (s *KartaSpec) ComponentExtension(name string) *ComponentExtension {
	if s.Gangmap == nil {
		return nil
	}
	for i := range s.Gangmap.Components {
		if s.Gangmap.Components[i].Name == name {
			return &s.Gangmap.Components[i]
		}
	}
	return nil
}
