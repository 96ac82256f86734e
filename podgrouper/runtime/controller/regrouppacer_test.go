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

// list is reqs as the pacer's lister.
func list(reqs []reconcile.Request) func() []reconcile.Request {
	return func() []reconcile.Request { return reqs }
}

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
	p := &regroupPacer{}
	q := &recordingQueue{}
	job, other := types.UID("job"), types.UID("other")
	pods := []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "a", Name: "train-0"}}, {NamespacedName: types.NamespacedName{Namespace: "a", Name: "train-1"}}}
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	second := time.Second

	assert.Zero(t, p.enqueue(q, job, list(pods), at(0), second))
	assert.Equal(t, []string{"train-0 now", "train-1 now"}, q.take())

	assert.Equal(t, 980*time.Millisecond, p.enqueue(q, job, list(pods), at(20*time.Millisecond), second))
	assert.Equal(t, []string{"train-0 after 980ms", "train-1 after 980ms"}, q.take())
	for i := 2; i < 50; i++ { // 48 more patches, 20 ms apart: already due at 1 s
		p.enqueue(q, job, list(pods), at(time.Duration(i)*20*time.Millisecond), second)
	}
	assert.Empty(t, q.take(), "changes before the due regroup add nothing")

	assert.Zero(t, p.enqueue(q, other, list(pods[:1]), at(500*time.Millisecond), second), "another workload is not paced by this one")
	assert.Equal(t, []string{"train-0 now"}, q.take())

	p.enqueue(q, job, list(pods), at(1500*time.Millisecond), second) // the due regroup ran at 1 s: the next window ends at 2 s
	assert.Equal(t, []string{"train-0 after 500ms", "train-1 after 500ms"}, q.take())

	assert.Zero(t, p.enqueue(q, job, list(pods), at(3*time.Second), second), "a window after the last regroup: at once")
	assert.Len(t, q.take(), 2)

	p.forget(job)
	assert.Zero(t, p.enqueue(q, job, list(pods), at(3100*time.Millisecond), second), "a forgotten workload regroups at once")
	q.take()
}

// TestRegroupPacerMetadataWindow: annotations patched in a loop regroup the pods once per
// MetadataRegroupWindow; a spec change meanwhile is not held to that window, only to its own
// (RegroupWindow), and the regroup already due is brought forward, not added twice.
func TestRegroupPacerMetadataWindow(t *testing.T) {
	p := &regroupPacer{}
	q := &recordingQueue{}
	job := types.UID("job")
	pods := []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "a", Name: "train-0"}}}
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	p.enqueue(q, job, list(pods), at(0), MetadataRegroupWindow)
	for i := 1; i < 100; i++ { // an annotation every 20 ms for 2 s
		p.enqueue(q, job, list(pods), at(time.Duration(i)*20*time.Millisecond), MetadataRegroupWindow)
	}
	assert.Equal(t, []string{"train-0 now", "train-0 after 9.98s"}, q.take(), "one regroup now, one at the window's end")

	assert.Zero(t, p.enqueue(q, job, list(pods), at(2500*time.Millisecond), RegroupWindow), "a spec change a second after the last regroup: at once")
	assert.Equal(t, []string{"train-0 now"}, q.take())
	p.enqueue(q, job, list(pods), at(2600*time.Millisecond), MetadataRegroupWindow)
	assert.Empty(t, q.take(), "the regroup due at 10 s takes this change")
	assert.Equal(t, 900*time.Millisecond, p.enqueue(q, job, list(pods), at(2600*time.Millisecond), RegroupWindow))
	assert.Equal(t, []string{"train-0 after 900ms"}, q.take(), "a spec change waits for its own window only, to 3.5 s (the queue's delay takes the earlier time)")

	p.enqueue(q, job, list(pods), at(10500*time.Millisecond), MetadataRegroupWindow) // the 3.5 s regroup ran; the 10 s one too
	assert.Equal(t, []string{"train-0 after 3s"}, q.take(), "the next metadata regroup 10 s after the 3.5 s one (the last the pacer scheduled)")
}

// TestRegroupPacerSweeps: the times of workloads not changed for MetadataRegroupWindow are
// dropped as new workloads come, so the pacer holds about the workloads changed in that window.
func TestRegroupPacerSweeps(t *testing.T) {
	p := &regroupPacer{}
	q := &recordingQueue{}
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for i := range 50_000 {
		p.enqueue(q, types.UID(fmt.Sprint("w-", i)), list(nil), t0.Add(time.Duration(i)*time.Millisecond), RegroupWindow)
	}
	assert.LessOrEqual(t, len(p.workloads), 20_480, "at most the last window's workloads, plus those since the last sweep")
	assert.GreaterOrEqual(t, len(p.workloads), 10_000, "the last window's workloads are kept")
}
