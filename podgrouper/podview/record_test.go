package podview

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestRecordKeepsWhatTheControllerReads: a Record gives back, as a Pod, exactly the metadata a
// decision reads (managed fields, finalizers and generation dropped), the scheduler name the cache
// is filtered by, spec.priorityClassName and status.phase; nothing else of the spec or status.
func TestRecordKeepsWhatTheControllerReads(t *testing.T) {
	pod := richPod()
	got := ToRecord(pod).Pod("kai-scheduler")
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", GenerateName: "p-", Namespace: "ns", UID: "u1", ResourceVersion: "42",
			CreationTimestamp: pod.CreationTimestamp, DeletionTimestamp: pod.DeletionTimestamp,
			Labels: pod.Labels, Annotations: pod.Annotations, OwnerReferences: pod.OwnerReferences,
		},
		Spec:   corev1.PodSpec{SchedulerName: "kai-scheduler", PriorityClassName: "train"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Record.Pod (-want +got):\n%s", diff)
	}
}

// TestRecordPodIsACopy: the Pod a reader gets may be changed (a client decodes a patch response
// into it) without changing the cached Record, whose owner-reference flags are shared.
func TestRecordPodIsACopy(t *testing.T) {
	rec := ToRecord(richPod())
	p := rec.Pod("kai-scheduler")
	p.Labels["app"] = "changed"
	p.Annotations["new"] = "x"
	*p.OwnerReferences[0].Controller = false
	p.OwnerReferences[0].Name = "other"
	*p.DeletionTimestamp = metav1.Unix(1, 0)
	again := rec.Pod("kai-scheduler")
	if again.Labels["app"] != "x" || again.Annotations["new"] != "" || !*again.OwnerReferences[0].Controller ||
		again.OwnerReferences[0].Name != "j" || again.DeletionTimestamp.Unix() != 1764590000 {
		t.Errorf("the cached record changed through a reader's copy: %+v", again.ObjectMeta)
	}
	if other := ToRecord(richPod()); !*other.OwnerReferences[0].Controller {
		t.Error("a shared owner-reference flag was changed")
	}
}

// TestRecordLabelsAndAnnotations: labels and annotations are kept as sorted pairs and read back
// alike; an empty map is none.
func TestRecordLabelsAndAnnotations(t *testing.T) {
	pod := richPod()
	pod.Labels = map[string]string{"z": "1", "a": "2", "m": ""}
	pod.Annotations = map[string]string{}
	rec := ToRecord(pod)
	if diff := cmp.Diff([]string{"a", "2", "m", "", "z", "1"}, rec.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if rec.Annotations != nil {
		t.Errorf("annotations %v, want none", rec.Annotations)
	}
	for _, tc := range []struct {
		key, want string
		has       bool
	}{{"a", "2", true}, {"m", "", true}, {"z", "1", true}, {"b", "", false}, {"", "", false}, {"zz", "", false}} {
		v, has := lookup(rec.Labels, tc.key)
		if v != tc.want || has != tc.has {
			t.Errorf("lookup(%q) = %q, %v; want %q, %v", tc.key, v, has, tc.want, tc.has)
		}
	}
	if v, has := rec.Annotation("x"); has || v != "" {
		t.Errorf("Annotation on none: %q, %v", v, has)
	}
	if diff := cmp.Diff(pod.Labels, rec.Pod("s").Labels); diff != "" {
		t.Errorf("labels read back (-want +got):\n%s", diff)
	}
}

// TestTransformRecordIsIdempotent: client-go may hand the transform an object it already
// transformed, or a deletion tombstone; both pass unchanged. A Record is keyed like its pod.
func TestTransformRecordIsIdempotent(t *testing.T) {
	obj, err := TransformRecord(richPod())
	if err != nil {
		t.Fatal(err)
	}
	again, err := TransformRecord(obj)
	if err != nil || again != obj {
		t.Errorf("second transform: %v, %v; want the same record", again, err)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: obj}
	if out, err := TransformRecord(tomb); err != nil || out != any(tomb) {
		t.Errorf("tombstone: %v, %v", out, err)
	}
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil || key != "ns/p" {
		t.Errorf("store key %q, %v; want ns/p", key, err)
	}
}
