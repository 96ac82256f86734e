package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// RegroupWindow is how often at most changes of a workload's spec or status regroup all its
// pods: at once at a change, then at the end of the window for the changes made during it.
const RegroupWindow = time.Second

// MetadataRegroupWindow is RegroupWindow for changes of a workload's labels and annotations
// alone (its generation the same), which any writer of the workload can make in a loop: each
// regroup of a changed annotation rewrites the PodGroup (KAI's default metadata copies the top
// owner's annotations), one API request and more for a write of the workload.
const MetadataRegroupWindow = 10 * time.Second

// regroupPacer paces the regroups a workload's changes cause (workloadWatcher's handler): the
// workload's pods are enqueued at once at a change, and at most once per window after that; the
// changes made within a window are taken together at its end (the pods wait in the queue's delay,
// deduplicated, and read the workload as it is then). So a workload patched in a loop costs one
// regroup of its pods per window, not one per patch: an annotation written every 20 ms on a
// 2,000-pod JobSet asked for 100,000 reconciles a second, and 40 namespaces patching theirs every
// 200 ms took the grouper's whole client rate limit (one PodGroup update a patch). A single change
// is regrouped at once, as before. Memory: two times per workload changed within the last
// MetadataRegroupWindow (older ones are swept as new ones come; a deleted workload's is
// forgotten).
type regroupPacer struct {
	mu        sync.Mutex
	workloads map[types.UID]*paced
	sweepAt   int
}

// paced is one workload's regroups: when the last one ran, and when the next is due (zero: none).
type paced struct{ ran, next time.Time }

// enqueue regroups the pods of workload uid (pods lists them, asked only when they are enqueued)
// for a change at now whose kind allows one regroup per window: at once when the last regroup is
// a window old or more, else at its end (after the returned delay), unless a regroup is already
// due by then.
func (p *regroupPacer) enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], uid types.UID, pods func() []reconcile.Request, now time.Time, window time.Duration) (delay time.Duration) {
	p.mu.Lock()
	w := p.workloads[uid]
	if w == nil {
		p.sweep(now)
		w = &paced{}
		p.workloads[uid] = w
	}
	if !w.next.IsZero() && !w.next.After(now) { // the due regroup has run
		w.ran, w.next = w.next, time.Time{}
	}
	at := now
	if !w.ran.IsZero() && w.ran.Add(window).After(now) {
		at = w.ran.Add(window)
	}
	if !w.next.IsZero() && !w.next.After(at) {
		p.mu.Unlock()
		return w.next.Sub(now)
	}
	if delay = at.Sub(now); delay == 0 {
		w.ran = now // a regroup due later (a longer window's) still comes: the queue holds it
	} else {
		w.next = at // earlier than a regroup already due: the queue's delay takes the earlier
	}
	p.mu.Unlock()
	for _, r := range pods() {
		if delay == 0 {
			q.Add(r)
		} else {
			q.AddAfter(r, delay)
		}
	}
	return delay
}

// sweep drops, once the map has doubled since the last sweep, the workloads with no regroup due
// whose last one is MetadataRegroupWindow old (they regroup at once at their next change, as if
// unseen). p.mu is held.
func (p *regroupPacer) sweep(now time.Time) {
	if p.workloads == nil {
		p.workloads = map[types.UID]*paced{}
	}
	if len(p.workloads) < p.sweepAt {
		return
	}
	for uid, w := range p.workloads {
		if w.next.IsZero() && now.Sub(w.ran) >= MetadataRegroupWindow {
			delete(p.workloads, uid)
		}
	}
	p.sweepAt = max(1024, 2*len(p.workloads))
}

// forget drops a deleted workload.
func (p *regroupPacer) forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.workloads, uid)
}
