package findings

import (
	"encoding/json"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// HealthAnnotation is the condition-like annotation gangmap keeps on the PodGroups it writes:
// a Health as JSON. It is written when a workload's findings change (not per pod), and absent
// on a PodGroup whose workload never had a finding.
const HealthAnnotation = "gangmap.io/health"

// MaxHealthFindings bounds the findings one workload's HealthAnnotation lists, and the Warning
// Events the Reporter sends for one workload at one evaluation (the rest are counted, and said in
// one Event). A workload's roles are its author's data (a JobSet of 900 replicated jobs whose
// operator created the pod of one: 899 GangUnsatisfiable findings, 286 KB of JSON): unbounded,
// the annotation passed the API server's 256 KiB limit for a PodGroup's annotations, its update
// was refused at every evaluation (two seconds), each time a request against the grouper's
// client rate limit shared with every other workload's grouping, and the workload got thousands
// of Events per ResendInterval.
const MaxHealthFindings = 16

// Health is the value of HealthAnnotation.
type Health struct {
	// Healthy is true when the workload has no finding.
	Healthy bool `json:"healthy"`
	// Findings are the current findings, in Reasons order: the first MaxHealthFindings of them.
	Findings []Finding `json:"findings,omitempty"`
	// Omitted counts the current findings past the first MaxHealthFindings, not listed.
	Omitted int `json:"omitted,omitempty"`
	// LastTransitionTime is when the findings last changed (RFC 3339).
	LastTransitionTime string `json:"lastTransitionTime"`
}

// ParseHealth reads a HealthAnnotation value. Errors say the value is not a Health.
func ParseHealth(v string) (*Health, error) {
	h := &Health{}
	if err := json.Unmarshal([]byte(v), h); err != nil {
		return nil, fmt.Errorf("annotation %s: expected gangmap's health JSON: %w", HealthAnnotation, err)
	}
	return h, nil
}

// Metrics of the findings, registered with controller-runtime's registry.
var (
	// Gauge counts the workloads currently affected, by workload kind, definition and reason.
	Gauge = promauto.With(metrics.Registry).NewGaugeVec(prometheus.GaugeOpts{
		Name: "gangmap_gang_findings",
		Help: "Workloads whose pods currently disagree with their gang plan, by workload kind, definition and reason (UnclaimedPods, GangNotAdmittable, MoreThanPlanned, GangUnsatisfiable, Drift, TopologyUnresolved, TopologyNotFound).",
	}, []string{"kind", "definition", "reason"})
	// Total counts findings raised (a workload entering a finding), by the same labels.
	Total = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
		Name: "gangmap_gang_findings_total",
		Help: "Findings raised (a workload's pods started to disagree with its gang plan), by workload kind, definition and reason.",
	}, []string{"kind", "definition", "reason"})
)
