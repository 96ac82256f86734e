package kaiadmission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StateOf follows pkg/scheduler/api/pod_info/pod_info.go getTaskStatus.
func TestStateOf(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want State
	}{
		{"pending", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, Pending},
		{"no phase yet", corev1.Pod{}, Pending},
		{"pending with a node", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}, Bound},
		{"gated", corev1.Pod{Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: "g"}}}}, Gated},
		{"pending, deleted", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}}, Releasing},
		{"running", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, Bound},
		{"running, deleted", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, Releasing},
		{"succeeded", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, Succeeded},
		{"failed", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, Failed},
	} {
		assert.Equal(t, tc.want, StateOf(&tc.pod), tc.name)
	}
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w", Labels: map[string]string{"kai.scheduler/subgroup-name": "worker"}}}
	assert.Equal(t, Pod{Name: "w", SubGroup: "worker", State: Pending}, PodFor(&p))
}
