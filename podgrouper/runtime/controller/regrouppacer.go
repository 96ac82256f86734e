package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// RegroupWindow is how often at most a workload's changes regroup all its pods: at once at a
// change, then at the end of the window for the changes made during it.
const RegroupWindow = time.Second

// regroupPacer paces the regroups a workload's changes cause (workloadWatcher's handler): the
// workload's pods are enqueued at once at a change, and at most once per window after that; the
// changes made within a window are taken together at its end (the pods wait in the queue's delay,
// deduplicated, and read the workload as it is then). So a workload patched in a loop costs one
// regroup of its pods per window, not one per patch: an annotation written every 20 ms on a
// 2,000-pod JobSet asked for 100,000 reconciles a second, and the CPU they took slowed the
// grouping of every other namespace's pods. A scale-up or a spec change alone is regrouped at
// once, as before. Memory: one time per workload changed within the last window (older ones are
// swept as new ones come, and a deleted workload's is forgotten).
type regroupPacer struct {
	window time.Duration
	mu     sync.Mutex
	// due is, per workload, when its last regroup ran or is to run.
	due     map[types.UID]time.Time
	sweepAt int
}

// enqueue adds reqs, the pods of workload uid, to q now when the workload's last regroup is a
// window old or more; else after the window that follows it, unless a regroup is already due
// after now (whose pods, still waiting, read the workload then).
func (p *regroupPacer) enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], uid types.UID, reqs []reconcile.Request, now time.Time) (delay time.Duration) {
	p.mu.Lock()
	due, seen := p.due[uid]
	switch {
	case !seen || now.Sub(due) >= p.window:
		if !seen {
			p.sweep(now)
		}
		p.due[uid] = now
	case now.Before(due):
		p.mu.Unlock()
		return due.Sub(now)
	default:
		due = due.Add(p.window)
		p.due[uid] = due
		delay = due.Sub(now)
	}
	p.mu.Unlock()
	for _, r := range reqs {
		if delay == 0 {
			q.Add(r)
		} else {
			q.AddAfter(r, delay)
		}
	}
	return delay
}

// sweep drops, once the map has doubled since the last sweep, the workloads whose last regroup
// is a window old (they regroup at once at their next change, as if unseen). p.mu is held.
func (p *regroupPacer) sweep(now time.Time) {
	if p.due == nil {
		p.due = map[types.UID]time.Time{}
	}
	if len(p.due) < p.sweepAt {
		return
	}
	for uid, due := range p.due {
		if now.Sub(due) >= p.window {
			delete(p.due, uid)
		}
	}
	p.sweepAt = max(1024, 2*len(p.due))
}

// forget drops a deleted workload.
func (p *regroupPacer) forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.due, uid)
}
