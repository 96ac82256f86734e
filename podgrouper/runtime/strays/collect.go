package strays

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// Collect looks once at w's own PodGroups of w's namespace (Owned), deletes (or reports) each
// stray of w unnamed for Grace, and returns after how long to look again (0: no stray is waiting).
func (c *Collector) Collect(ctx context.Context, w Workload) (time.Duration, error) {
	if err := c.validate(); err != nil {
		return 0, err
	}
	c.init()
	return c.collect(ctx, queuedOf(w))
}

// collect is Collect of an enqueued workload. It reads the workload's own PodGroups through
// Owned (the owner index: the cache's objects, only read; a candidate is a shallow copy), with no
// deep copy and no List of the namespace: a look costs the workload's own PodGroups, not the
// namespace's.
func (c *Collector) collect(ctx context.Context, w queued) (time.Duration, error) {
	ns := w.owner.Namespace
	owned, err := c.Owned(ns, w.owner.UID)
	if err != nil {
		return 0, err
	}
	keep := sets.New(w.keep...)
	var candidates []*v2alpha2.PodGroup
	for _, pg := range owned {
		if (ns == "" || pg.Namespace == ns) && isCandidate(pg, w.owner.UID, keep) {
			cp := *pg
			candidates = append(candidates, &cp)
		}
	}
	if len(candidates) == 0 {
		return 0, nil
	}
	// The PodGroups the cached pods of ns name (pod-group-name names a PodGroup of the pod's own
	// namespace; all namespaces when ns is "", for a cluster-scoped owner whose pods may live in
	// several), by namespace and name: a pod never keeps (or lets go) another namespace's
	// PodGroup of the same name.
	named := sets.New(c.Pods.AnnotationValues(ns, kaikeys.PodGroupName)...)
	now := time.Now()
	var next time.Duration
	sooner := func(d time.Duration) {
		if next == 0 || d < next {
			next = d
		}
	}
	for _, pg := range candidates {
		if named.Has(types.NamespacedName{Namespace: pg.Namespace, Name: pg.Name}) {
			c.forgetCandidate(pg.UID)
			continue
		}
		if wait := c.Grace - now.Sub(c.firstUnnamed(pg.UID, now)); wait > 0 {
			sooner(wait)
		} else if c.act(ctx, w, pg) {
			sooner(time.Second)
		}
	}
	return next, nil
}

// isCandidate: a PodGroup gangmap or KAI's pod-grouper wrote for the workload with this owner
// UID (its only owner reference), not in the current plan.
func isCandidate(pg *v2alpha2.PodGroup, owner types.UID, keep sets.Set[string]) bool {
	refs := pg.OwnerReferences
	if len(refs) != 1 || refs[0].UID != owner || keep.Has(pg.Name) || pg.DeletionTimestamp != nil {
		return false
	}
	_, gangmaps := pg.Annotations[kaikeys.Definition]
	_, kais := pg.Annotations[kaikeys.TopOwnerMetadata]
	return gangmaps || kais
}

func (c *Collector) firstUnnamed(uid types.UID, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.unnamedSince[uid]; !ok {
		c.unnamedSince[uid] = now
	}
	return c.unnamedSince[uid]
}

func (c *Collector) forgetCandidate(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.unnamedSince, uid)
}

// act deletes the stray (preconditions: its UID and resourceVersion) or, in dry-run, reports it
// once. It reports whether to look again (the delete failed or met a newer PodGroup).
func (c *Collector) act(ctx context.Context, w queued, pg *v2alpha2.PodGroup) bool {
	log := ctrl.LoggerFrom(ctx).WithValues("podGroup", pg.Namespace+"/"+pg.Name)
	writer := "KAI's pod-grouper"
	if _, ok := pg.Annotations[kaikeys.Definition]; ok {
		writer = "gangmap"
	}
	if c.DryRun {
		c.mu.Lock()
		done := c.reported[pg.UID]
		c.reported[pg.UID] = true
		c.mu.Unlock()
		if !done {
			strayTotal.WithLabelValues(ResultDryRun).Inc()
			c.event(w, corev1.EventTypeNormal, fmt.Sprintf("dry-run: would delete stray PodGroup %s (written by %s; no pod has named it for %v)", pg.Name, writer, c.Grace))
			log.Info("Dry-run: stray PodGroup reported, not deleted", "writer", writer)
		}
		return false
	}
	err := c.Client.Delete(ctx, pg, client.Preconditions{UID: &pg.UID, ResourceVersion: &pg.ResourceVersion})
	switch {
	case err == nil || apierrors.IsNotFound(err):
		c.forgetCandidate(pg.UID)
		if err == nil {
			strayTotal.WithLabelValues(ResultDeleted).Inc()
			c.event(w, corev1.EventTypeNormal, fmt.Sprintf("deleted stray PodGroup %s (written by %s; no pod has named it for %v)", pg.Name, writer, c.Grace))
			log.Info("Deleted a stray PodGroup", "writer", writer)
		}
		return false
	case apierrors.IsConflict(err):
		log.V(1).Info("Stray PodGroup changed since it was judged; looking again later")
	default:
		strayTotal.WithLabelValues(ResultError).Inc()
		log.Error(err, "Deleting a stray PodGroup")
	}
	return true
}

func (c *Collector) event(w queued, typ, msg string) {
	if c.Recorder != nil {
		c.Recorder.Event(&w.owner, typ, ReasonStray, msg)
	}
}
