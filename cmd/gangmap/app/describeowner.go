package app

import (
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// notWorkloads are the kinds "gangmap get" refuses to list as workloads: a Pod's or a
// PodGroup's workload is its top owner, which describe shows (describedWorkload).
var notWorkloads = map[schema.GroupKind]string{
	{Kind: "Pod"}: "pod",
	{Group: v2alpha2.SchemeGroupVersion.Group, Kind: v2alpha2.Kind}: "podgroup",
}

// refuseNotWorkload fails "gangmap get" for a kind that is not a workload (notWorkloads), saying
// what to run instead.
func refuseNotWorkload(m *meta.RESTMapping) error {
	short, ok := notWorkloads[m.GroupVersionKind.GroupKind()]
	if !ok {
		return nil
	}
	return fail(ExitUnusable, "%s: not a workload kind; gangmap get lists the workloads of one kind (gangmap get jobsets, gangmap get leaderworkersets); "+
		"to see the workload of one %s, its gang and where its pods go, run gangmap describe %s/NAME", m.Resource.Resource, short, short)
}

// describedWorkload returns the workload describe shows for obj: obj itself when it has no owner,
// else its top owner, the object at the end of its chain of owner references (walkOwners), as
// KAI's pod-grouper and gangmap group a pod by its top owner (podgrouper/core/owners). So
// "describe pod/NAME" of a LeaderWorkerSet's worker, or "describe podgroup/NAME", shows the
// LeaderWorkerSet with its gang, and a note on stderr says so. An owner that cannot be read, or
// one replaced by another object of its name, is an error naming it.
func (c *kubeClients) describedWorkload(ctx context.Context, obj *unstructured.Unstructured, stderr io.Writer) (*unstructured.Unstructured, error) {
	refs := obj.GetOwnerReferences()
	if len(refs) == 0 {
		return obj, nil
	}
	ns := obj.GetNamespace()
	top, _ := walkOwners(ctx, ns, refs, c, nil)
	gv, err := schema.ParseGroupVersion(top.APIVersion)
	if err != nil {
		return nil, fail(ExitProblems, "%s/%s: owner reference %s/%s: %v", obj.GetKind(), obj.GetName(), top.Kind, top.Name, err)
	}
	m, err := c.mapper.RESTMapping(gv.WithKind(top.Kind).GroupKind(), gv.Version)
	var owner *unstructured.Unstructured
	if err == nil {
		owner, err = c.dynamic.Resource(m.Resource).Namespace(scope(m, ns)).Get(ctx, top.Name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, fail(ExitProblems, "%s/%s belongs to %s/%s, which is not found in namespace %s", obj.GetKind(), obj.GetName(), top.Kind, top.Name, ns)
	case err != nil:
		return nil, fail(ExitProblems, "%s/%s belongs to %s/%s, which cannot be read: %v", obj.GetKind(), obj.GetName(), top.Kind, top.Name, err)
	case owner.GetUID() != top.UID:
		return nil, fail(ExitProblems, "%s/%s belongs to %s/%s (uid %s), which is gone: %s/%s now has uid %s", obj.GetKind(), obj.GetName(), top.Kind, top.Name, top.UID, top.Kind, top.Name, owner.GetUID())
	}
	fmt.Fprintf(stderr, "note: %s/%s belongs to %s/%s (its top owner, the workload KAI groups its pods by): describing %s/%s\n",
		obj.GetKind(), obj.GetName(), top.Kind, top.Name, top.Kind, top.Name)
	return owner, nil
}
