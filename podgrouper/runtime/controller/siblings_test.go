package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gangmap/gangmap/internal/podcachetest"
	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// groupedPod is a pod of workload "train" in namespace "a" carrying pod-group-name pg ("" for
// none) and sub-group sg.
func groupedPod(name, pg, sg string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("uid-" + name),
		Annotations: map[string]string{}, Labels: map[string]string{}}, Spec: corev1.PodSpec{SchedulerName: "kai-scheduler"}}
	if pg != "" {
		p.Annotations[kaikeys.PodGroupName] = pg
	}
	if sg != "" {
		p.Labels[kaikeys.SubGroupName] = sg
	}
	return p
}

// reconcilerWithPods is a PodReconciler whose pod cache and Book hold pods, all of workload owner.
func reconcilerWithPods(t *testing.T, owner types.UID, pods ...*corev1.Pod) *PodReconciler {
	t.Helper()
	c, _ := podcachetest.Start(t, pods...)
	r := &PodReconciler{Pods: c}
	r.init()
	for _, p := range pods {
		r.Book.Group(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, owner)
	}
	r.workloads = &workloadWatcher{r: r}
	return r
}

// TestOnePerPodGroupForMetadataChanges: a change of a workload's labels or annotations alone
// regroups one pod of each of its PodGroups (by the pods' pod-group-name: two LeaderWorkerSet
// groups here) and every pod not grouped yet.
func TestOnePerPodGroupForMetadataChanges(t *testing.T) {
	owner := types.UID("lws")
	r := reconcilerWithPods(t, owner,
		groupedPod("g0-leader", "pg-lws-0", "leader"), groupedPod("g0-worker-1", "pg-lws-0", "worker"), groupedPod("g0-worker-2", "pg-lws-0", "worker"),
		groupedPod("g1-leader", "pg-lws-1", "leader"), groupedPod("g1-worker-1", "pg-lws-1", "worker"),
		groupedPod("g1-worker-2", "", ""))
	groups := map[string]int{}
	for _, req := range r.onePerPodGroup(r.requests(owner)) {
		pg, _ := r.Pods.Annotation(req.NamespacedName, kaikeys.PodGroupName)
		groups[pg]++
	}
	assert.Equal(t, map[string]int{"pg-lws-0": 1, "pg-lws-1": 1, "": 1}, groups, "one pod of each PodGroup, and the pod not grouped yet")
}

// TestRegroupSiblingsWhenAPodMoves: a pod that had a PodGroup and is decided into another
// PodGroup or sub-group regroups every pod of its workload (once: paced); a pod that stays, or
// one grouped for the first time, regroups nothing.
func TestRegroupSiblingsWhenAPodMoves(t *testing.T) {
	owner := types.UID("job")
	pods := []*corev1.Pod{groupedPod("w-0", "pg-job", "worker"), groupedPod("w-1", "pg-job", "worker"), groupedPod("new", "", "")}
	r := reconcilerWithPods(t, owner, pods...)
	q := &recordingQueue{}
	var iq workqueue.TypedRateLimitingInterface[reconcile.Request] = q
	r.queue.Store(&iq)
	obj := &unstructured.Unstructured{}
	obj.SetUID(owner)
	decision := func(pg, sg string) *decide.Decision {
		return &decide.Decision{Owner: obj, Metadata: &podgroup.Metadata{Name: pg}, SubGroup: sg}
	}
	r.regroupSiblings(pods[0], decision("pg-job", "worker"))
	r.regroupSiblings(pods[2], decision("pg-job", "worker"))
	assert.Empty(t, q.take(), "staying, or grouped for the first time")

	r.regroupSiblings(pods[0], decision("pg-job", "evaluator"))
	assert.Len(t, q.take(), 3, "a pod moved to another sub-group: every pod of the workload")
	r.regroupSiblings(pods[1], decision("pg-job-2", "worker"))
	later := q.take()
	require.Len(t, later, 3)
	assert.Contains(t, later[0], " after ", "paced: the second regroup comes at the end of the window")
}
