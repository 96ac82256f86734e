package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestWorkloadWatchListedGoesToStatusKeeper: a workload the watch lists when it (re)starts (a
// create event: the informer's list after a definition change pruned and re-added the kind)
// goes to the status keeper as an update does, since its status may have changed while the kind
// was not watched; before, only updates did, and a status written in between never reached the
// PodGroup (e2e/coexist TestAlphaPlaceholderPodGroupGetsStatusAndHealth failed so about one run
// in two). A create regroups no pod.
func TestWorkloadWatchListedGoesToStatusKeeper(t *testing.T) {
	var changed []string
	w := &workloadWatcher{
		r:       &PodReconciler{},
		changed: func(u *unstructured.Unstructured) { changed = append(changed, u.GetName()) },
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	job := &unstructured.Unstructured{}
	job.SetName("train")
	job.SetUID("u-1")
	w.handler().Create(context.Background(), event.TypedCreateEvent[*unstructured.Unstructured]{Object: job}, q)
	assert.Equal(t, []string{"train"}, changed)
	assert.Zero(t, q.Len())
}
