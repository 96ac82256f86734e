package owners

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SharedReader gives an owner as another cache of the process already holds it (the grouper's
// workload informers), read-only and without an API request. It must never start watching a kind
// on its own.
type SharedReader interface {
	// Watches says the cache watches gvk: the walker then keeps no copy of its owners, even of
	// one it had to read from the API server (the informer had not caught up yet).
	Watches(gvk schema.GroupVersionKind) bool
	// GetShared gives the object; ok is false when it cannot (a kind it does not watch, an
	// informer not synced, an object it does not hold): the walker then reads the owner from the
	// API server.
	GetShared(ctx context.Context, gvk schema.GroupVersionKind, key types.NamespacedName) (owner *unstructured.Unstructured, ok bool)
}

// fromShared returns the owner ref names as Shared holds it, slimmed (see slim), or nil when
// Shared does not hold it, or holds an object of another UID, group/kind, name or
// namespace (a replaced owner the cache has not caught up with, or a reference that does not
// name that object: the API server's answer decides, as without Shared). Nothing is cached: the
// informer already holds the owner, so the walker keeps no copy of it.
func (w *Walker) fromShared(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey, ref metav1.OwnerReference) *metav1.PartialObjectMetadata {
	u, ok := w.Shared.GetShared(ctx, gvk, key)
	if !ok || u.GetUID() != ref.UID || u.GetName() != key.Name || u.GetNamespace() != key.Namespace ||
		u.GroupVersionKind().GroupKind() != gvk.GroupKind() {
		return nil
	}
	w.noteLocation(ref.UID, key.Namespace)
	md, _ := u.Object["metadata"].(map[string]interface{})
	labels, _ := md["labels"].(map[string]interface{})
	annotations, _ := md["annotations"].(map[string]interface{})
	return slim(ref, gvk, key, u.GetOwnerReferences(), anyStrings(labels), anyStrings(annotations), w.extraLabels())
}
