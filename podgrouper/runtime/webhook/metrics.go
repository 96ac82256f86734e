package webhook

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	admissions = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
		Name: "gangmap_webhook_admissions_total",
		Help: "Pod creations gangmap's webhook admitted, by result: Mutated, Skipped (not gangmap's or excluded by the selectors), DryRun, Error (admitted unchanged, or held from KAI's pod-grouper with its skip annotation only).",
	}, []string{"result"})
	admissionErrors = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
		Name: "gangmap_webhook_errors_total",
		Help: "Pod creations gangmap's webhook admitted unchanged or held because of an error, by reason (Decode, Namespace, Decide, Encode, Panic: unchanged; PlanBusy, Held: held from KAI's pod-grouper, the decision failed for a kind gangmap groups).",
	}, []string{"reason"})
)

// The result counters, resolved once (an admission increments one without a label lookup).
var (
	admittedMutated = admissions.WithLabelValues(ResultMutated)
	admittedSkipped = admissions.WithLabelValues(ResultSkipped)
	admittedDryRun  = admissions.WithLabelValues(ResultDryRun)
	admittedError   = admissions.WithLabelValues(ResultError)
)
