// Package inkai wires gangmap's grouper into KAI's own pod-grouper: its options and flags, Setup
// (the hub and grouper of podgrouper/core/kaiplugin built on KAI's controller-runtime manager:
// definition sources as the manager's runnables, the decider on its API reader) and the Observer
// of the findings and workload metrics (informers of KAI's manager cache). It is the runtime half
// of gangmap inside KAI; the decision and its conversion to KAI's shape are kaiplugin's.
package inkai

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/defaultgrouper"
	"github.com/gangmap/gangmap/podgrouper/core/kaiplugin"
	"github.com/gangmap/gangmap/podgrouper/core/workloadmap"
	"github.com/gangmap/gangmap/podgrouper/runtime/controller"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
	"github.com/gangmap/gangmap/podgrouper/runtime/groupersetup"
	"github.com/gangmap/gangmap/podgrouper/runtime/workloadmetrics"
)

// Options are gangmap's options inside KAI's pod-grouper, one flag each (AddFlags says what each
// means): the definition sources, the grouper's bounds, the findings' grace periods (package
// findings), the workload metrics and shadow mode (see kaiplugin.Shadow). KAI's own flags
// (scheduler name, queue and node-pool label keys, QPS, metrics and probe addresses, leader
// election) stay KAI's; Setup takes the three gangmap must agree on from them.
type Options struct {
	DefinitionPaths                                []string
	DefinitionsPoll                                time.Duration
	ClusterDefinitions, Catalog, StrictDefinitions bool
	// Zero PlanCacheSize and Timeout mean workloadmap.DefaultPlanCacheSize and kaiplugin.DefaultTimeout.
	PlanCacheSize      int
	Timeout            time.Duration
	Findings           findings.Config
	MaxWorkloadMetrics int
	Shadow             bool
}

// DefaultOptions are the defaults of AddFlags: the standalone grouper's defaults for the same
// options.
func DefaultOptions() Options {
	return Options{DefinitionsPoll: 10 * time.Second, ClusterDefinitions: true, Catalog: true, StrictDefinitions: true,
		PlanCacheSize: workloadmap.DefaultPlanCacheSize, Timeout: kaiplugin.DefaultTimeout,
		Findings: findings.Config{MoreThanPlannedGrace: findings.DefaultMoreThanPlannedGrace,
			GangUnsatisfiableGrace: findings.DefaultGangUnsatisfiableGrace, ResendInterval: findings.DefaultResendInterval},
		MaxWorkloadMetrics: workloadmetrics.DefaultMaxWorkloads}
}

// AddFlags registers the options on fs, a Go flag set: KAI's pod-grouper parses flag.CommandLine
// (cmd/podgrouper/app NewWithScheme calls flag.Parse), so gangmap's flags go there, before
// app.New. The names are the standalone grouper's (gangmap-grouper --help).
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.Func("definitions", "gangmap: definition files or directories (e.g. a mounted ConfigMap), comma-separated, polled for changes; each must exist at start. (default none: cluster Kartas and the built-in catalog only)", func(s string) error {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				o.DefinitionPaths = append(o.DefinitionPaths, p)
			}
		}
		return nil
	})
	fs.DurationVar(&o.DefinitionsPoll, "definitions-poll", o.DefinitionsPoll, "gangmap: how often definition files are checked for changes; must be positive.")
	fs.BoolVar(&o.ClusterDefinitions, "cluster-definitions", o.ClusterDefinitions, "gangmap: watch Karta (run.ai/v1alpha1) objects in the cluster; they win over files and the built-in catalog. Needs get, list and watch on kartas.")
	fs.BoolVar(&o.Catalog, "catalog", o.Catalog, "gangmap: load the built-in catalog of definitions (lowest precedence; kinds with a native KAI plugin are KAI's whatever it says).")
	fs.BoolVar(&o.StrictDefinitions, "strict-definitions", o.StrictDefinitions, "gangmap: leave out definitions (files and cluster Kartas) with unknown fields, with a Warning Event; false accepts them with a warning.")
	fs.IntVar(&o.PlanCacheSize, "plan-cache-size", o.PlanCacheSize, "gangmap: most gang plans cached, one per workload; at least 1.")
	fs.DurationVar(&o.Timeout, "gangmap-timeout", o.Timeout, "gangmap: longest time one pod's decision may take (plan, placement, re-read of a stale workload); past it KAI retries the pod. Must be positive.")
	fs.DurationVar(&o.Findings.MoreThanPlannedGrace, "findings-more-than-planned-grace", o.Findings.MoreThanPlannedGrace, "gangmap: how long a role may have more live pods than its definition plans before gangmap reports MoreThanPlanned (a Warning Event); must be positive.")
	fs.DurationVar(&o.Findings.GangUnsatisfiableGrace, "findings-gang-unsatisfiable-grace", o.Findings.GangUnsatisfiableGrace, "gangmap: how long a role the gang requires may lack pods, with none being created, while other roles' pods exist, before gangmap reports GangUnsatisfiable; must be positive.")
	fs.DurationVar(&o.Findings.ResendInterval, "findings-event-interval", o.Findings.ResendInterval, "gangmap: least time between two identical findings Warning Events on one workload or Karta; must be positive.")
	fs.IntVar(&o.MaxWorkloadMetrics, "max-workload-metrics", o.MaxWorkloadMetrics, "gangmap: most workloads with gangmap_workload_* series (status, GPUs per role, pods per phase) on KAI's metrics endpoint; 0 turns them off.")
	fs.BoolVar(&o.Shadow, "gangmap-shadow", o.Shadow, "gangmap: shadow mode: every pod is grouped as stock KAI with these flags would group it (KAI's own grouper's PodGroup is written, pods are never held while definitions load); for a kind gangmap would group, gangmap still decides, counts its findings and metrics, and tells on the workload (DryRunPodGroup Event) where its PodGroup would differ. Allows --generic-karta-fallback=true. (default false)")
}

