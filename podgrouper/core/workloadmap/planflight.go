package workloadmap

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
)

// DefaultPlanTimeout bounds one plan build (every expression of the definition on the
// workload, each also bounded by the expression limits) when Grouper.PlanTimeout is zero.
const DefaultPlanTimeout = 10 * time.Second

// flightKey identifies one plan build: the workload version (namespace, name, UID and
// resourceVersion) and the definition version (the *definitions.Compiled, replaced whenever the
// definition changes).
func flightKey(topOwner *unstructured.Unstructured, compiled *definitions.Compiled) string {
	return fmt.Sprintf("%s/%s/%s/%s/%p", topOwner.GetNamespace(), topOwner.GetName(), topOwner.GetUID(), topOwner.GetResourceVersion(), compiled)
}

// sharedPlan returns the plan of the workload version, building it at most once however many
// pods (webhook calls, reconciles, retries) ask at the same time: the first caller starts the
// build, the others wait for the same result. The build does not depend on any caller: it runs
// under its own deadline (PlanTimeout), detached from the callers' contexts, and its result,
// a failure included, is cached for the workload version, so a caller that stops waiting (the
// webhook at its decision deadline) leaves the result to the next one (the controller's retry),
// and a definition that fails on a workload costs its bounded time once per version, not per
// pod and retry.
func (g *Grouper) sharedPlan(ctx context.Context, topOwner *unstructured.Unstructured, compiled *definitions.Compiled) (*cachedPlan, error) {
	key := flightKey(topOwner, compiled)
	detached := context.WithoutCancel(ctx) // keeps the logger, not the deadline
	ch := g.flight.DoChan(key, func() (any, error) {
		// A flight that ended after this caller missed the cache has cached the plan already.
		if c, ok := g.cache().get(planKey{namespace: topOwner.GetNamespace(), uid: topOwner.GetUID()}); ok && c.current(topOwner, compiled) {
			return c, nil
		}
		return g.buildPlan(detached, topOwner, compiled), nil
	})
	if ctx.Err() != nil {
		// A caller already past its deadline never waits, and never takes a result that happens
		// to be ready (select would pick either at random): the build goes on for the next one.
		return nil, stillBuilding(ctx, topOwner, compiled)
	}
	select {
	case res := <-ch:
		return res.Val.(*cachedPlan), nil
	case <-ctx.Done():
		return nil, stillBuilding(ctx, topOwner, compiled)
	}
}

// stillBuilding is the error of a caller that stopped waiting for a plan build: it names the
// definition and the workload and wraps the context's error.
func stillBuilding(ctx context.Context, topOwner *unstructured.Unstructured, compiled *definitions.Compiled) error {
	return fmt.Errorf("definition %q: the plan of %s %s/%s is still being built: %w",
		compiled.Name(), topOwner.GetKind(), topOwner.GetNamespace(), topOwner.GetName(), ctx.Err())
}

// buildPlan builds and caches the plan of topOwner (or its failure). A panic is a failure: the
// build runs on singleflight's goroutine, where an unrecovered panic would end the process.
func (g *Grouper) buildPlan(ctx context.Context, topOwner *unstructured.Unstructured, compiled *definitions.Compiled) (c *cachedPlan) {
	key := planKey{namespace: topOwner.GetNamespace(), uid: topOwner.GetUID()}
	c = &cachedPlan{name: topOwner.GetName(), resourceVersion: topOwner.GetResourceVersion(), compiled: compiled}
	failed := func(err error) *cachedPlan {
		c.err = fmt.Errorf("definition %q: %w", compiled.Name(), err)
		return c
	}
	defer func() {
		if p := recover(); p != nil { // a fresh entry: c may be cached and read already
			c = &cachedPlan{name: c.name, resourceVersion: c.resourceVersion, compiled: compiled}
			g.cache().add(key, failed(fmt.Errorf("internal error: %v", p)))
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(max(g.PlanTimeout, 0), DefaultPlanTimeout))
	defer cancel()
	release, err := g.gate().acquire(ctx, topOwner)
	if err != nil {
		// Not cached: the next read of the plan builds it again.
		g.refused(topOwner, err)
		return failed(err)
	}
	defer release()
	g.builds.Add(1)
	if !g.Release.HasSegments() {
		ctx = gang.WithoutRolePlacement(ctx, g.Release.SegmentsNote())
	} else if g.NoRolePlacement {
		ctx = gang.WithoutRolePlacement(ctx, "the grouper runs with --topology-segments=off")
	}
	plan, err := gang.Build(ctx, compiled, topOwner)
	if err != nil {
		g.cache().add(key, failed(err))
		return c
	}
	if !g.Release.HasMinSubGroup() {
		plan.Flatten(g.Release.FlatGangNote())
	}
	c.plan = plan
	c.setMeta()
	g.cache().add(key, c)
	g.reportMisses(compiled, topOwner, plan)
	g.reportOverrides(topOwner, plan)
	return c
}
