package podview

import (
	"maps"
	"math"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Record is what the grouper's pod cache keeps of one pod of its scheduler: the fields the pod
// controller's decisions read, in a struct of its own. A corev1.Pod costs 1,152 bytes before it
// holds anything (its spec and status structs are large), and a Go map of labels or annotations
// about 300 bytes even with one entry; a Record holds the metadata it needs as plain fields, the
// labels and annotations as key/value pairs in one slice each, its times in seconds: 184 bytes,
// its strings but the UID and name canonical (intern: one namespace string per namespace).
//
// What a Record keeps, and which decision reads it (the controller decides on Record.Pod):
//   - metadata.namespace and name: the pod's key (the work queue's requests, podbook) and a
//     definition's pod input;
//   - metadata.uid: a definition's pod input, the first-repair mark (podbook.FirstRepair), the
//     check that a pod read whole from the API server is the same pod (controller.fullPod);
//   - metadata.generateName: a definition's pod input (definitions.Compiled.PodInput);
//   - metadata.labels and annotations: the placement (pod-side expressions), KAI's default
//     PodGroup metadata (queue, priority, preemptibility...), the skip and pod-group-name
//     annotations, the stray collector's PodGroup names (podcache.Cache.AnnotationValues);
//   - metadata.ownerReferences: the owner walk to the top owner, a definition's pod input;
//   - metadata.deletionTimestamp: a pod being deleted is not grouped (decide.Decider);
//   - metadata.creationTimestamp: whether a confirmed read of the workload covers the pod
//     (decide.Decider's drift check);
//   - spec.priorityClassName: KAI's default PodGroup priority (defaultgrouper);
//   - status.phase: the findings (terminal pods apart) and the workload metrics (per phase).
//
// Not kept: metadata.resourceVersion (no decision reads it, and the cache's store keys pods by
// namespace and name: Events about a pod read from the cache name it without a version), managed
// fields, finalizers, and the rest of the spec and status. The scheduler name is not kept either:
// the cache holds only pods of gangmap's scheduler (a field selector on spec.schedulerName), so Pod
// puts it back. Timestamps are kept in whole seconds, the precision Kubernetes serializes them at
// (metav1.Time, in JSON and protobuf).
//
// A definition whose pod-side expressions read beyond .metadata needs the rest of the pod: the
// pod controller then reads the whole pod from the API server (decide.FullPodFunc), never
// from this record.
//
// A Record is immutable once stored (readers get copies: Pod), so its strings and slices may be
// shared.
type Record struct {
	Namespace, Name string
	// Labels and Annotations are the pod's, as key, value, key, value... sorted by key.
	Labels, Annotations []string
	uid                 types.UID
	generateName        string
	// priorityClassName is spec.priorityClassName (KAI's default PodGroup priority reads it).
	priorityClassName string
	ownerReferences   []metav1.OwnerReference
	// created and deleted are the creation and deletion timestamps in Unix seconds, noTime for
	// none (a zero creation timestamp: a pod being admitted).
	created, deleted int64
	phase            corev1.PodPhase
}

// noTime marks a Record's timestamp as absent.
const noTime = math.MinInt64

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

// GetObjectMeta implements metav1.ObjectMetaAccessor, so that client-go's key functions
// (meta.Accessor) read a Record: a new ObjectMeta with its namespace, name and UID.
func (r *Record) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name, UID: r.uid}
}

// seconds packs t into Unix seconds, noTime for a zero time.
func seconds(t metav1.Time) int64 {
	if t.IsZero() {
		return noTime
	}
	return t.Unix()
}

// timeOf unpacks seconds: a time in the local zone, as a decoded metav1.Time is.
func timeOf(s int64) metav1.Time {
	if s == noTime {
		return metav1.Time{}
	}
	return metav1.Unix(s, 0)
}

// Annotation returns the value of annotation key and whether the pod has it.
func (r *Record) Annotation(key string) (string, bool) { return lookup(r.Annotations, key) }

// ToRecord returns the Record of pod, its strings made canonical (see compact). Nothing of pod is
// changed.
func ToRecord(pod *corev1.Pod) *Record {
	r := &Record{
		Namespace: intern(pod.Namespace), Name: pod.Name, Labels: pairs(pod.Labels), Annotations: pairs(pod.Annotations), uid: pod.UID,
		generateName: intern(pod.GenerateName), priorityClassName: intern(pod.Spec.PriorityClassName),
		created: seconds(pod.CreationTimestamp), deleted: noTime, phase: corev1.PodPhase(intern(string(pod.Status.Phase))),
	}
	if len(pod.OwnerReferences) > 0 {
		r.ownerReferences = internRefs(slices.Clone(pod.OwnerReferences))
	}
	if pod.DeletionTimestamp != nil {
		r.deleted = pod.DeletionTimestamp.Unix()
	}
	return r
}

// Pod returns a new Pod of the record for a decision: its metadata (new maps and owner
// references: the caller may change them, as a client's response decoded into it does; no
// resourceVersion), spec.schedulerName set to schedulerName, spec.priorityClassName and
// status.phase.
func (r *Record) Pod(schedulerName string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: r.Namespace, Name: r.Name, GenerateName: r.generateName, UID: r.uid,
			CreationTimestamp: timeOf(r.created), Labels: toMap(r.Labels), Annotations: toMap(r.Annotations),
		},
		Spec:   corev1.PodSpec{SchedulerName: schedulerName, PriorityClassName: r.priorityClassName},
		Status: corev1.PodStatus{Phase: r.phase},
	}
	if r.deleted != noTime {
		t := timeOf(r.deleted)
		p.DeletionTimestamp = &t
	}
	if refs := r.ownerReferences; refs != nil {
		p.OwnerReferences = make([]metav1.OwnerReference, len(refs))
		for i := range refs {
			refs[i].DeepCopyInto(&p.OwnerReferences[i])
		}
	}
	return p
}

// pairs returns m as key, value, ... sorted by key, its strings made canonical; nil for an empty
// map (a pod's labels and annotations maps, empty or absent, read alike).
func pairs(m map[string]string) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, 2*len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
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
