package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/definitions"
)

// Metrics are the grouper's Prometheus metrics, registered once with controller-runtime's
// registry (served on the manager's metrics endpoint).
var (
	podsGrouped = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
		Name: "gangmap_pods_grouped_total",
		Help: "Pods gangmap assigned to a PodGroup (annotation and sub-group label written, or would be in dry-run), by top-owner kind.",
	}, []string{"kind", "dry_run"})
	podGroupWrites = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
		Name: "gangmap_podgroup_writes_total",
		Help: "PodGroup applies by result: Created, Updated, Unchanged (no write), Deferred (labels and annotations alone differ, updated less than 5 s ago: applied again then), DryRun.",
	}, []string{"result"})
	groupingErrors = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
		Name: "gangmap_grouping_errors_total",
		Help: "Pods gangmap failed to group, by reason.",
	}, []string{"reason"})
	decisionSeconds = promauto.With(metrics.Registry).NewHistogram(prometheus.HistogramOpts{
		Name:    "gangmap_decision_duration_seconds",
		Help:    "Time to decide a pod's PodGroup (owner walk, plan from cache or built, placement), before any write.",
		Buckets: prometheus.ExponentialBuckets(0.00001, 4, 10),
	})
	repairs = promauto.With(metrics.Registry).NewCounter(prometheus.CounterOpts{
		Name: "gangmap_pods_repaired_total",
		Help: "Pods the controller labelled after creation because gangmap's admission webhook had not (down, or its selectors exclude the pod).",
	})
	podsHeld = promauto.With(metrics.Registry).NewCounter(prometheus.CounterOpts{
		Name: "gangmap_pods_held_total",
		Help: "Pods the controller gave KAI's skip annotation without a PodGroup because their decision failed after a definition claimed their workload (the plan failed, the owner could not be read) or their PodGroup could not be written: held from KAI's pod-grouper until a retry groups them.",
	})
	podsReleased = promauto.With(metrics.Registry).NewCounter(prometheus.CounterOpts{
		Name: "gangmap_pods_released_total",
		Help: "Held pods (gangmap.io/held, no PodGroup) the controller handed back to KAI's pod-grouper because their kind is no longer gangmap's (its definitions removed).",
	})
	yielded = promauto.With(metrics.Registry).NewCounter(prometheus.CounterOpts{
		Name: "gangmap_pods_yielded_total",
		Help: "Pods gangmap left in the PodGroup KAI's pod-grouper gave them, because the KAI release (before v0.15) does not honour kai.scheduler/skip-podgrouper (no tug-of-war).",
	})
	rbacMissing = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
		Name: "gangmap_rbac_missing_total",
		Help: "Times gangmap found it may not get, list or watch a kind it groups (pods of the kind are then not grouped), by group/kind.",
	}, []string{"kind"})
	workloadWatches = promauto.With(metrics.Registry).NewGauge(prometheus.GaugeOpts{
		Name: "gangmap_workload_watches",
		Help: "Workload kinds gangmap watches to regroup pods when a workload changes.",
	})
	// DefinitionsLoaded is set by the definitions loaders: definitions by source and state.
	DefinitionsLoaded = promauto.With(metrics.Registry).NewGaugeVec(prometheus.GaugeOpts{
		Name: "gangmap_definitions",
		Help: "Workload Map definitions loaded, by source (cluster, file, catalog) and state (active, shadowed, invalid, native).",
	}, []string{"source", "state"})
	// DefinitionProblems counts definition problems by reason (Invalid, Conflict, LostFields, UnknownField).
	DefinitionProblems = promauto.With(metrics.Registry).NewGaugeVec(prometheus.GaugeOpts{
		Name: "gangmap_definition_problems",
		Help: "Current problems with the loaded definitions, by reason.",
	}, []string{"reason"})
)

// SetDefinitionMetrics sets DefinitionsLoaded (per source: active, shadowed by another source,
// invalid, or native: for a kind isNative says KAI groups with a plugin of its own) and
// DefinitionProblems (per reason) from the registry's current entries. The standalone grouper
// passes its native table's Has, gangmap inside KAI's pod-grouper KAI's own table.
func SetDefinitionMetrics(r *definitions.Registry, isNative func(schema.GroupVersionKind) bool) {
	DefinitionsLoaded.Reset()
	for _, e := range r.Entries() {
		state := "shadowed"
		switch {
		case isNative(e.Kind.GVK()):
			state = "native"
		case e.Active:
			state = "active"
		case len(e.Problems) > 0:
			state = "invalid"
		}
		DefinitionsLoaded.WithLabelValues(string(e.Source), state).Inc()
	}
	DefinitionProblems.Reset()
	for _, p := range r.Problems() {
		DefinitionProblems.WithLabelValues(p.Reason).Inc()
	}
}
