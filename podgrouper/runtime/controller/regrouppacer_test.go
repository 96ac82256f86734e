package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// recordingQueue records what is added to it, and after which delay.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	added []string
}

func (q *recordingQueue) Add(r reconcile.Request) { q.added = append(q.added, r.Name+" now") }

func (q *recordingQueue) AddAfter(r reconcile.Request, d time.Duration) {
	q.added = append(q.added, fmt.Sprintf("%s after %v", r.Name, d))
}

func (q *recordingQueue) take() []string {
	out := q.added
	q.added = nil
	return out
}

// TestRegroupPacerOnePerWindow: a workload's first change regroups its pods at once; changes
// within the next second are taken together at its end, once; a change after a quiet second is
// again regrouped at once. Another workload is paced on its own.
func TestRegroupPacerOnePerWindow(t *testing.T) {
	p := &regroupPacer{window: time.Second}
	q := &recordingQueue{}
	job, other := types.UID("job"), types.UID("other")
	pods := []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "a", Name: "train-0"}}, {NamespacedName: types.NamespacedName{Namespace: "a", Name: "train-1"}}}
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	assert.Zero(t, p.enqueue(q, job, pods, at(0)))
	assert.Equal(t, []string{"train-0 now", "train-1 now"}, q.take())

	assert.Equal(t, 980*time.Millisecond, p.enqueue(q, job, pods, at(20*time.Millisecond)))
	assert.Equal(t, []string{"train-0 after 980ms", "train-1 after 980ms"}, q.take())
	for i := 2; i < 50; i++ { // 48 more patches, 20 ms apart: already due at 1 s
		p.enqueue(q, job, pods, at(time.Duration(i)*20*time.Millisecond))
	}
	assert.Empty(t, q.take(), "changes before the due regroup add nothing")

	assert.Zero(t, p.enqueue(q, other, pods[:1], at(500*time.Millisecond)), "another workload is not paced by this one")
	assert.Equal(t, []string{"train-0 now"}, q.take())

	p.enqueue(q, job, pods, at(1500*time.Millisecond)) // after the due regroup at 1 s: the next window ends at 2 s
	assert.Equal(t, []string{"train-0 after 500ms", "train-1 after 500ms"}, q.take())

	assert.Zero(t, p.enqueue(q, job, pods, at(3*time.Second)), "a window after the last regroup: at once")
	assert.Len(t, q.take(), 2)

	p.forget(job)
	assert.Zero(t, p.enqueue(q, job, pods, at(3100*time.Millisecond)), "a forgotten workload regroups at once")
	q.take()
}

// TestRegroupPacerSweeps: the times of workloads not changed for a window are dropped as new
// workloads come, so the pacer holds about the workloads changed in the last window.
func TestRegroupPacerSweeps(t *testing.T) {
	p := &regroupPacer{window: time.Second}
	q := &recordingQueue{}
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for i := range 5000 {
		p.enqueue(q, types.UID(fmt.Sprint("w-", i)), nil, t0.Add(time.Duration(i)*time.Millisecond))
	}
	assert.LessOrEqual(t, len(p.due), 2048, "at most the last window's workloads, plus those since the last sweep")
	assert.GreaterOrEqual(t, len(p.due), 1000, "the last window's workloads are kept")
}
