// Package grouper is the contract between the pod controller and whatever decides a pod's
// PodGroup: KAI's Grouper interface (pkg/podgrouper/podgrouper/plugins/grouper/interface.go),
// with a context added because gangmap's grouper evaluates expressions and reads the API.
package grouper

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// Grouper decides the PodGroup of a pod.
type Grouper interface {
	// Name names the grouper in logs and metrics.
	Name() string
	// GetPodGroupMetadata returns the PodGroup the pod belongs to, with the pod listed in the
	// PodsReferences of its sub-group (if the PodGroup has sub-groups). otherOwners is the owner
	// chain from the pod's direct owner to the top owner (the last element), as in KAI. A nil
	// result without an error means the grouper does not group this pod (KAI's contract).
	GetPodGroupMetadata(ctx context.Context, topOwner *unstructured.Unstructured, pod *corev1.Pod, otherOwners ...*metav1.PartialObjectMetadata) (*podgroup.Metadata, error)
}

// PlanGrouper is a Grouper that also says what it saw of the pod, for gangmap's findings
// (observed pods against the plan). GroupPod returns what GetPodGroupMetadata returns, and Seen.
type PlanGrouper interface {
	Grouper
	GroupPod(ctx context.Context, topOwner *unstructured.Unstructured, pod *corev1.Pod, otherOwners ...*metav1.PartialObjectMetadata) (*podgroup.Metadata, Seen, error)
}

// Seen is what a PlanGrouper saw of one pod.
type Seen struct {
	// Plan is the workload's gang plan (nil when it could not be built).
	Plan *gang.Plan
	// Definition is the definition that planned it.
	Definition *definitions.Compiled
	// Role is the pod's role (its sub-group name in the plan), "" when none.
	Role string
	// Unclaimed says no component's podSelector matched the pod.
	Unclaimed bool
	// NotInPlan, when set, says the pod is in an instance or replica of its role that the plan
	// does not count (a *gang.NotInPlanError): the plan is older than the workload, or the
	// definition never names the instance. The grouper then treats the pod as it treats a pod in no
	// gang (KAI's default PodGroup when KAI's pod-grouper skips the workload, else nil).
	NotInPlan error
}

// Planner is a Grouper that can name every PodGroup its plan for a top owner uses (those may
// exist before any of their pods does, and are never strays).
type Planner interface {
	// PlannedPodGroups returns the names of the PodGroups of the top owner's current plan.
	PlannedPodGroups(ctx context.Context, topOwner *unstructured.Unstructured) ([]string, error)
}
