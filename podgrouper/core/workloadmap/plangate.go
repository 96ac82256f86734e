package workloadmap

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"golang.org/x/sync/semaphore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/definitions/expr"
)

// The plan gate: every plan build (webhook decisions, pod reconciles, the status keeper, the
// findings reporter: all read plans through Grouper.Plan and Grouper.Role) takes, before it
// evaluates any expression, a share of one bound on the memory that builds running at once may
// hold, and gives it back when done. A build's share is what it may hold at most: the budget of
// one expression evaluation (expr.Limits.MaxProducedBytes: a build evaluates its expressions one
// after the other) plus three times the workload object's size (the object, its normalized copy
// for the expressions, the plan). So N workloads built at once, hostile or not, hold at most
// PlanMemory, whatever N, and the builds of one namespace at most half of it, so another
// namespace's builds still get theirs however many workloads one namespace has; a build that
// cannot get its share within PlanWait is refused with ErrPlanBuildsBusy (a Warning Event on the workload, retried by the caller, not cached), and
// the builds that do run are short: a hostile workload's is refused by its expressions' budget
// in microseconds (issue 28), so ordinary workloads' pods keep being grouped.

// DefaultPlanMemory is Grouper.PlanMemory by default, in bytes: five builds of a 32 MiB
// expression budget and a small object at once (the grouper's --plan-build-memory).
const DefaultPlanMemory = 192 << 20 // the flag's default, 192Mi

// DefaultPlanWait is Grouper.PlanWait by default: how long a build waits for its share before
// it is refused (the grouper's --plan-build-wait). Below the webhook's decision timeout, so a
// refused build's pod is admitted unchanged and grouped by the controller's retry.
const DefaultPlanWait = 2 * time.Second

// ErrPlanBuildsBusy is the error of a plan build refused because the builds running at once
// hold the whole plan memory bound for longer than PlanWait. It is not cached: the next read of
// the plan builds it again.
var ErrPlanBuildsBusy = errors.New("the plan builds running at once hold the whole plan memory bound (--plan-build-memory)")

// ReasonPlanBuildRefused is the reason of the Warning Event on a workload whose plan build was
// refused by the plan gate.
const ReasonPlanBuildRefused = "PlanBuildRefused"

// PlanBuildMemoryBytes is the memory share held by the plan builds running now, in bytes (at
// most --plan-build-memory).
var PlanBuildMemoryBytes = promauto.With(metrics.Registry).NewGauge(prometheus.GaugeOpts{
	Name: "gangmap_plan_build_memory_bytes",
	Help: "Memory share held by the plan builds running now: per build, the expression budget plus three times the workload object's size; at most --plan-build-memory.",
})

// PlanBuildsRefusedTotal counts plan builds refused because the running builds held the whole
// plan memory bound for longer than --plan-build-wait.
var PlanBuildsRefusedTotal = promauto.With(metrics.Registry).NewCounter(prometheus.CounterOpts{
	Name: "gangmap_plan_builds_refused_total",
	Help: "Plan builds refused because the builds running at once held the whole --plan-build-memory for longer than --plan-build-wait (the workload gets a PlanBuildRefused Event; the plan is built again at its next read).",
})

// planGate is the weighted semaphore of the plan builds, in bytes.
type planGate struct {
	once     sync.Once
	sem      *semaphore.Weighted
	capacity int64
	wait     time.Duration
	// budget is the expression budget of one build (MaxProducedBytes of the registry's limits).
	budget int64
	// mu guards namespaces: the share of the bound each namespace's builds hold now, so that one
	// namespace's workloads (a workload author's, hostile or only many) hold at most half the
	// bound and the builds of every other namespace still get theirs. An entry lives while a build
	// of its namespace holds or waits for a share, so the map is bounded by the builds at once.
	mu         sync.Mutex
	namespaces map[string]*namespaceShare
}

// namespaceShare is one namespace's semaphore (capacity: half the gate's) and the builds that
// hold or wait for a share of it.
type namespaceShare struct {
	sem   *semaphore.Weighted
	users int
}

