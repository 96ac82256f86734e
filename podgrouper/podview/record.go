package podview

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Record is what the grouper's pod cache keeps of one pod of its scheduler: the fields the pod
// controller's decisions read (see the package comment), in a struct of its own. A corev1.Pod
// costs 1,152 bytes before it holds anything (its spec and status structs are large), and a Go
// map of labels or annotations about 300 bytes even with one entry; a Record holds the metadata
// it needs as plain fields and the labels and annotations as key/value pairs in one slice each.
// The scheduler name is not kept: the cache holds only pods of gangmap's scheduler (a field
// selector on spec.schedulerName), so Pod puts it back.
//
// A definition whose pod-side expressions read beyond .metadata needs the rest of the pod: the
// pod controller then reads the whole pod from the API server (controller.FullPodFunc), never
// from this record.
//
// A Record is immutable once made (readers get copies: Pod), so its strings and slices may be
// shared.
type Record struct {
	Namespace, Name, GenerateName string
	UID                           types.UID
	ResourceVersion               string
	CreationTimestamp             metav1.Time
	DeletionTimestamp             *metav1.Time
	// Labels and Annotations are the pod's, as key, value, key, value... sorted by key.
	Labels, Annotations []string
	OwnerReferences     []metav1.OwnerReference
	// PriorityClassName is spec.priorityClassName (KAI's default PodGroup priority reads it).
	PriorityClassName string
	// Phase is status.phase (findings count terminal pods apart; workload metrics per phase).
	Phase corev1.PodPhase
}

var _ runtime.Object = (*Record)(nil)
var _ metav1.ObjectMetaAccessor = (*Record)(nil)

// GetObjectKind implements runtime.Object: a Record carries no kind.
func (r *Record) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object. A Record is never changed in place, so the copy
// shares its slices.
func (r *Record) DeepCopyObject() runtime.Object {
	out := *r
	return &out
}

// GetObjectMeta implements metav1.ObjectMetaAccessor, so that client-go's key and namespace index
// functions (meta.Accessor) read a Record: a new ObjectMeta with its namespace, name, UID and
// resourceVersion.
func (r *Record) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name, UID: r.UID, ResourceVersion: r.ResourceVersion}
}

// Annotation returns the value of annotation key and whether the pod has it.
func (r *Record) Annotation(key string) (string, bool) { return lookup(r.Annotations, key) }

// ToRecord returns the Record of pod, its strings made canonical (see compact) and its label,
// annotation and owner-reference slices shared with recent Records that have equal ones
// (recordShare). Nothing of pod is changed.
func ToRecord(pod *corev1.Pod) *Record {
	refs := make([]metav1.OwnerReference, len(pod.OwnerReferences))
	copy(refs, pod.OwnerReferences)
	v := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, GenerateName: pod.GenerateName, OwnerReferences: refs},
		Spec: corev1.PodSpec{PriorityClassName: pod.Spec.PriorityClassName}}
	compact(v)
	if len(refs) == 0 {
		refs = nil
	}
	return &Record{
		Namespace: v.Namespace, Name: pod.Name, GenerateName: v.GenerateName, UID: pod.UID,
		ResourceVersion: pod.ResourceVersion, CreationTimestamp: pod.CreationTimestamp, DeletionTimestamp: pod.DeletionTimestamp,
		Labels: shared.pairsOf(pairs(pod.Labels)), Annotations: shared.pairsOf(pairs(pod.Annotations)), OwnerReferences: shared.refsOf(refs),
		PriorityClassName: v.Spec.PriorityClassName, Phase: corev1.PodPhase(intern(string(pod.Status.Phase))),
	}
}

// Pod returns a new Pod of the record for a decision: its metadata (new maps and owner
// references: the caller may change them, as a client's response decoded into it does),
// spec.schedulerName set to schedulerName, spec.priorityClassName and status.phase.
func (r *Record) Pod(schedulerName string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: r.Namespace, Name: r.Name, GenerateName: r.GenerateName, UID: r.UID,
			ResourceVersion: r.ResourceVersion, CreationTimestamp: r.CreationTimestamp,
			Labels: toMap(r.Labels), Annotations: toMap(r.Annotations),
		},
		Spec:   corev1.PodSpec{SchedulerName: schedulerName, PriorityClassName: r.PriorityClassName},
		Status: corev1.PodStatus{Phase: r.Phase},
	}
	if r.DeletionTimestamp != nil {
		p.DeletionTimestamp = r.DeletionTimestamp.DeepCopy()
	}
	if r.OwnerReferences != nil {
		p.OwnerReferences = make([]metav1.OwnerReference, len(r.OwnerReferences))
		for i := range r.OwnerReferences {
			r.OwnerReferences[i].DeepCopyInto(&p.OwnerReferences[i])
		}
	}
	return p
}

// TransformRecord is the pod informer's transform (client-go SharedIndexInformer.SetTransform): a
// *corev1.Pod becomes its Record (ToRecord); anything else (a Record, a deletion tombstone) passes
// unchanged, so it is idempotent, as client-go asks of a transform.
func TransformRecord(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		return ToRecord(p), nil
	}
	return obj, nil
}

// pairs returns m as key, value, ... sorted by key, its strings made canonical; nil for an empty
// map (a pod's labels and annotations maps, empty or absent, read alike).
func pairs(m map[string]string) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, 2*len(m))
	for _, k := range keys {
		out = append(out, intern(k), intern(m[k]))
	}
	return out
}

// toMap is the map of key/value pairs (nil for none).
func toMap(kv []string) map[string]string {
	if len(kv) == 0 {
		return nil
	}
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// lookup finds key in sorted key/value pairs.
func lookup(kv []string, key string) (string, bool) {
	n := len(kv) / 2
	i := sort.Search(n, func(i int) bool { return kv[2*i] >= key })
	if i < n && kv[2*i] == key {
		return kv[2*i+1], true
	}
	return "", false
}
