package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gangmap/gangmap/podgrouper/runtime/workloadmetrics"
)

// TestWorkloadWatchListedGoesToStatusKeeper: a workload the watch lists when it (re)starts (a
// create event: the informer's list after a definition change pruned and re-added the kind)
// goes to the status keeper as an update does, since its status may have changed while the kind
// was not watched; before, only updates did, and a status written in between never reached the
// PodGroup (e2e/coexist TestAlphaPlaceholderPodGroupGetsStatusAndHealth failed so about one run
// in two). A create regroups no pod.
func TestWorkloadWatchListedGoesToStatusKeeper(t *testing.T) {
	m := &workloadmetrics.Tracker{MaxWorkloads: 1}
	require.True(t, m.SetWorkload(workloadmetrics.Workload{UID: "u-1", Name: "train"}))
	w := &workloadWatcher{r: &PodReconciler{}, status: newStatusKeeper(nil, nil, nil, m, false)}
	defer w.status.queue.ShutDown()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	job := &unstructured.Unstructured{}
	job.SetName("train")
	job.SetUID("u-1")
	w.handler().Create(context.Background(), event.TypedCreateEvent[*unstructured.Unstructured]{Object: job}, q)
	k, _ := w.status.queue.Get()
	assert.Equal(t, "train", k.key.Name)
	assert.Zero(t, q.Len())
}
