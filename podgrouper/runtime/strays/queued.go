package strays

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// queued is what the collector keeps of an enqueued workload until the workload is deleted: its
// owner's identity as strings (about 120 bytes in the map, against about 650 for the smallest
// unstructured object holding them, or the caller's whole workload) and the names to keep.
type queued struct {
	owner ownerRef
	keep  []string
}

// ownerRef is a workload's identity: all that Collect reads of it (the namespace to list, the
// UID of owner references) and what its Events' involvedObject records.
type ownerRef struct {
	apiVersion, kind, namespace, name string
	uid                               types.UID
	resourceVersion                   string
}

// refOf is the identity of o, in o's own strings (none copied).
func refOf(o *unstructured.Unstructured) ownerRef {
	return ownerRef{apiVersion: o.GetAPIVersion(), kind: o.GetKind(), namespace: o.GetNamespace(), name: o.GetName(),
		uid: o.GetUID(), resourceVersion: o.GetResourceVersion()}
}

// workload is the Workload to look at: a new object with the owner's identity.
func (q queued) workload() Workload {
	o := &unstructured.Unstructured{Object: make(map[string]any, 3)}
	o.SetAPIVersion(q.owner.apiVersion)
	o.SetKind(q.owner.kind)
	o.SetNamespace(q.owner.namespace)
	o.SetName(q.owner.name)
	o.SetUID(q.owner.uid)
	o.SetResourceVersion(q.owner.resourceVersion)
	return Workload{Owner: o, Keep: q.keep}
}
