package podview

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	sigsjson "sigs.k8s.io/json"
)

// Decoded is an admitted pod decoded into the view.
type Decoded struct {
	// Pod holds the fields Pod keeps; Labels and Annotations are nil when the object has none
	// (absent or null) and non-nil when it has the map, even empty.
	Pod *corev1.Pod
	// HasMetadata says the object has a metadata object (a JSON patch can add members to it).
	HasMetadata bool
}

// DecodePod decodes a pod's JSON (an admission request's object) into the view: only the fields
// Pod keeps are decoded, every other field is skipped unread, whatever it holds (a field the
// compiled k8s.io/api does not know is neither an error nor lost, since nothing is re-encoded).
// Keys are matched case-sensitively, as the API server does (sigs.k8s.io/json).
// Errors: the JSON is malformed, or a kept field has the wrong type.
//
// The decoded strings are the pod's own (sigs.k8s.io/json allocates them): nothing of raw is
// kept. Its cost against the scanner it replaced: bench/README.md, "Session 9".
func DecodePod(raw []byte) (*Decoded, error) {
	in := &podJSON{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, in); err != nil {
		return nil, fmt.Errorf("decoding the pod: %w", err)
	}
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: in.APIVersion, Kind: in.Kind}}
	if m := in.Metadata; m != nil {
		pod.ObjectMeta = metav1.ObjectMeta{
			Name: m.Name, GenerateName: m.GenerateName, Namespace: m.Namespace, UID: m.UID,
			ResourceVersion: m.ResourceVersion, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
			Labels: m.Labels, Annotations: m.Annotations, OwnerReferences: m.OwnerReferences,
		}
	}
	s := &in.Spec
	pod.Spec = corev1.PodSpec{
		SchedulerName: s.SchedulerName, PriorityClassName: s.PriorityClassName, NodeName: s.NodeName,
		Overhead: s.Overhead, ResourceClaims: s.ResourceClaims, Resources: s.Resources,
		Containers: containersOf(s.Containers), InitContainers: containersOf(s.InitContainers),
	}
	pod.Status.Phase = in.Status.Phase
	return &Decoded{Pod: pod, HasMetadata: in.Metadata != nil}, nil
}

func containersOf(in []containerJSON) []corev1.Container {
	if in == nil {
		return nil
	}
	out := make([]corev1.Container, len(in))
	for i, c := range in {
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	return out
}

// podJSON is the JSON of the fields Pod keeps (the field names of k8s.io/api/core/v1).
type podJSON struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   *objectMetaJSON `json:"metadata"`
	Spec       podSpecJSON     `json:"spec"`
	Status     struct {
		Phase corev1.PodPhase `json:"phase"`
	} `json:"status"`
}

type objectMetaJSON struct {
	Name              string                  `json:"name"`
	GenerateName      string                  `json:"generateName"`
	Namespace         string                  `json:"namespace"`
	UID               types.UID               `json:"uid"`
	ResourceVersion   string                  `json:"resourceVersion"`
	CreationTimestamp metav1.Time             `json:"creationTimestamp"`
	DeletionTimestamp *metav1.Time            `json:"deletionTimestamp"`
	Labels            map[string]string       `json:"labels"`
	Annotations       map[string]string       `json:"annotations"`
	OwnerReferences   []metav1.OwnerReference `json:"ownerReferences"`
}

type podSpecJSON struct {
	SchedulerName     string                       `json:"schedulerName"`
	PriorityClassName string                       `json:"priorityClassName"`
	NodeName          string                       `json:"nodeName"`
	Overhead          corev1.ResourceList          `json:"overhead"`
	ResourceClaims    []corev1.PodResourceClaim    `json:"resourceClaims"`
	Resources         *corev1.ResourceRequirements `json:"resources"`
	Containers        []containerJSON              `json:"containers"`
	InitContainers    []containerJSON              `json:"initContainers"`
}

type containerJSON struct {
	Name          string                         `json:"name"`
	Resources     corev1.ResourceRequirements    `json:"resources"`
	RestartPolicy *corev1.ContainerRestartPolicy `json:"restartPolicy"`
}
