package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/podgrouper/core/kaiadmission"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
)

var _ findings.WorkloadPods = (*PodReconciler)(nil)

// PodsOf implements findings.WorkloadPods: the pods grouped under the top owner uid (the Book)
// in namespace that carry a pod-group-name annotation, read from the pod cache (no API call), each with its sub-group label and the state KAI's scheduler gives it
// (kaiadmission.PodFor). The pod cache keeps no scheduling gates (podview), so a gated pod reads
// as pending: the model may then call a PodGroup admitted that KAI holds as not ready, never the
// other way round.
func (r *PodReconciler) PodsOf(_ context.Context, namespace string, uid types.UID) []findings.AdmissionPod {
	keys := r.book().Grouped(uid)
	out := make([]findings.AdmissionPod, 0, len(keys))
	for _, key := range keys {
		if key.Namespace != namespace {
			continue
		}
		pod, ok := r.Pods.Get(key)
		if !ok {
			continue // deleted meanwhile
		}
		pg := pod.Annotations[kaikeys.PodGroupName]
		if pg == "" {
			continue
		}
		out = append(out, findings.AdmissionPod{PodGroup: pg, Pod: kaiadmission.PodFor(pod)})
	}
	return out
}