// enter returns namespace's share of the gate, made when its first build comes.
func (pg *planGate) enter(namespace string) *namespaceShare {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	ns := pg.namespaces[namespace]
	if ns == nil {
		ns = &namespaceShare{sem: semaphore.NewWeighted(pg.namespaceCapacity())}
		pg.namespaces[namespace] = ns
	}
	ns.users++
	return ns
}

// leave drops a build from namespace's share, and the share once no build holds or waits for it.
func (pg *planGate) leave(namespace string, ns *namespaceShare) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if ns.users--; ns.users == 0 {
		delete(pg.namespaces, namespace)
	}
}

// namespaceCapacity is what the builds of one namespace may hold at once: half the bound.
func (pg *planGate) namespaceCapacity() int64 { return max(pg.capacity/2, 1) }

// gate returns the grouper's plan gate, made at the first use from PlanMemory and PlanWait.
func (g *Grouper) gate() *planGate {
	g.plansGate.once.Do(func() {
		pg := &g.plansGate
		pg.capacity = cmp.Or(max(g.PlanMemory, 0), DefaultPlanMemory)
		pg.wait = cmp.Or(max(g.PlanWait, 0), DefaultPlanWait)
		pg.budget = expr.DefaultLimits().MaxProducedBytes
		if g.Registry != nil && g.Registry.Compiler() != nil {
			pg.budget = g.Registry.Compiler().Limits().MaxProducedBytes
		}
		pg.sem = semaphore.NewWeighted(pg.capacity)
		pg.namespaces = map[string]*namespaceShare{}
	})
	return &g.plansGate
}

// share is the memory a build of obj may hold: the expression budget and three times the
// object's size (measured up to the capacity), at most the whole capacity.
func (pg *planGate) share(obj *unstructured.Unstructured) int64 {
	return min(pg.budget+3*expr.SizeOf(obj.Object, pg.capacity), pg.capacity)
}

// acquire takes the build's share, of its namespace's half of the bound and of the bound,
// waiting at most pg.wait for both (or until ctx ends), and returns the function that gives them
// back. A build needing more than half the bound takes its namespace's whole half and, of the
// bound, what it needs. Errors: ErrPlanBuildsBusy, wrapped with what is held and waited.
func (pg *planGate) acquire(ctx context.Context, obj *unstructured.Unstructured) (release func(), err error) {
	n := pg.share(obj)
	namespace := obj.GetNamespace()
	ns := pg.enter(namespace)
	nsN := min(n, pg.namespaceCapacity())
	if err := pg.waitFor(ctx, ns, nsN, n); err != nil {
		pg.leave(namespace, ns)
		PlanBuildsRefusedTotal.Inc()
		return nil, fmt.Errorf("%w: this build needs %d MiB and waited %s", ErrPlanBuildsBusy, (n+1<<20-1)>>20, pg.wait)
	}
	PlanBuildMemoryBytes.Add(float64(n))
	return func() {
		PlanBuildMemoryBytes.Sub(float64(n))
		pg.sem.Release(n)
		ns.sem.Release(nsN)
		pg.leave(namespace, ns)
	}, nil
}

// waitFor takes nsN of the namespace's share, then n of the bound: at once when both are free
// (no timer), else waiting at most pg.wait in all (or until ctx ends); on an error it holds
// neither.
func (pg *planGate) waitFor(ctx context.Context, ns *namespaceShare, nsN, n int64) error {
	if ns.sem.TryAcquire(nsN) {
		if pg.sem.TryAcquire(n) {
			return nil
		}
		ns.sem.Release(nsN)
	}
	wctx, cancel := context.WithTimeout(ctx, pg.wait)
	defer cancel()
	if err := ns.sem.Acquire(wctx, nsN); err != nil {
		return err
	}
	if err := pg.sem.Acquire(wctx, n); err != nil {
		ns.sem.Release(nsN)
		return err
	}
	return nil
}

// refused reports a build the gate refused: a Warning Event on the workload.
func (g *Grouper) refused(obj *unstructured.Unstructured, err error) {
	if g.Recorder != nil {
		g.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonPlanBuildRefused, "gangmap did not build the gang plan now: %v; its pods are grouped at the next try", err)
	}
}
