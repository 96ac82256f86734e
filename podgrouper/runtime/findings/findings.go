// Package findings compares each workload's gang plan with the pods that really exist and says,
// per workload and role, where they disagree. It only reports: a finding never changes a gang.
//
// The Tracker keeps counters per top owner (live and created pods per role, pods placed in no
// role) fed by the pod controller from the pods it already reconciles (its cache; no API call per
// pod), and the plan's desired and required pods per role. Evaluate turns them into Findings:
//
//   - UnclaimedPods: pods of the workload that the definition places in no role (no component's
//     podSelector matches them). They join the workload's gang PodGroup in no sub-group, where
//     KAI does not schedule them (a flat gang counts them). At once, with an example pod's labels
//     next to what the selectors want.
//   - GangNotAdmittable: a role the gang requires has fewer pods than required while other roles'
//     pods exist and pods of the workload match no component: the selector misses the role, no pod can complete the gang,
//     and KAI cannot admit it (the role's sub-group blocks it). At once, with the same labels.
//     Also, from the admission model (admission.go, when the Reporter has WorkloadPods): a written
//     PodGroup the model says KAI cannot admit with the pods that exist (a deadlock among the
//     first minSubGroup sub-groups, a required sub-group whose pods finished, a partial commit),
//     naming the PodGroup and the sub-group that blocks it, after Config.NotAdmittableGrace.
//   - MoreThanPlanned: more live pods in a role than the plan's desired count (replicas × pods
//     per replica) for longer than Config.MoreThanPlannedGrace: the definition undercounts (the
//     operator runs several pods per replica, or a selector takes another role's pods), so the
//     gang may admit part of a job.
//   - GangUnsatisfiable: a role the gang requires (its share of minMember) has had fewer pods
//     than required, with no new pod of it, for longer than Config.GangUnsatisfiableGrace while
//     other roles' pods exist: the definition or its start rule asks for pods the operator does
//     not create (yet), so KAI waits forever.
//   - Drift: definition paths that resolved to nothing on the workload (a renamed field, a
//     typo); at once.
//   - TopologyUnresolved: a kai.scheduler/ topology or segment request the plan cannot honour
//     (gang.Plan.TopologyIssues: no Topology named, no level, no pod index, a bad size); at once.
//   - TopologyNotFound: a constraint the plan writes names a KAI Topology that does not exist or
//     a level it lacks (checked against the Tracker's Topologies, kaitopology); at once.
package findings

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/podgrouper/core/grouper"
)

// ObserveGrouped counts a pod grouped under the top owner against its workload's plan, as the
// grouper saw it (seen.Plan set): the plan, the pod's observation and, when no component claims
// the pod, its labels. The pod controller and gangmap inside KAI's pod-grouper both call it.
func (t *Tracker) ObserveGrouped(key types.NamespacedName, pod *corev1.Pod, owner types.UID, seen grouper.Seen, now time.Time) {
	t.SetPlan(seen.Plan, DefinitionOf(seen.Definition), now)
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	t.Observe(key, Observation{Owner: owner, Role: seen.Role, Unclaimed: seen.Unclaimed, OutsidePlan: seen.NotInPlan != nil, Terminal: terminal}, now)
	if seen.Unclaimed {
		def := seen.Definition
		t.NoteUnclaimed(owner, pod.Name, pod.Labels, func() string { return SelectorsOf(def) })
	}
}

// ReasonPodOutsidePlan is the Warning Event, once per pod and instance, on a pod (and its
// workload) whose instance or replica the workload's gang plan does not count (the pod
// controller's reportOutsidePlan); such pods count in the workload's UnclaimedPods finding.
const ReasonPodOutsidePlan = "GangmapPodOutsidePlan"

// Reason names a kind of finding: the reason label of the metrics and Events.
type Reason string

// The findings; see the package doc for what each means.
const (
	UnclaimedPods     Reason = "UnclaimedPods"
	MoreThanPlanned   Reason = "MoreThanPlanned"
	GangUnsatisfiable Reason = "GangUnsatisfiable"
	GangNotAdmittable Reason = "GangNotAdmittable"
	Drift             Reason = "Drift"
	// TopologyUnresolved: a topology or segment request of the workload the plan cannot honour
	// (gang.TopologyIssue); at once.
	TopologyUnresolved Reason = "TopologyUnresolved"
	// TopologyNotFound: a constraint the plan writes names a KAI Topology that does not exist, or
	// a level the Topology does not have; at once, and cleared when the Topology appears.
	TopologyNotFound Reason = "TopologyNotFound"
)

// Reasons lists every Reason in report order.
var Reasons = []Reason{UnclaimedPods, GangNotAdmittable, MoreThanPlanned, GangUnsatisfiable, Drift, TopologyUnresolved, TopologyNotFound}

