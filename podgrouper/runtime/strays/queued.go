package strays

import (
	corev1 "k8s.io/api/core/v1"
)

// queued is what the collector keeps of an enqueued workload until the workload is deleted: its
// owner's identity as strings (about 140 bytes in the map, against about 650 for the smallest
// unstructured object holding them, or the caller's whole workload) and the names to keep. The
// identity is all that Collect reads of the workload (the namespace to list, the UID of owner
// references) and what its Events' involvedObject records (an Event on an ObjectReference
// records it as it is).
type queued struct {
	owner corev1.ObjectReference
	keep  []string
}

// queuedOf is what the collector keeps of w, in its owner's own strings (none copied).
func queuedOf(w Workload) queued {
	o := w.Owner
	return queued{owner: corev1.ObjectReference{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName(),
		UID: o.GetUID(), ResourceVersion: o.GetResourceVersion()}, keep: w.Keep}
}
