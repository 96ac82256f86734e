package podview

import (
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// TestRecordKeepsWhatTheControllerReads: a Record gives back, as a Pod, exactly the metadata a
// decision reads (managed fields, finalizers, generation and resourceVersion dropped), the
// scheduler name the cache is filtered by, spec.priorityClassName and status.phase; nothing else
// of the spec or status.
func TestRecordKeepsWhatTheControllerReads(t *testing.T) {
	pod := richPod()
	got := ToRecord(pod).Pod("kai-scheduler")
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", GenerateName: "p-", Namespace: "ns", UID: "u1",
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
	if other := ToRecord(richPod()); !*other.ownerReferences[0].Controller {
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

// TestRecordPacksTimesAndPhase: the creation and deletion timestamps (whole seconds) and the
// phase read back as they were, absent ones as absent; a phase outside the API's five keeps its
// name. A Record is 184 bytes.
func TestRecordPacksTimesAndPhase(t *testing.T) {
	if n := unsafe.Sizeof(Record{}); n != 184 {
		t.Errorf("a Record is %d bytes, want 184", n)
	}
	created, deleted := metav1.Unix(1764590000, 0), metav1.Unix(1764599999, 0)
	for _, tc := range []struct {
		name             string
		created          metav1.Time
		deleted          *metav1.Time
		phase, wantPhase corev1.PodPhase
	}{
		{"running", created, nil, corev1.PodRunning, corev1.PodRunning},
		{"being deleted", created, &deleted, corev1.PodSucceeded, corev1.PodSucceeded},
		{"being admitted", metav1.Time{}, nil, "", ""},
		{"at the epoch", metav1.Unix(0, 0), ptr.To(metav1.Unix(0, 0)), corev1.PodFailed, corev1.PodFailed},
		{"odd phase", created, nil, "Hibernating", "Hibernating"},
	} {
		pod := richPod()
		pod.CreationTimestamp, pod.DeletionTimestamp, pod.Status.Phase = tc.created, tc.deleted, tc.phase
		rec := ToRecord(pod)
		got := rec.Pod("s")
		if diff := cmp.Diff(tc.created, got.CreationTimestamp); diff != "" {
			t.Errorf("%s: creation timestamp (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(tc.deleted, got.DeletionTimestamp); diff != "" || (rec.deleted != noTime) != (tc.deleted != nil) {
			t.Errorf("%s: deletion timestamp (-want +got):\n%s (Deleting %v)", tc.name, diff, (rec.deleted != noTime))
		}
		if got.Status.Phase != tc.wantPhase || rec.phase != tc.wantPhase {
			t.Errorf("%s: phase %q, want %q", tc.name, got.Status.Phase, tc.wantPhase)
		}
	}
}

// TestRecordUID: a Record reads back its pod's UID, whatever its text (a UUID, upper case, short,
// none), and is keyed by namespace and name.
func TestRecordUID(t *testing.T) {
	for _, uid := range []types.UID{"0f8e6c1a-3b2d-4e5f-9a8b-7c6d5e4f3a2b", "0F8E6C1A-3B2D-4E5F-9A8B-7C6D5E4F3A2B", "u1", ""} {
		pod := richPod()
		pod.UID = uid
		rec := ToRecord(pod)
		if rec.uid != uid || rec.Pod("s").UID != uid {
			t.Errorf("UID %q: read back %q / %q", uid, rec.uid, rec.Pod("s").UID)
		}
		if key, err := cache.MetaNamespaceKeyFunc(rec); err != nil || key != "ns/p" {
			t.Errorf("UID %q: store key %q, %v", uid, key, err)
		}
	}
	a, b := richPod(), richPod()
	a.UID, b.UID = "0f8e6c1a-3b2d-4e5f-9a8b-000000000001", "0f8e6c1a-3b2d-4e5f-9a8b-000000000002"
	if ra, rb := ToRecord(a), ToRecord(b); ra.uid != a.UID || rb.uid != b.UID {
		t.Errorf("two pods of one owner: UIDs %q and %q", ra.uid, rb.uid)
	}
	a.UID, b.UID = "pod-a", "pod-b"
	if ra, rb := ToRecord(a), ToRecord(b); ra.uid != "pod-a" || rb.uid != "pod-b" {
		t.Errorf("pods with other UIDs: UIDs %q and %q", ra.uid, rb.uid)
	}
}
