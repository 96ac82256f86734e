package framework

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/manifest"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// ApplyFile creates every object of a manifest file in namespace (when the object is
// namespaced and has none) and returns them as stored.
func (cp *ControlPlane) ApplyFile(ctx context.Context, path, namespace string) ([]*unstructured.Unstructured, error) {
	objs, err := manifest.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if namespace != "" && o.GetKind() != "Karta" && o.GetKind() != "CustomResourceDefinition" {
			o.SetNamespace(namespace)
		}
		if err := cp.Client.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return objs, nil
}

// CreateNamespace creates a namespace.
func (cp *ControlPlane) CreateNamespace(ctx context.Context, name string) error {
	err := cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// OwnerRef is a controller owner reference to obj, as workload operators set it.
func OwnerRef(obj client.Object, apiVersion, kind string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: obj.GetName(), UID: obj.GetUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// UnstructuredOwnerRef is OwnerRef for an unstructured object.
func UnstructuredOwnerRef(obj *unstructured.Unstructured) metav1.OwnerReference {
	return OwnerRef(obj, obj.GetAPIVersion(), obj.GetKind())
}

// PodFromTemplate makes a pod as a workload operator would: the template's metadata and spec,
// the given name, labels added, and one owner reference.
func PodFromTemplate(tpl *corev1.PodTemplateSpec, namespace, name string, labels map[string]string, owner metav1.OwnerReference) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: *tpl.ObjectMeta.DeepCopy(), Spec: *tpl.Spec.DeepCopy()}
	pod.Name, pod.Namespace, pod.GenerateName = name, namespace, ""
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	for k, v := range labels {
		pod.Labels[k] = v
	}
	pod.OwnerReferences = []metav1.OwnerReference{owner}
	if pod.Spec.SchedulerName == "" {
		pod.Spec.SchedulerName = "kai-scheduler"
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Image == "" {
			pod.Spec.Containers[i].Image = "registry.example/none:0"
		}
	}
	return pod
}

// WaitFor polls cond every 100ms until it returns true, an error, or timeout passes.
func WaitFor(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) (bool, error)) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, cond)
}

// WaitForPodGroup waits until the named PodGroup exists and returns it.
func (cp *ControlPlane) WaitForPodGroup(ctx context.Context, namespace, name string, timeout time.Duration) (*v2alpha2.PodGroup, error) {
	pg := &v2alpha2.PodGroup{}
	err := WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		err := cp.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pg)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return nil, fmt.Errorf("PodGroup %s/%s: %w", namespace, name, err)
	}
	return pg, nil
}

// WaitForPodAnnotation waits until a pod has the annotation and returns the pod.
func (cp *ControlPlane) WaitForPodAnnotation(ctx context.Context, namespace, name, key string, timeout time.Duration) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
			return false, err
		}
		return pod.Annotations[key] != "", nil
	})
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s annotation %s: %w", namespace, name, key, err)
	}
	return pod, nil
}

// WaitGrouped waits, up to timeout for each, until every pod carries KAI's pod-group-name
// annotation and the PodGroup it names exists, and returns those PodGroups by name. The error
// names the first pod or PodGroup that did not appear.
func (cp *ControlPlane) WaitGrouped(ctx context.Context, pods []*corev1.Pod, timeout time.Duration) (map[string]*v2alpha2.PodGroup, error) {
	out := map[string]*v2alpha2.PodGroup{}
	for _, p := range pods {
		got, err := cp.WaitForPodAnnotation(ctx, p.Namespace, p.Name, kaikeys.PodGroupName, timeout)
		if err != nil {
			return nil, err
		}
		name := got.Annotations[kaikeys.PodGroupName]
		if out[name] != nil {
			continue
		}
		if out[name], err = cp.WaitForPodGroup(ctx, p.Namespace, name, timeout); err != nil {
			return nil, err
		}
	}
	return out, nil
}
