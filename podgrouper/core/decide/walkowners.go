package decide

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/podgrouper/core/owners"
)

// WalkOwners is the owners.SharedReader for the Decider's Walker (owners.Walker.Shared): an owner
// of a kind whose top owners the Decider has read through the cache (so the kind's workload
// informer runs) and that the hub still groups is read from SharedOwners, as the informer holds
// it, without an API request and without a copy the walker would keep. Any other kind (Jobs,
// ReplicaSets, native kinds, a kind no pod has been grouped under yet) is not given, so the walk
// reads it from the API server as before and never starts an informer of its own.
func (d *Decider) WalkOwners() owners.SharedReader { return walkOwners{d} }

type walkOwners struct{ d *Decider }

// Watches implements owners.SharedReader: a kind whose top owners were read through the cache
// and that the hub still groups.
func (w walkOwners) Watches(gvk schema.GroupVersionKind) bool {
	d := w.d
	return d.SharedOwners != nil && d.readKind(gvk) && d.Hub != nil && d.Hub.GetPodGrouperPlugin(gvk) != nil
}

// GetShared implements owners.SharedReader.
func (w walkOwners) GetShared(ctx context.Context, gvk schema.GroupVersionKind, key types.NamespacedName) (*unstructured.Unstructured, bool) {
	if !w.Watches(gvk) {
		return nil, false
	}
	return w.d.SharedOwners.GetShared(ctx, gvk, key)
}

// readKind says a top owner of gvk was read through the cache (noteReadKind).
func (d *Decider) readKind(gvk schema.GroupVersionKind) bool {
	_, ok := d.readKinds.Load(gvk)
	return ok
}

// noteReadKind remembers that a top owner of gvk was read through the cache: its informer has
// been started.
func (d *Decider) noteReadKind(gvk schema.GroupVersionKind) {
	if !d.readKind(gvk) {
		d.readKinds.Store(gvk, true)
	}
}
