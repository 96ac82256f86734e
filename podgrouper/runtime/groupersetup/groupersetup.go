// Package groupersetup builds, on a controller-runtime manager, what gangmap's two groupers set
// up the same way: the standalone grouper (cmd/gangmap-grouper/app) and gangmap inside KAI's
// pod-grouper (podgrouper/runtime/inkai). That is the definition registry with its metrics and
// sources (Definitions), and the controller.Observer of the pods they group, with KAI's Topology
// watcher and the findings reporter (AddObserver).
package groupersetup

import (
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
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

// AddObserver builds the controller.Observer of a grouper's pods (one Book shared by the findings
// and the workload metrics, so that each pod has one entry; the Planner is the caller's) and adds
// to mgr KAI's Topologies watcher (the findings' TopologyNotFound: one informer, read once per
// change) and rep, the findings Reporter, given its Tracker and its Recorder ("gangmap-findings")
// here. The gangmap_workload_* series (none when maxWorkloads is 0) are registered with the
// registry the manager's metrics endpoint serves (workloadmetrics.Registered: the first grouper's
// when the process builds several); they read the PodGroups' conditions through podGroups (nil:
// none) and find a workload's PodGroups through rep.Owners, as the Reporter does (nil: the
// namespace's).
func AddObserver(mgr manager.Manager, maxWorkloads int, podGroups client.Reader, rep *findings.Reporter) (controller.Observer, error) {
	book := podbook.New()
	o := controller.Observer{Book: book, Findings: findings.NewTrackerIn(book)}
	if maxWorkloads > 0 {
		o.Metrics = workloadmetrics.Registered(&workloadmetrics.Tracker{MaxWorkloads: maxWorkloads, Reader: podGroups, Owners: rep.Owners,
			Log: mgr.GetLogger().WithName("workload-metrics"), Pods: book})
	}
	topologies, err := kaitopology.Add(mgr)
	if err != nil {
		return o, err
	}
	o.Findings.Topologies = topologies
	rep.Tracker, rep.Recorder = o.Findings, mgr.GetEventRecorderFor("gangmap-findings")
	return o, mgr.Add(rep)
}
