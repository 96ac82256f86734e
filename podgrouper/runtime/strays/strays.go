// Package strays deletes the PodGroups a workload no longer uses: when a workload's pods have
// moved to another PodGroup (gangmap repaired pods KAI's pod-grouper grouped first, a definition
// changed or was deleted, the definition source switched), the old PodGroup stays, empty, and
// KAI's pod-grouper never removes it (it writes only on pod events and never watches PodGroups,
// KAI pkg/podgrouper/pod_controller.go SetupWithManager; its RBAC has no delete on podgroups).
//
// A PodGroup is a stray of a workload, and deleted after Collector.Grace (or only reported, in
// dry-run), when all of these hold:
//   - its only owner reference is the workload (the top owner), as both gangmap and KAI's
//     pod-grouper write it (KAI pkg/podgrouper/podgroup/handler.go createPodGroupForMetadata);
//   - gangmap or KAI's pod-grouper wrote it: it carries gangmap.io/definition (gangmap) or
//     kai.scheduler/top-owner-metadata (KAI's default grouper, which its Karta path starts from,
//     plugins/defaultgrouper/default_grouper.go GetPodGroupMetadata). A PodGroup a user or
//     another controller made (KAI's external PodGroups) is never touched;
//   - it is not a PodGroup of the workload's current plan (a planned PodGroup whose pods are not
//     created yet, or a suspended workload's, stays);
//   - no pod in its namespace names it (pod-group-name), continuously for the grace period.
//
// The delete carries the PodGroup's UID and resourceVersion as preconditions, so a PodGroup
// changed or replaced since it was judged is not deleted.
package strays

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// ReasonStray is the Event reason on the workload for a stray PodGroup deleted or, in dry-run,
// reported.
const ReasonStray = "GangmapStrayPodGroup"

// Results, the result label of gangmap_stray_podgroups_total.
const (
	ResultDeleted = "Deleted"
	ResultDryRun  = "DryRun"
	ResultError   = "Error"
)

var strayTotal = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
	Name: "gangmap_stray_podgroups_total",
	Help: "PodGroups of a workload that no pod names any more, written by gangmap or KAI's pod-grouper: deleted after the grace period (Deleted), reported in dry-run (DryRun), or failed to delete (Error).",
}, []string{"result"})

// Workload is what the collector needs of a workload: its identity and the PodGroup names its
// current plan uses.
type Workload struct {
	Owner *unstructured.Unstructured
	Keep  []string
}

// queued is what the collector keeps of an enqueued workload until the workload is deleted: its
// owner's identity as strings (about 140 bytes in the map, against about 650 for the smallest
// unstructured object holding them, or the caller's whole workload) and the names to keep. The
// identity is all that Collect reads of the workload (the namespace to list, the UID of owner
// references) and what its Events' involvedObject records (an Event on an ObjectReference
// records it as it is).
type queued struct {
	owner corev1.ObjectReference
	keep  []string
}

// queuedOf is what the collector keeps of w, in its owner's own strings (none copied).
func queuedOf(w Workload) queued {
	o := w.Owner
	return queued{owner: corev1.ObjectReference{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName(),
		UID: o.GetUID(), ResourceVersion: o.GetResourceVersion()}, keep: w.Keep}
}

// Collector finds and deletes stray PodGroups per workload, off the pod controller's path: the
// controller calls Enqueue after grouping a pod, and the collector looks at the workload once per
// burst of pods, again after the grace period while a stray waits. It runs on the leader only.
type Collector struct {
	// Client deletes PodGroups.
	Client client.Client
	// Pods gives the pod-group-name of the cached pods of a namespace (the grouper's
	// podcache.Cache); required.
	Pods PodGroupNames
	// Grace is how long a PodGroup must stay unnamed by any pod before it is deleted; it must be
	// above 0.
	Grace time.Duration
	// Owned gives the cached PodGroups of a namespace whose only owner has a UID (namespace ""
	// for a cluster-scoped owner: every namespace; IndexOwnerUID, OwnerIndex.Owned); required.
	// It returns the cache's own objects, which the collector only reads.
	Owned func(namespace string, owner types.UID) ([]*v2alpha2.PodGroup, error)
	// DryRun reports strays (Event on the workload, log, metric) and deletes nothing.
	DryRun   bool
	Recorder record.EventRecorder

	once  sync.Once
	queue workqueue.TypedDelayingInterface[types.UID]
	mu    sync.Mutex
	// workloads holds the latest request per owner UID (the owner's identity, not the object);
	// unnamedSince when each stray candidate was first seen unnamed; reported the PodGroups
	// already reported in dry-run.
	workloads    map[types.UID]queued
	unnamedSince map[types.UID]time.Time
	reported     map[types.UID]bool
}

// PodGroupNames gives, for each cached pod of namespace ns (all namespaces when ns is "") that
// carries annotation key, its namespace and the annotation's value (podcache.Cache.AnnotationValues).
type PodGroupNames interface {
	AnnotationValues(ns, key string) []types.NamespacedName
}

var (
	_ manager.Runnable               = (*Collector)(nil)
	_ manager.LeaderElectionRunnable = (*Collector)(nil)
)

func (c *Collector) init() {
	c.once.Do(func() {
		c.queue = workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[types.UID]{Name: "gangmap-strays"})
		c.workloads, c.unnamedSince, c.reported = map[types.UID]queued{}, map[types.UID]time.Time{}, map[types.UID]bool{}
	})
}

// validate refuses a collector without its pod cache or its owner index.
func (c *Collector) validate() error {
	if c.Pods == nil || c.Owned == nil {
		return errors.New("the stray collector needs the pod cache (Collector.Pods) and the PodGroup owner index (Collector.Owned)")
	}
	return nil
}

// Enqueue asks for a look at the workload's PodGroups, with keep its current plan's PodGroup
// names. A nil Collector does nothing.
func (c *Collector) Enqueue(w Workload) {
	if c == nil {
		return
	}
	c.init()
	c.mu.Lock()
	c.workloads[w.Owner.GetUID()] = queuedOf(w)
	c.mu.Unlock()
	c.queue.Add(w.Owner.GetUID())
}

// Forget drops a deleted workload. A nil Collector does nothing.
func (c *Collector) Forget(uid types.UID) {
	if c == nil {
		return
	}
	c.init()
	c.mu.Lock()
	delete(c.workloads, uid)
	c.mu.Unlock()
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the leader deletes.
func (c *Collector) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable: it works the queue until ctx ends. Error: no Pods or Owned.
func (c *Collector) Start(ctx context.Context) error {
	if err := c.validate(); err != nil {
		return err
	}
	c.init()
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for {
		uid, shutdown := c.queue.Get()
		if shutdown {
			return nil
		}
		c.mu.Lock()
		q, ok := c.workloads[uid]
		c.mu.Unlock()
		if ok {
			log := ctrl.LoggerFrom(ctx).WithValues("workload", klog.KRef(q.owner.Namespace, q.owner.Name))
			after, err := c.collect(ctrl.LoggerInto(ctx, log), q)
			if err != nil {
				log.Error(err, "Looking for stray PodGroups")
				after = c.Grace
			}
			if after > 0 {
				c.queue.AddAfter(uid, after)
			}
		}
		c.queue.Done(uid)
	}
}
