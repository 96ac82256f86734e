package controller

import (
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// queueRef holds the controller's work queue once the controller has started (set by a source
// the controller starts), for the reconciler's own enqueues (regroupSiblings).
type queueRef struct {
	atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
}

// onePerPodGroup keeps, of a workload's pods, the first of each PodGroup (by the pods'
// pod-group-name annotation in the pod cache) and every pod with none (not grouped yet). One
// reconcile per PodGroup writes its gang and metadata; the pods' own writes (their PodGroup and
// sub-group) do not depend on the workload's labels and annotations (see regroupSiblings).
func (r *PodReconciler) onePerPodGroup(reqs []reconcile.Request) []reconcile.Request {
	seen := map[string]bool{}
	out := reqs[:0:0]
	for _, req := range reqs {
		name, ok := r.Pods.Annotation(req.NamespacedName, kaikeys.PodGroupName)
		if ok && seen[name] {
			continue
		}
		if ok {
			seen[name] = true
		}
		out = append(out, req)
	}
	return out
}

// regroupSiblings enqueues every pod of the pod's workload when the decision moves the pod, which
// had a PodGroup, to another PodGroup or sub-group: the plan changed in a way the workload watch
// did not regroup for (a definition that reads the workload's labels or annotations to place
// pods: onePerPodGroup reconciled one pod of each PodGroup), so the other pods may move too.
func (r *PodReconciler) regroupSiblings(pod *corev1.Pod, d *decide.Decision) {
	cur, had := pod.Annotations[kaikeys.PodGroupName]
	if !had || (cur == d.Metadata.Name && pod.Labels[kaikeys.SubGroupName] == d.SubGroup) {
		return
	}
	q := r.queue.Load()
	if q == nil || r.workloads == nil {
		return
	}
	// Paced as the workload watch's regroups (at most one a second after the first), so that the
	// pods of a role that all move at once do not each regroup every other pod.
	uid := d.Owner.GetUID()
	r.workloads.pacer.enqueue(*q, uid, func() []reconcile.Request { return r.requests(uid) }, time.Now(), RegroupWindow)
}
