package podview

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// richPod has every field the view keeps and many it drops.
func richPod() *corev1.Pod {
	now := metav1.Unix(1764590000, 0)
	gpu := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4"), corev1.ResourceCPU: resource.MustParse("500m")}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", GenerateName: "p-", Namespace: "ns", UID: "u1", ResourceVersion: "42",
			CreationTimestamp: now, DeletionTimestamp: &now, Generation: 3, Finalizers: []string{"f"},
			Labels:          map[string]string{"app": "x", "kai.scheduler/queue": "q"},
			Annotations:     map[string]string{"pod-group-name": "pg"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "u2", Controller: ptr.To(true)}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{}}`)}}},
		},
		Spec: corev1.PodSpec{
			SchedulerName: "kai-scheduler", PriorityClassName: "train", NodeName: "n1",
			Overhead:       corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu-tpl")}},
			Resources:      &corev1.ResourceRequirements{Limits: gpu},
			Containers: []corev1.Container{{Name: "c", Image: "img", Command: []string{"run"}, Env: []corev1.EnvVar{{Name: "A", Value: "b"}},
				Resources: corev1.ResourceRequirements{Limits: gpu, Requests: gpu, Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
			InitContainers: []corev1.Container{{Name: "sidecar", Image: "img", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
			Volumes:     []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
			Hostname:    "h",
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// TestDecodePodIsTheView: the webhook's decoding of a pod's JSON and the cache's transform of
// the typed pod give the same pod, so both paths decide on the same fields.
func TestDecodePodIsTheView(t *testing.T) {
	pod := richPod()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	d, err := DecodePod(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !d.HasMetadata {
		t.Error("HasMetadata: want true")
	}
	if diff := cmp.Diff(Pod(pod), d.Pod); diff != "" {
		t.Errorf("DecodePod vs Pod (-view,+decoded):\n%s", diff)
	}
}

// TestPodKeepsWhatDecisionsRead lists what the view keeps and drops (see the package comment).
func TestPodKeepsWhatDecisionsRead(t *testing.T) {
	pod := richPod()
	v := Pod(pod)
	now := pod.CreationTimestamp
	gpu := pod.Spec.Containers[0].Resources
	want := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", GenerateName: "p-", Namespace: "ns", UID: "u1", ResourceVersion: "42",
			CreationTimestamp: now, DeletionTimestamp: &now,
			Labels: pod.Labels, Annotations: pod.Annotations, OwnerReferences: pod.OwnerReferences,
		},
		Spec: corev1.PodSpec{
			SchedulerName: "kai-scheduler", PriorityClassName: "train", NodeName: "n1",
			Overhead: pod.Spec.Overhead, ResourceClaims: pod.Spec.ResourceClaims, Resources: pod.Spec.Resources,
			Containers:     []corev1.Container{{Name: "c", Resources: gpu}},
			InitContainers: []corev1.Container{{Name: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: pod.Spec.InitContainers[0].Resources}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

func TestDecodePodErrors(t *testing.T) {
	for _, raw := range []string{`{`, `{"metadata":{"labels":[1]}}`, `{"spec":{"schedulerName":3}}`, `[]`} {
		if _, err := DecodePod([]byte(raw)); err == nil {
			t.Errorf("%s: want an error", raw)
		}
	}
	d, err := DecodePod([]byte(`{"spec":{"schedulerName":"s"},"future":{"x":[1,{"y":null}]}}`))
	if err != nil || d.HasMetadata || d.Pod.Spec.SchedulerName != "s" {
		t.Errorf("unknown fields: got %+v, %v", d, err)
	}
}

// TestTransformWorkloadKeepsValues: the workload transform drops managed fields and nothing else
// (its maps are rebuilt and strings made canonical: the values are equal).
func TestTransformWorkloadKeepsValues(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.example.com/v1", "kind": "CustomJob",
		"metadata": map[string]any{"name": "w", "namespace": "ns", "labels": map[string]any{"a": "b"},
			"managedFields": []any{map[string]any{"manager": "m"}}},
		"spec": map[string]any{"replicas": int64(3), "ratio": 0.5, "on": true, "none": nil,
			"list": []any{"x", int64(1), map[string]any{"k": "v"}}, "long": strings.Repeat("y", 300)},
	}}
	want := u.DeepCopy()
	unstructured.RemoveNestedField(want.Object, "metadata", "managedFields")
	got, err := TransformWorkload(u)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TransformWorkload (-want +got):\n%s", diff)
	}
	if _, err := TransformWorkload(&unstructured.Unstructured{}); err != nil {
		t.Errorf("empty object: %v", err)
	}
}
