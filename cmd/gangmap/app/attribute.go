package app

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/podgrouper/core/owners"
)

// ownerGraph reads an owner's own owner references: none when it has none or cannot be read
// (gone, forbidden, unknown kind), which ends the walk either way.
type ownerGraph interface {
	owner(ctx context.Context, ns string, ref metav1.OwnerReference) []metav1.OwnerReference
}

// workloadKey identifies a workload an owner reference can point at without a UID (offline):
// group, kind, namespace and name.
type workloadKey struct {
	group, kind, ns, name string
}

// refKey is the workloadKey ref (from an object of namespace ns) points at.
func refKey(ns string, ref metav1.OwnerReference) workloadKey {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	return workloadKey{group: gv.Group, kind: ref.Kind, ns: ns, name: ref.Name}
}

// rootsIndex finds the workload an owner reference points at among objs.
type rootsIndex struct {
	objs   []*unstructured.Unstructured
	byUID  map[string]int
	byName map[workloadKey]int
}

func newRootsIndex(objs []*unstructured.Unstructured) *rootsIndex {
	ix := &rootsIndex{objs: objs, byUID: map[string]int{}, byName: map[workloadKey]int{}}
	for i, o := range objs {
		if uid := string(o.GetUID()); uid != "" {
			ix.byUID[uid] = i
		}
		gvk := o.GroupVersionKind()
		ix.byName[workloadKey{group: gvk.Group, kind: gvk.Kind, ns: o.GetNamespace(), name: o.GetName()}] = i
	}
	return ix
}

// match returns the workload ref points at: by UID when the reference has one and some workload
// has it, else (manifests without UIDs) by group, kind, namespace and name.
func (ix *rootsIndex) match(ns string, ref metav1.OwnerReference) (int, bool) {
	if i, ok := ix.byUID[string(ref.UID)]; ok { // never "": only UIDs are keys
		return i, true
	}
	i, ok := ix.byName[refKey(ns, ref)]
	if ok && ref.UID != "" && ix.objs[i].GetUID() != "" {
		return 0, false // the reference names a workload with another UID: an older one
	}
	return i, ok
}

// attribute walks the owner references of each pod (walkOwners) to a workload of ix. It returns
// the pods of each workload by index, and the pods whose chain reaches no workload (loose), in the
// order of pods.
func attribute(ctx context.Context, pods []*corev1.Pod, ix *rootsIndex, g ownerGraph) (byWorkload map[int][]*corev1.Pod, loose []*corev1.Pod) {
	byWorkload = map[int][]*corev1.Pod{}
	for _, p := range pods {
		at := 0
		if _, ok := walkOwners(ctx, p.Namespace, p.OwnerReferences, g, func(ref metav1.OwnerReference) (ok bool) {
			at, ok = ix.match(p.Namespace, ref)
			return ok
		}); ok {
			byWorkload[at] = append(byWorkload[at], p)
		} else {
			loose = append(loose, p)
		}
	}
	return byWorkload, loose
}

// walkOwners follows owner references from refs in namespace ns, as the grouper's owner walk
// does (controller reference first: owners.Pick; at most owners.MaxDepth owners; a cycle stops
// it), reading each owner's references through g. It stops at the first reference stop accepts
// (nil: none), returning it and true; else it returns the last reference followed (the top owner
// when the chain ends, zero when refs is empty) and false.
func walkOwners(ctx context.Context, ns string, refs []metav1.OwnerReference, g ownerGraph, stop func(metav1.OwnerReference) bool) (metav1.OwnerReference, bool) {
	var last metav1.OwnerReference
	seen := map[metav1.OwnerReference]bool{}
	for depth := 0; depth < owners.MaxDepth && len(refs) > 0; depth++ {
		last = owners.Pick(refs)
		if stop != nil && stop(last) {
			return last, true
		}
		if seen[last] {
			break
		}
		seen[last] = true
		refs = g.owner(ctx, ns, last)
	}
	return last, false
}
