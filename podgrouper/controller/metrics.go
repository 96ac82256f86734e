package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics are the grouper's Prometheus metrics, registered once with controller-runtime's
// registry (served on the manager's metrics endpoint).
var (
	podsGrouped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gangmap_pods_grouped_total",
		Help: "Pods gangmap assigned to a PodGroup (annotation and sub-group label written, or would be in dry-run), by top-owner kind.",
	}, []string{"kind", "dry_run"})
	podGroupWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gangmap_podgroup_writes_total",
		Help: "PodGroup applies by result: Created, Updated, Unchanged (no write), DryRun.",
	}, []string{"result"})
	groupingErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gangmap_grouping_errors_total",
		Help: "Pods gangmap failed to group, by reason.",
	}, []string{"reason"})
	decisionSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "gangmap_decision_duration_seconds",
		Help:    "Time to decide a pod's PodGroup (owner walk, plan from cache or built, placement), before any write.",
		Buckets: prometheus.ExponentialBuckets(0.00001, 4, 10),
	})
	// DefinitionsLoaded is set by the definitions loaders: definitions by source and state.
	DefinitionsLoaded = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gangmap_definitions",
		Help: "Workload Map definitions loaded, by source (cluster, file, catalog) and state (active, shadowed, invalid, native).",
	}, []string{"source", "state"})
	// DefinitionProblems counts definition problems by reason (Invalid, Conflict, LostFields, UnknownField).
	DefinitionProblems = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gangmap_definition_problems",
		Help: "Current problems with the loaded definitions, by reason.",
	}, []string{"reason"})
)

func init() {
	metrics.Registry.MustRegister(podsGrouped, podGroupWrites, groupingErrors, decisionSeconds, DefinitionsLoaded, DefinitionProblems)
}
