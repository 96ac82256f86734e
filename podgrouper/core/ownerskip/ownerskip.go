// Package ownerskip is the one place where gangmap decides whether and how KAI's skip
// annotation (kai.scheduler/skip-podgrouper: "true") goes on a workload's top owner, so that
// support for KAI releases can gate it here.
//
// KAI's pod-grouper leaves a pod alone when the annotation, with the exact value "true", is on
// the pod or on any owner in its chain (KAI v0.15+: pkg/podgrouper/pod_controller.go Reconcile,
// shouldSkipPodGrouper and shouldSkipAnyOwner; design docs/developer/designs/external-podgroups).
// KAI reads owners by metadata with an uncached client and stops at the first owner it may not
// read (pkg/podgrouper/podgrouper/podgrouper.go getResourceOwners, handleGetOwnerError), so the
// mark on the top owner works only where KAI may get that kind — which KAI needs anyway to see
// the kind at all.
//
// Marked owners also carry gangmap's annotation gangmap.io/skip-podgrouper: "set", so gangmap
// removes only a mark it set itself (never one a user put there) when the kind stops being
// gangmap's.
package ownerskip

import (
	"context"
	"encoding/json"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// SetBy is gangmap's annotation on a top owner whose skip annotation gangmap set; its value is
// SetByValue.
const (
	SetBy      = "gangmap.io/skip-podgrouper"
	SetByValue = "set"
)

// Results of Mark and Unmark, the result label of gangmap_owner_skip_marks_total.
const (
	ResultMarked   = "Marked"
	ResultUnmarked = "Unmarked"
	ResultError    = "Error"
)

var marks = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
	Name: "gangmap_owner_skip_marks_total",
	Help: "Top owners gangmap marked with KAI's skip annotation (Marked), unmarked when their kind stopped being gangmap's (Unmarked), or failed to write (Error).",
}, []string{"result"})

// Marker writes the mark on top owners. A nil *Marker marks nothing (the mark is off: dry-run,
// --mark-workloads=false, or a KAI release that does not honour the annotation,
// kairelease.Release.HonoursSkipAnnotation).
type Marker struct {
	// Client patches top owners (merge patch of metadata.annotations; RBAC patch on the workload
	// kinds gangmap groups, and only on those).
	Client client.Client
}

// Marked reports whether KAI's pod-grouper skips the pods of obj because of obj itself: the skip
// annotation with the exact value "true".
func Marked(obj client.Object) bool {
	return obj.GetAnnotations()[kaikeys.SkipPodGrouper] == "true"
}

// Mark sets the skip annotation and gangmap's SetBy on owner unless it carries the skip
// annotation already (set by gangmap or by a user, who then keeps it). It reports whether it
// wrote. A nil Marker does nothing.
//
// A cluster-scoped owner is never marked: a pod of any namespace may name one as its owner
// (Kubernetes allows a namespaced dependent a cluster-scoped owner), and the mark would make
// KAI's pod-grouper skip the pods of every other namespace that owner has: a user of one
// namespace must not cause a write that acts on another. Such a workload's first-pod guarantee
// rests on the webhook (strict mode) alone.
func (m *Marker) Mark(ctx context.Context, owner *unstructured.Unstructured) (bool, error) {
	if m == nil || Marked(owner) || owner.GetNamespace() == "" {
		return false, nil
	}
	return m.patch(ctx, owner, map[string]any{kaikeys.SkipPodGrouper: "true", SetBy: SetByValue}, ResultMarked)
}

// Unmark removes the skip annotation and SetBy from owner when gangmap set them (SetBy present),
// so KAI groups the workload's later pods again once gangmap no longer does. It reports whether
// it wrote. A nil Marker does nothing.
func (m *Marker) Unmark(ctx context.Context, owner *unstructured.Unstructured) (bool, error) {
	if m == nil || owner.GetAnnotations()[SetBy] != SetByValue {
		return false, nil
	}
	wrote, err := m.patch(ctx, owner, map[string]any{kaikeys.SkipPodGrouper: nil, SetBy: nil}, ResultUnmarked)
	return wrote, client.IgnoreNotFound(err)
}

// StripMark removes gangmap's mark (the skip annotation with SetBy) from annotations copied off
// a top owner, so the PodGroup does not change when gangmap marks its workload (KAI's default
// metadata copies every top-owner annotation). A skip annotation a user set stays.
func StripMark(annotations map[string]string) {
	if annotations[SetBy] == SetByValue {
		delete(annotations, SetBy)
		delete(annotations, kaikeys.SkipPodGrouper)
	}
}

// patch merges annotations into owner's and counts the write as result (ResultError when it
// fails); it reports whether it wrote.
func (m *Marker) patch(ctx context.Context, owner *unstructured.Unstructured, annotations map[string]any, result string) (bool, error) {
	// The UID makes the patch a precondition: the API server refuses a patch that would change
	// metadata.uid (immutable), so a workload deleted and created again under the same name is not
	// marked for its predecessor. Strings and nulls always marshal.
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": owner.GetUID(), "annotations": annotations}})
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(owner.GroupVersionKind())
	obj.SetNamespace(owner.GetNamespace())
	obj.SetName(owner.GetName())
	err := m.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body))
	if err != nil {
		result = ResultError
	}
	marks.WithLabelValues(result).Inc()
	return err == nil, err
}