// Finding is one disagreement between a workload's plan and its pods.
type Finding struct {
	Reason Reason `json:"reason"`
	// Role is the role (sub-group name in the plan) it concerns, or "" for the workload.
	Role string `json:"role,omitempty"`
	// Message says what was seen and what usually fixes it.
	Message string `json:"message"`
	// Counts is what the finding counted (pods, a role's live and planned pods, the paths that
	// missed), without the times the Message also gives: the Reporter sends a finding again, and
	// rewrites the PodGroup's health annotation, when its Counts change ("2 pod(s)" after
	// "1 pod(s)"), not each time its age does. Not in the annotation.
	Counts string `json:"-"`
}

// String renders "Reason(role): message".
func (f Finding) String() string { return f.name() + ": " + f.Message }

// name renders "Reason(role)", or "Reason" for the workload.
func (f Finding) name() string {
	if f.Role == "" {
		return string(f.Reason)
	}
	return string(f.Reason) + "(" + f.Role + ")"
}

// Config holds the grace periods and thresholds. Zero values mean the defaults.
type Config struct {
	// MoreThanPlannedGrace is how long a role may hold more live pods than planned before it is
	// reported (scaling down and pod replacement pass through such states).
	MoreThanPlannedGrace time.Duration
	// GangUnsatisfiableGrace is how long a required role may lack pods, with no new pod of it,
	// while other roles' pods exist, before it is reported (operators create roles in turn).
	GangUnsatisfiableGrace time.Duration
	// NotAdmittableGrace is how long the admission model must say KAI cannot admit a written
	// PodGroup before it is reported (GangNotAdmittable; the controller writes a PodGroup just
	// after the pod that changes it, so one check may see it a moment old).
	NotAdmittableGrace time.Duration
	// ResendInterval is the least time between two identical Warning Events on one object.
	ResendInterval time.Duration
}

// Defaults for Config; the grouper's flags show them.
const (
	DefaultMoreThanPlannedGrace   = 2 * time.Minute
	DefaultGangUnsatisfiableGrace = 10 * time.Minute
	DefaultNotAdmittableGrace     = 6 * time.Second
	DefaultResendInterval         = 5 * time.Minute
)

// WithDefaults returns c with zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	c.MoreThanPlannedGrace = cmp.Or(max(c.MoreThanPlannedGrace, 0), DefaultMoreThanPlannedGrace)
	c.NotAdmittableGrace = cmp.Or(max(c.NotAdmittableGrace, 0), DefaultNotAdmittableGrace)
	c.GangUnsatisfiableGrace = cmp.Or(max(c.GangUnsatisfiableGrace, 0), DefaultGangUnsatisfiableGrace)
	c.ResendInterval = cmp.Or(max(c.ResendInterval, 0), DefaultResendInterval)
	return c
}

// Summary renders findings as one line, "Reason(role), Reason": the CLI's column.
func Summary(fs []Finding) string {
	if len(fs) == 0 {
		return "None"
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.name()
	}
	return strings.Join(parts, ", ")
}

// sortFindings orders findings by Reasons order, then role.
func sortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(slices.Index(Reasons, a.Reason), slices.Index(Reasons, b.Reason)), strings.Compare(a.Role, b.Role))
	})
}

// DefinitionOf names a compiled definition for the findings (the zero Definition for nil).
func DefinitionOf(c *definitions.Compiled) Definition {
	if c == nil {
		return Definition{}
	}
	d := Definition{Name: c.Name()}
	if c.Loaded != nil && c.Loaded.Source == definitions.SourceCluster {
		d.KartaUID = types.UID(c.Loaded.Karta.Metadata.UID)
	}
	return d
}

// maxSelectorsText bounds Definition.Selectors, in bytes.
const maxSelectorsText = 400

// SelectorsOf says what each pod-bearing component's podSelector wants of a pod, for the
// findings ("replicatedjob: .metadata.labels[\"...\"] names an instance; worker: <keyPath> ==
// \"worker\""), at most maxSelectorsText bytes; "" for nil.
func SelectorsOf(c *definitions.Compiled) string {
	if c == nil {
		return ""
	}
	var parts []string
	for _, comp := range c.Components {
		if comp.Def == nil || comp.Def.PodSelector == nil {
			continue
		}
		ps := comp.Def.PodSelector
		var want []string
		if ts := ps.ComponentTypeSelector; ts != nil {
			if k := cmp.Or(ts.KeyPath.JQ, ts.KeyPath.CEL); k != "" {
				if ts.Value != nil {
					want = append(want, fmt.Sprintf("%s == %q", k, *ts.Value))
				} else {
					want = append(want, k+" is set")
				}
			}
			for _, key := range slices.Sorted(maps.Keys(ts.MatchLabels)) {
				want = append(want, fmt.Sprintf("label %s=%s", key, ts.MatchLabels[key]))
			}
		}
		if is := ps.ComponentInstanceSelector; is != nil {
			want = append(want, cmp.Or(is.IDPath.JQ, is.IDPath.CEL)+" names an instance")
		}
		if len(want) > 0 {
			parts = append(parts, comp.Name+": "+strings.Join(want, " and "))
		}
	}
	out := strings.Join(parts, "; ")
	if len(out) > maxSelectorsText {
		out = out[:maxSelectorsText] + "..."
	}
	return out
}