// Validate checks the options; errors name the flag.
func (o *Options) Validate() error {
	var errs []error
	add := func(bad bool, format string, args ...any) {
		if bad {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	add(o.DefinitionsPoll <= 0, "--definitions-poll must be positive, got %s", o.DefinitionsPoll)
	add(o.PlanCacheSize < 1, "--plan-cache-size must be at least 1, got %d", o.PlanCacheSize)
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"gangmap-timeout", o.Timeout}, {"findings-more-than-planned-grace", o.Findings.MoreThanPlannedGrace},
		{"findings-gang-unsatisfiable-grace", o.Findings.GangUnsatisfiableGrace}, {"findings-event-interval", o.Findings.ResendInterval}} {
		add(d.v <= 0, "--%s must be positive, got %s", d.flag, d.v)
	}
	add(o.MaxWorkloadMetrics < 0, "--max-workload-metrics must not be negative, got %d", o.MaxWorkloadMetrics)
	for _, p := range o.DefinitionPaths {
		_, err := os.Stat(p)
		add(err != nil, "--definitions: %w", err)
	}
	return errors.Join(errs...)
}

// KAIConfig is what gangmap takes from KAI's pod-grouper flags, so both write the same PodGroups:
// --scheduler-name, --queue-label-key and --nodepool-label-key.
type KAIConfig struct {
	SchedulerName    string
	QueueLabelKey    string
	NodePoolLabelKey string
	// PodGroups reads KAI's PodGroups as gangmap's copy of the type (the nested module's
	// kaihub.PodGroupClient over KAI's manager client), for the workload metrics' PodGroup
	// conditions; nil: none are read.
	PodGroups client.Reader
}

// Setup builds gangmap's hub and grouper on KAI's manager: the registry with its sources (the
// catalog now; files and cluster Kartas as manager runnables, which Hub waits for), the workload
// grouper on KAI's default metadata (gangmap's copy, with the manager's client for priority
// classes), the decider that re-reads stale workloads and the Observer of the findings and
// workload metrics. native is KAI's plugin table (DefaultPluginsHub). Errors: invalid options, a
// catalog that does not load, clients that cannot be built.
func Setup(mgr manager.Manager, o Options, kai KAIConfig, native kaiplugin.NativePlugins) (*kaiplugin.Hub, *kaiplugin.Grouper, error) {
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	isNative := func(gvk schema.GroupVersionKind) bool {
		return native != nil && native.HasMatchingPlugin(metav1.GroupVersionKind(gvk))
	}
	registry, srcs, err := groupersetup.Definitions{Paths: o.DefinitionPaths, Poll: o.DefinitionsPoll, Cluster: o.ClusterDefinitions,
		Strict: o.StrictDefinitions, Catalog: o.Catalog, IsNative: isNative}.Add(mgr)
	if err != nil {
		return nil, nil, err
	}
	controller.SetDefinitionMetrics(registry, isNative)
	hub := &kaiplugin.Hub{Native: native, Registry: registry}
	for _, s := range srcs {
		hub.Sources = append(hub.Sources, s)
	}
	defaults := &defaultgrouper.Grouper{Reader: mgr.GetClient(), QueueLabelKey: kai.QueueLabelKey, NodePoolLabelKey: kai.NodePoolLabelKey}
	wm := &workloadmap.Grouper{Registry: registry, Defaults: defaults, Recorder: mgr.GetEventRecorderFor("gangmap-definitions"),
		PlanCacheSize: o.PlanCacheSize, KAIPlugin: true}
	g := &kaiplugin.Grouper{
		Decider: &decide.Decider{APIReader: mgr.GetAPIReader(), SchedulerName: kai.SchedulerName},
		Grouper: wm, Timeout: o.Timeout, Log: mgr.GetLogger().WithName("gangmap"),
	}
	if o.Shadow {
		g.Shadow = &kaiplugin.Shadow{Recorder: mgr.GetEventRecorderFor("gangmap")}
	}
	// The findings Reporter writes no gangmap.io/health annotation inside KAI (no Client): KAI's
	// pod-grouper is the PodGroups' only writer (its handler ApplyToCluster), and gangmap's copy of
	// the PodGroup type is not in KAI's scheme; the findings are Warning Events on the workload and
	// its Karta and the gangmap_gang_findings metrics. The workload metrics read the PodGroups'
	// conditions through kai.PodGroups. KAI's Topologies need get, list and watch on
	// topologies.kai.scheduler (deploy/kai-podgrouper/rbac.yaml).
	co, err := groupersetup.AddObserver(mgr, o.MaxWorkloadMetrics, kai.PodGroups, &findings.Reporter{Config: o.Findings, DryRun: o.Shadow})
	if err != nil {
		return nil, nil, err
	}
	co.Planner = wm
	obs := &Observer{Observer: co, Informers: mgr.GetCache(), Log: mgr.GetLogger().WithName("gangmap-observer")}
	g.Observer = obs
	return hub, g, mgr.Add(obs)
}
