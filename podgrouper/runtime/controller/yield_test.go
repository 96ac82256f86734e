package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"

	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/kairelease"
)

// On KAI before v0.15 (no skip annotation, kai-releases.md §2) a pod whose pod-group-name is KAI's
// default grouper's pg-<owner name>-<owner UID> is left to KAI, once, with a Warning Event; on
// v0.15+ gangmap takes it (the skip annotation keeps KAI off afterwards), and a pod in another
// gangmap PodGroup (an older plan) is always regrouped.
func TestYieldToKAI(t *testing.T) {
	owner := &unstructured.Unstructured{}
	owner.SetName("train")
	owner.SetUID("u-1")
	pod := func(cur string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "pod-9", Annotations: map[string]string{kaikeys.PodGroupName: cur}}}
	}
	for _, tc := range []struct {
		name, release, cur string
		want               bool
	}{
		{"v0.14, KAI's default group of the workload", "v0.14", "pg-train-u-1", true},
		{"v0.14, KAI's group of the pod (no RBAC for the kind)", "v0.14", "pg-p-pod-9", true},
		{"v0.14, already gangmap's", "v0.14", "pg-u-1-gang", false},
		{"v0.14, an older gangmap PodGroup", "v0.14", "pg-u-1-old", false},
		{"v0.14, not yet grouped", "v0.14", "", false},
		{"v0.15 takes it back", "v0.15", "pg-train-u-1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(4)
			r := &PodReconciler{Recorder: rec, Release: kairelease.MustParse(tc.release)}
			assert.Equal(t, tc.want, r.yieldToKAI(context.Background(), pod(tc.cur), owner, "pg-u-1-gang"))
			if tc.want {
				assert.Contains(t, <-rec.Events, "Warning GangmapYieldedToKAI KAI's pod-grouper put the pod in PodGroup "+tc.cur)
			} else {
				assert.Empty(t, rec.Events)
			}
		})
	}
}
