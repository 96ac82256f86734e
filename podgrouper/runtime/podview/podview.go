// Package podview is what gangmap keeps of a pod and of a workload: the fields its decisions
// read. The admission webhook decodes an admitted pod into the view (DecodePod, the same as Pod
// of the typed pod); the grouper's pod cache (podcache) keeps less, a Record per pod (metadata,
// priority class, phase: what the pod controller reads for a definition whose pod-side
// expressions read only .metadata, the usual case), and the controller reads the whole pod from
// the API server and makes it the view for any other definition, so the controller and the
// webhook decide on the same fields. Workloads and the other cached objects go through
// TransformWorkload.
//
// What each decision reads of a pod (so what Pod keeps):
//   - selecting the pod and walking its owners (decide.Decider): metadata.namespace, name,
//     generateName, uid, ownerReferences, deletionTimestamp; spec.schedulerName;
//   - placing the pod in its component and gang (a definition's pod-side expressions,
//     definitions.Compiled.PodInput): metadata.labels and annotations for every catalog
//     definition; an expression that reads beyond .metadata sees this view, not the whole pod;
//   - KAI's default PodGroup metadata (defaultgrouper): metadata.labels and annotations (queue,
//     project, node pool, user, priority class, preemptibility) and spec.priorityClassName;
//   - labelling the pod (controller.labelPod, a merge patch of gangmap's keys only): the
//     pod-group-name and skip annotations and the sub-group label;
//   - resource accounting (GPUs: whole devices, fractions, DRA claims) and the pod's place on a
//     node: every container's and init container's name, resources and restart policy, spec.resources,
//     spec.overhead, spec.resourceClaims, spec.nodeName, and status.phase;
//   - the informer itself: metadata.resourceVersion and creationTimestamp.
//
// Dropped: managed fields, finalizers, every other spec field (images, commands, env, volumes,
// probes, security contexts, affinity, tolerations) and the rest of the status. A decision that
// needs another field must add it here, where the tests check the webhook and the cache agree.
//
// Workloads (top owners, read unstructured) keep everything but metadata.managedFields: a
// definition's expressions may read any path of the live workload (spec, status, metadata), and
// KAI's default metadata copies the top owner's labels and every annotation to the PodGroup.
// What each decision reads of a workload:
//   - the plan (gang.Build): every path the definition's expressions read (replica counts,
//     instance ids, pod templates, the status for start rules and status mapping, variables);
//     of a resolved pod template, its labels and annotations, every container's and init
//     container's resources and restart policy, spec.overhead and spec.resourceClaims (GPUs), and
//     whatever the alpha form's member filters read (the template as a pod);
//   - KAI's default PodGroup metadata: metadata.labels, annotations, name, uid, the kind;
//   - the owner walk and the skip mark: metadata.uid, name, namespace, ownerReferences,
//     annotations.
//
// No transform can drop a path in general (a definition is data and may read any path), so the
// grouper's cache keeps the content and shares it instead (Interner): a workload's cost is
// mostly Go maps (about 330 bytes each, whatever they hold: 8 KB for a CustomJob of 670 bytes of
// JSON), and workloads made from one template have equal subtrees, stored once. A plan keeps
// none of the workload (gang.Plan drops the resolved templates once built), and the stray
// collector keeps only its identity.
package podview

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// Pod returns the view of pod: a new Pod holding only the fields gangmap reads (see the package
// comment). Quantities and other values are shared with pod, not copied.
func Pod(pod *corev1.Pod) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, GenerateName: pod.GenerateName, Namespace: pod.Namespace, UID: pod.UID,
			ResourceVersion: pod.ResourceVersion, CreationTimestamp: pod.CreationTimestamp,
			DeletionTimestamp: pod.DeletionTimestamp,
			Labels:            pod.Labels, Annotations: pod.Annotations, OwnerReferences: pod.OwnerReferences,
		},
		Spec: corev1.PodSpec{
			SchedulerName: pod.Spec.SchedulerName, PriorityClassName: pod.Spec.PriorityClassName,
			NodeName: pod.Spec.NodeName, Overhead: pod.Spec.Overhead, ResourceClaims: pod.Spec.ResourceClaims,
			Resources:      pod.Spec.Resources,
			Containers:     containers(pod.Spec.Containers),
			InitContainers: containers(pod.Spec.InitContainers),
		},
		Status: corev1.PodStatus{Phase: pod.Status.Phase},
	}
}

// containers keeps each container's name, resources and restart policy (an init container with
// restartPolicy Always is a sidecar: its resources add to the pod's for its whole life).
func containers(in []corev1.Container) []corev1.Container {
	if in == nil {
		return nil
	}
	out := make([]corev1.Container, len(in))
	for i := range in {
		out[i] = corev1.Container{Name: in[i].Name, Resources: in[i].Resources, RestartPolicy: in[i].RestartPolicy}
	}
	return out
}

// compact makes the view's strings canonical (unique.Make): the label and annotation keys, most
// of their values, owner kinds, scheduler and container names are the same on thousands of pods,
// and a cache holding one copy of each instead of one per pod saves about half of a view's
// memory. Maps are rebuilt at their exact size.
func compact(pod *corev1.Pod) {
	pod.Labels = internMap(pod.Labels)
	pod.Annotations = internMap(pod.Annotations)
	internRefs(pod.OwnerReferences)
	pod.Namespace, pod.GenerateName = intern(pod.Namespace), intern(pod.GenerateName)
	pod.Spec.SchedulerName, pod.Spec.PriorityClassName, pod.Spec.NodeName = intern(pod.Spec.SchedulerName), intern(pod.Spec.PriorityClassName), intern(pod.Spec.NodeName)
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			cs[i].Name = intern(cs[i].Name)
		}
	}
}

// internRefs makes the strings and booleans of refs canonical, in place, and returns refs.
func internRefs(refs []metav1.OwnerReference) []metav1.OwnerReference {
	for i := range refs {
		r := &refs[i]
		r.APIVersion, r.Kind, r.Name, r.UID = intern(r.APIVersion), intern(r.Kind), intern(r.Name), types.UID(intern(string(r.UID)))
		r.Controller, r.BlockOwnerDeletion = podgroup.CanonicalBool(r.Controller), podgroup.CanonicalBool(r.BlockOwnerDeletion)
	}
	return refs
}

func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

func internMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[intern(k)] = intern(v)
	}
	return out
}

// TransformPod is the pod cache's transform (controller-runtime cache.ByObject.Transform): it
// stores Pod(pod), its strings made canonical (see compact), instead of the pod. Other objects
// pass unchanged. It is idempotent, as
// client-go asks of a transform.
func TransformPod(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		v := Pod(p)
		compact(v)
		return v, nil
	}
	return obj, nil
}

// TransformWorkload is the transform of every other cached object (controller-runtime
// cache.Options.DefaultTransform: workloads read unstructured, namespaces, priority classes;
// PodGroups have their own, podgroup.CacheTransform): it drops metadata.managedFields, which nothing in gangmap reads and which is often
// the largest part of an object's metadata. Everything else is kept (see the package comment).
func TransformWorkload(obj any) (any, error) {
	// Nothing is written when there is nothing to drop: an object transformed again (client-go's
	// watch-list path) may already be read by other goroutines.
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		if md, ok := o.Object["metadata"].(map[string]any); ok {
			if _, has := md["managedFields"]; has {
				delete(md, "managedFields")
			}
		}
	case metav1.Object:
		if o.GetManagedFields() != nil {
			o.SetManagedFields(nil)
		}
	}
	return obj, nil
}
