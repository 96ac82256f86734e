// Package groupersetup builds, on a controller-runtime manager, what gangmap's two groupers set
// up the same way: the standalone grouper (cmd/gangmap-grouper/app) and gangmap inside KAI's
// pod-grouper (podgrouper/runtime/inkai). That is the definition registry with its metrics and
// sources (Definitions), and the record of grouped pods the findings and the workload metrics
// share, with KAI's Topology watcher and the findings reporter (AddTracking).
package groupersetup

import (
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/definitions/sources"
	"github.com/gangmap/gangmap/podgrouper/runtime/controller"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
	"github.com/gangmap/gangmap/podgrouper/runtime/kaitopology"
	"github.com/gangmap/gangmap/podgrouper/runtime/podbook"
	"github.com/gangmap/gangmap/podgrouper/runtime/workloadmetrics"
)

// Definitions are where a grouper's definitions come from (the --definitions,
// --definitions-poll, --cluster-definitions and --strict-definitions flags, and the catalog).
type Definitions struct {
	// Paths are definition files or directories, polled every Poll; each must exist at start.
	Paths []string
	Poll  time.Duration
	// Cluster watches Karta objects (they win over files and the catalog); Strict leaves out
	// definitions with unknown fields; Catalog loads the built-in catalog (the lowest precedence).
	Cluster, Strict, Catalog bool
	// IsNative says whether KAI groups a kind itself (the definition metrics' native state).
	IsNative func(schema.GroupVersionKind) bool
}

// Add builds the registry (gangmap's expressions with their default limits, the catalog when
// asked for), keeps the definition metrics current after each change (controller.SetDefinitionMetrics)
// and adds the sources to mgr as runnables (sources.AddToManager). Errors: a path that does not
// exist (a mistake to refuse at start, not to log every poll: a mounted ConfigMap directory exists
// even when empty), a catalog that does not load, clients that cannot be built.
func (d Definitions) Add(mgr manager.Manager) (*definitions.Registry, []sources.Source, error) {
	for _, p := range d.Paths {
		if _, err := os.Stat(p); err != nil {
			return nil, nil, fmt.Errorf("--definitions: %w", err)
		}
	}
	compiler, err := expr.NewCompiler(expr.DefaultLimits())
	if err != nil {
		return nil, nil, err
	}
	registry := definitions.NewRegistry(compiler)
	if d.Catalog {
		if err := catalog.Register(registry); err != nil {
			return nil, nil, err
		}
	}
	registry.OnChange(func() { controller.SetDefinitionMetrics(registry, d.IsNative) })
	srcs, err := sources.AddToManager(mgr, registry, d.Paths, d.Poll, d.Cluster, d.Strict)
	return registry, srcs, err
}

// Tracking is a grouper's record of the pods it groups: one Book shared by the findings and the
// workload metrics, so that each pod has one entry.
type Tracking struct {
	Book *podbook.Book
	// Findings counts each pod against its workload's plan (package findings).
	Findings *findings.Tracker
	// Metrics holds the gangmap_workload_* series; nil: none.
	Metrics *workloadmetrics.Tracker
}

// AddTracking builds the Tracking and adds to mgr KAI's Topologies watcher (the findings'
// TopologyNotFound: one informer, read once per change) and rep, the findings Reporter, given
// its Tracker and its Recorder ("gangmap-findings") here. The gangmap_workload_* series (none
// when maxWorkloads is 0) are registered with the registry the manager's metrics endpoint serves
// (workloadmetrics.Registered: the first grouper's when the process builds several); they read
// the PodGroups' conditions through podGroups (nil: none) and find a workload's PodGroups through
// rep.Owners, as the Reporter does (nil: the namespace's).
func AddTracking(mgr manager.Manager, maxWorkloads int, podGroups client.Reader, rep *findings.Reporter) (Tracking, error) {
	book := podbook.New()
	t := Tracking{Book: book, Findings: findings.NewTrackerIn(book)}
	if maxWorkloads > 0 {
		t.Metrics = workloadmetrics.Registered(&workloadmetrics.Tracker{MaxWorkloads: maxWorkloads, Reader: podGroups, Owners: rep.Owners,
			Log: mgr.GetLogger().WithName("workload-metrics"), Pods: book})
	}
	topologies, err := kaitopology.Add(mgr)
	if err != nil {
		return t, err
	}
	t.Findings.Topologies = topologies
	rep.Tracker, rep.Recorder = t.Findings, mgr.GetEventRecorderFor("gangmap-findings")
	return t, mgr.Add(rep)
}

// Forget drops a pod that is deleted or no longer gangmap's from the findings, the metrics and
// the Book.
func (t Tracking) Forget(pod types.NamespacedName) {
	t.Findings.Forget(pod, time.Now())
	if t.Metrics != nil {
		t.Metrics.ForgetPod(pod)
	}
	t.Book.Forget(pod)
}

// ForgetWorkload drops a deleted workload (its pods go as they are deleted).
func (t Tracking) ForgetWorkload(uid types.UID) {
	t.Findings.ForgetOwner(uid)
	if t.Metrics != nil {
		t.Metrics.ForgetWorkload(uid)
	}
	t.Book.UngroupOwner(uid)
}
