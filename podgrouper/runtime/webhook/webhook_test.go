package webhook

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

func TestLabel(t *testing.T) {
	tests := map[string]struct {
		pod      *corev1.Pod
		subGroup string
		want     *corev1.Pod
	}{
		"empty pod gets annotations and the sub-group": {
			pod:      &corev1.Pod{},
			subGroup: "worker",
			want: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				Annotations: map[string]string{kaikeys.SkipPodGrouper: "true", kaikeys.PodGroupName: "pg"},
				Labels:      map[string]string{kaikeys.SubGroupName: "worker"},
			}},
		},
		"a stale sub-group label from the template is removed": {
			pod:  &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{kaikeys.SubGroupName: "old", "app": "x"}}},
			want: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{kaikeys.SkipPodGrouper: "true", kaikeys.PodGroupName: "pg"}, Labels: map[string]string{"app": "x"}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			Label(tc.pod, "pg", tc.subGroup)
			if diff := cmp.Diff(tc.want, tc.pod); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

// TestHandleAdmitsUnchanged: requests the webhook does not act on, and requests it cannot decode,
// are allowed with no patch (gangmap never blocks a pod creation).
func TestHandleAdmitsUnchanged(t *testing.T) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	m := &PodMutator{Decider: &decide.Decider{SchedulerName: "kai-scheduler"}}
	pods := metav1.GroupVersionResource{Version: "v1", Resource: "pods"}
	tests := map[string]admissionv1.AdmissionRequest{
		"update":        {Operation: admissionv1.Update, Resource: pods},
		"subresource":   {Operation: admissionv1.Create, Resource: pods, SubResource: "binding"},
		"not a pod":     {Operation: admissionv1.Create, Resource: metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"}},
		"undecodable":   {Operation: admissionv1.Create, Resource: pods, Object: runtime.RawExtension{Raw: []byte("{")}},
		"other sched":   {Operation: admissionv1.Create, Resource: pods, Namespace: "ns", Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"Pod","spec":{"schedulerName":"default-scheduler"}}`)}},
		"no owner refs": {Operation: admissionv1.Create, Resource: pods, Namespace: "ns", Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"Pod","spec":{"schedulerName":"kai-scheduler"}}`)}},
	}
	for name, req := range tests {
		t.Run(name, func(t *testing.T) {
			resp := m.Handle(context.Background(), admission.Request{AdmissionRequest: req})
			if !resp.Allowed || len(resp.Patches) > 0 || resp.PatchType != nil {
				t.Errorf("want allowed with no patch, got allowed=%v patches=%v", resp.Allowed, resp.Patches)
			}
			t.Logf("%s", resp.Result.Message)
		})
	}
}

// Label sets on pod what gangmap's pod controller sets: KAI's skip annotation, pod-group-name, and
// the sub-group label (removed when the pod has no sub-group). groupOps make the same change as a
// JSON patch.
func Label(pod *corev1.Pod, podGroup, subGroup string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[kaikeys.SkipPodGrouper] = "true"
	pod.Annotations[kaikeys.PodGroupName] = podGroup
	if subGroup == "" {
		delete(pod.Labels, kaikeys.SubGroupName)
		return
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[kaikeys.SubGroupName] = subGroup
}
