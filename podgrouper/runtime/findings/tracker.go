package findings

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"weak"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/runtime/kaitopology"
	"github.com/gangmap/gangmap/podgrouper/runtime/podbook"
)

// Definition names the definition that planned a workload, for metrics and Events.
type Definition struct {
	// Name is the definition's name (the Karta's name).
	Name string
	// KartaUID is the cluster Karta's UID ("" for files and the catalog: no object to report on).
	KartaUID types.UID
}

// Observation is what the pod controller saw of one pod of a workload gangmap groups (the
// record the Tracker keeps of it in the podbook.Book).
type Observation = podbook.Finding

// Tracker keeps, per top owner, the plan's desired and required pods per role and counters of
// the pods seen. Every method is safe for concurrent use and costs a map lookup and a few
// counter updates under one mutex; nothing is listed or read from the API. Each pod's last
// observation is kept in a podbook.Book (the grouper's one record per pod).
type Tracker struct {
	mu        sync.Mutex
	workloads map[types.UID]*workload
	pods      *podbook.Book
	// epoch is the origin of the roles' clocks, kept as durations since it (8 bytes where a
	// time.Time is 24; the durations are monotonic when the times are, as time.Now's).
	epoch time.Time

	// Topologies, when set (before the first evaluation), are the cluster's KAI Topologies the
	// plans' constraints are checked against (TopologyNotFound); without it they are not checked.
	Topologies kaitopology.Lookup
}

// workload is one top owner's plan and counters, the UID being the map's key.
type workload struct {
	// apiVersion, kind, namespace and name are the plan's gang.WorkloadRef but the UID.
	apiVersion, kind, namespace, name string
	definition                        Definition
	// plan identifies the plan last set, without keeping it alive: the plan cache bounds the
	// plans it keeps (and lets an old one go), the findings must not hold every workload's plan.
	// planned says one was set.
	plan weak.Pointer[gang.Plan]
	// podGroups are the plan's PodGroup names.
	podGroups []string
	roles     roleSet
	// pods counts the observed pods; a workload without a plan is dropped with its last pod.
	pods    int32
	planned bool
	// admissionDue says the pods or plan changed since the last admission check (admission.go).
	admissionDue bool
	// rare is what few workloads have (unclaimed pods, missed paths).
	rare rareState
}

// rareState is the part of a workload's state that most workloads never have.
type rareState struct {
	misses    []string
	unclaimed int64
	// outside counts the pods outside the plan (Observation.OutsidePlan); outsidePod names one.
	outside    int64
	outsidePod string
	// unclaimedPod names one unclaimed pod, for the message; unclaimedLabels are its labels and
	// selectors what the definition's selectors want (NoteUnclaimed), both bounded.
	unclaimedPod, unclaimedLabels, selectors string
	// topology is what the plan asks of KAI's topology (nil when nothing).
	topology *topologyState
	// blocked is the admission model's verdict of a PodGroup KAI cannot admit (admission.go).
	blocked *blockedState
}

// roleState is one role's plan and pods (64 bytes).
type roleState struct {
	name              string
	desired, required int64
	live, created     int32
	// overSince is when live first exceeded desired (valid while over), shortSince when created
	// last changed while below required (valid while short), as durations since the epoch.
	overSince, shortSince time.Duration
	planned, over, short  bool
}

// NewTrackerIn returns an empty Tracker that keeps each pod's observation in pods (the Book the
// pod controller shares with the workload metrics).
func NewTrackerIn(pods *podbook.Book) *Tracker {
	return &Tracker{workloads: map[types.UID]*workload{}, pods: pods, epoch: time.Now()}
}

// since is the time as a duration since the epoch.
func (t *Tracker) since(now time.Time) time.Duration { return now.Sub(t.epoch) }

// SetPlan records the workload's current plan (a no-op when it is the same plan). Roles keep
// their counters; a role's desired and required counts follow the new plan, and its timers
// restart when its state changes: its GangUnsatisfiable clock when the plan changes the pods it
// requires, not when an equal plan is built again.
func (t *Tracker) SetPlan(plan *gang.Plan, def Definition, now time.Time) {
	if plan == nil {
		return
	}
	uid := types.UID(plan.Workload.UID)
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.workloads[uid]
	if w == nil {
		w = &workload{}
		t.workloads[uid] = w
	}
	wp := weak.Make(plan)
	if w.planned && w.plan == wp {
		return
	}
	w.plan, w.planned, w.admissionDue = wp, true, true
	ref := plan.Workload
	w.apiVersion, w.kind, w.namespace, w.name = ref.APIVersion, ref.Kind, ref.Namespace, ref.Name
	w.definition = def
	w.podGroups = w.podGroups[:0]
	for _, pg := range plan.PodGroups {
		w.podGroups = append(w.podGroups, pg.Name)
	}
	w.setTopology(plan)
	w.rare.misses = w.rare.misses[:0]
	for _, m := range plan.Misses {
		w.rare.misses = append(w.rare.misses, m.Path)
	}
	// A role's GangUnsatisfiable clock restarts only when the plan changes what it requires: the
	// same plan built again (its cached copy was evicted, grouper --plan-cache-size) is not news.
	prev := make([]int64, len(w.roles.list)) // required, -1 when not planned
	at := t.since(now)
	for i := range w.roles.list {
		rs := &w.roles.list[i]
		prev[i] = -1
		if rs.planned {
			prev[i] = rs.required
		}
		rs.desired, rs.required, rs.planned = 0, 0, false
	}
	for _, pg := range plan.PodGroups {
		for _, m := range pg.Members() {
			rs := w.role(m.Role.Name)
			rs.planned = true
			rs.desired += m.Pods
			rs.required += m.GangPods
		}
	}
	i := 0 // filter calls keep once per role, in order; roles added above come after prev's
	w.roles.filter(func(rs *roleState) bool {
		changed := i >= len(prev) || !rs.planned || prev[i] != rs.required
		i++
		if !rs.planned && rs.live == 0 && rs.created == 0 {
			return false
		}
		rs.update(at, changed)
		return true
	})
}

// role returns the workload's role, added when it has none of that name.
func (w *workload) role(name string) *roleState {
	if rs := w.roles.get(name); rs != nil {
		return rs
	}
	return w.roles.add(name)
}

// update restarts or stops the role's timers after a change at time at (since the epoch);
// createdChanged says a pod of the role came or went (a pod being created restarts the
// GangUnsatisfiable clock).
func (rs *roleState) update(at time.Duration, createdChanged bool) {
	switch {
	case rs.planned && int64(rs.live) > rs.desired:
		if !rs.over {
			rs.over, rs.overSince = true, at
		}
	default:
		rs.over, rs.overSince = false, 0
	}
	switch {
	case rs.planned && int64(rs.created) < rs.required:
		if !rs.short || createdChanged {
			rs.short, rs.shortSince = true, at
		}
	default:
		rs.short, rs.shortSince = false, 0
	}
}

// Observe records the pod's current observation, replacing the previous one (so repeated
// reconciles of one pod count it once). The workload's plan must have been set first with
// SetPlan; an observation of an unknown workload is still counted.
func (t *Tracker) Observe(pod types.NamespacedName, o Observation, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.pods.SwapFinding(pod, &o); ok {
		if old == o {
			return
		}
		t.countLocked(pod, old, -1, now)
	}
	t.countLocked(pod, o, 1, now)
}

// maxLabelsText bounds the labels text NoteUnclaimed keeps, in bytes.
const maxLabelsText = 400

// NoteUnclaimed keeps, for the workload's UnclaimedPods and GangNotAdmittable messages, the
// labels of an unclaimed pod (the first one noted while none is kept, or the pod already named)
// and what the definition's selectors want (selectors is called only then: SelectorsOf). Call it
// after Observe of an unclaimed pod.
func (t *Tracker) NoteUnclaimed(owner types.UID, pod string, labels map[string]string, selectors func() string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.workloads[owner]
	if w == nil || w.rare.unclaimed == 0 {
		return
	}
	r := &w.rare
	if r.unclaimedLabels != "" && r.unclaimedPod != pod {
		return
	}
	r.unclaimedPod = pod
	parts := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, k+"="+labels[k])
	}
	r.unclaimedLabels = "{" + strings.Join(parts, ", ") + "}"
	if len(r.unclaimedLabels) > maxLabelsText {
		r.unclaimedLabels = r.unclaimedLabels[:maxLabelsText] + "...}"
	}
	if selectors != nil {
		r.selectors = selectors()
	}
}

// Forget drops the pod (deleted, being deleted, or no longer gangmap's).
func (t *Tracker) Forget(pod types.NamespacedName, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.pods.SwapFinding(pod, nil); ok {
		t.countLocked(pod, old, -1, now)
	}
}

// countLocked adds (d 1) or takes off (d -1) the pod's observation o on its workload's counters
// (the Book holds it, or no longer does); a workload without a plan goes with its last pod.
func (t *Tracker) countLocked(pod types.NamespacedName, o Observation, d int32, now time.Time) {
	w := t.workloads[o.Owner]
	if w == nil {
		if d < 0 {
			return
		}
		w = &workload{}
		t.workloads[o.Owner] = w
	}
	if w.pods += d; w.pods == 0 && !w.planned {
		delete(t.workloads, o.Owner)
		return
	}
	w.admissionDue = true
	switch r := &w.rare; {
	case o.Unclaimed && d > 0:
		r.unclaimed++
		if r.unclaimedPod == "" {
			r.unclaimedPod = pod.Name
		}
	case o.Unclaimed && r.unclaimed > 0:
		r.unclaimed--
		if r.unclaimedPod == pod.Name {
			r.unclaimedPod, r.unclaimedLabels = "", ""
		}
		if r.unclaimed == 0 {
			r.selectors = ""
		}
	case o.Unclaimed:
	case o.OutsidePlan && d > 0:
		r.outside++
		if r.outsidePod == "" {
			r.outsidePod = pod.Name
		}
	case o.OutsidePlan:
		r.outside = max(r.outside-1, 0)
		if r.outsidePod == pod.Name || r.outside == 0 {
			r.outsidePod = ""
		}
	case o.Role != "":
		rs := w.roles.get(o.Role)
		if rs == nil && d > 0 {
			rs = w.roles.add(o.Role)
		}
		if rs != nil {
			rs.created += d
			if !o.Terminal {
				rs.live += d
			}
			rs.update(t.since(now), true)
		}
	}
}

// ForgetOwner drops a deleted workload. Its pods' observations go as the pods are deleted.
func (t *Tracker) ForgetOwner(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.workloads, uid)
}

// Report is the findings of one workload at one time.
type Report struct {
	Workload   gang.WorkloadRef
	Definition Definition
	// PodGroups are the names of the workload's planned PodGroups (in its namespace).
	PodGroups []string
	Findings  []Finding
}

// Evaluate returns the findings, at time now, of every workload whose plan is known and that
// has findings or for which report (nil: every workload; called under the Tracker's lock: it
// must not call the Tracker) returns true: the Reporter asks for the workloads it reported on
// before (bench/README.md, "Session 7: the findings' and workload metrics' state").
func (t *Tracker) Evaluate(now time.Time, cfg Config, report func(types.UID) bool) []Report {
	cfg = cfg.WithDefaults()
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Report
	at := t.since(now)
	for uid, w := range t.workloads {
		if !w.planned {
			continue
		}
		fs := w.findings(at, cfg, t.Topologies)
		if len(fs) == 0 && report != nil && !report(uid) {
			continue
		}
		r := Report{Workload: gang.WorkloadRef{APIVersion: w.apiVersion, Kind: w.kind, Namespace: w.namespace, Name: w.name, UID: string(uid)},
			Definition: w.definition, Findings: fs}
		r.PodGroups = append(r.PodGroups, w.podGroups...)
		out = append(out, r)
	}
	return out
}

// findings evaluates one workload at time at (since the tracker's epoch); see the package doc
// for the rules.
func (w *workload) findings(at time.Duration, cfg Config, topologies kaitopology.Lookup) []Finding {
	var fs []Finding
	rare := &w.rare
	if f, ok := rare.unclaimedFinding(); ok {
		fs = append(fs, f)
	}
	othersCreated := int64(0)
	for i := range w.roles.list {
		othersCreated += int64(w.roles.list[i].created)
	}
	for i := range w.roles.list {
		rs := &w.roles.list[i]
		name := rs.name
		if rs.over && at-rs.overSince >= cfg.MoreThanPlannedGrace {
			fs = append(fs, Finding{Reason: MoreThanPlanned, Role: name, Counts: fmt.Sprint(rs.live, "/", rs.desired), Message: fmt.Sprintf(
				"%d live pods for %s, the plan counts %d: the definition undercounts the role (the operator runs more pods per replica than podsPerReplicaPath says, or the role's selector takes other pods), so the gang may admit part of the job",
				rs.live, (at - rs.overSince).Round(time.Second), rs.desired)})
		}
		if rs.short && rare.unclaimed > 0 && othersCreated-int64(rs.created) > 0 {
			fs = append(fs, Finding{Reason: GangNotAdmittable, Role: name, Counts: fmt.Sprint(rs.required, "/", rs.created, "/", rare.unclaimed), Message: fmt.Sprintf(
				"KAI cannot admit the gang: sub-group %s requires %d pods, %d are placed in it, while %d pod(s) of the workload match no component%s; the role's selector likely misses its pods: fix it, and the waiting pods join their sub-group",
				name, rs.required, rs.created, rare.unclaimed, rare.unclaimedExample())})
			continue
		}
		if rs.short && at-rs.shortSince >= cfg.GangUnsatisfiableGrace && othersCreated-int64(rs.created) > 0 {
			fs = append(fs, Finding{Reason: GangUnsatisfiable, Role: name, Counts: fmt.Sprint(rs.required, "/", rs.created), Message: fmt.Sprintf(
				"the gang requires %d pods of the role, %d exist and none came for %s while other roles' pods exist: the operator does not create these pods (yet); check the role's replicasPath and minReplicasPath, or put the roles that start first in gangmap.gang.startup",
				rs.required, rs.created, (at - rs.shortSince).Round(time.Second))})
		}
	}
	if f := rare.blockedFinding(at, cfg, fs); f != nil {
		fs = append(fs, *f)
	}
	if len(rare.misses) > 0 {
		misses := strings.Join(slices.Sorted(slices.Values(rare.misses)), ", ")
		fs = append(fs, Finding{Reason: Drift, Counts: misses, Message: fmt.Sprintf(
			"definition paths resolved to nothing on the workload: %s; the framework may have renamed the field, or the definition has a typo (check with gangmap validate --crd)", misses)})
	}
	fs = append(fs, rare.topology.findings(topologies)...)
	sortFindings(fs)
	return fs
}

// unclaimedFinding is the UnclaimedPods finding of the workload's pods in no role of the plan:
// those no component's podSelector matches, and those of an instance or replica the plan does
// not count (README: both wait in the gang's PodGroup in no sub-group and are reported at once).
func (r *rareState) unclaimedFinding() (Finding, bool) {
	var parts []string
	if r.unclaimed > 0 {
		parts = append(parts, fmt.Sprintf(
			"%d pod(s) of the workload match no component's podSelector%s: they wait in the gang's PodGroup in no sub-group, unscheduled (a flat gang counts them), never bound outside the gang; fix the components' podSelector.componentTypeSelector so that every pod the operator creates matches one", r.unclaimed, r.unclaimedExample()))
	}
	if r.outside > 0 {
		ex := ""
		if r.outsidePod != "" {
			ex = " (e.g. pod " + r.outsidePod + ")"
		}
		parts = append(parts, fmt.Sprintf(
			"%d pod(s) of the workload are in an instance or replica the gang plan does not count%s: they wait in the gang's PodGroup in no sub-group, unscheduled (a flat gang counts them), never bound outside the gang; check the definition's instanceIdPath, replicasPath and pod templates against the workload (Event %s on each pod names its instance)", r.outside, ex, ReasonPodOutsidePlan))
	}
	if len(parts) == 0 {
		return Finding{}, false
	}
	return Finding{Reason: UnclaimedPods, Counts: strconv.FormatInt(r.unclaimed+r.outside, 10), Message: strings.Join(parts, "; also ")}, true
}

// unclaimedExample names an unclaimed pod with its labels and what the selectors want, for the
// messages: " (e.g. pod x with labels {...}); the selectors want ...", or less when not known.
func (r *rareState) unclaimedExample() string {
	ex := ""
	if r.unclaimedPod != "" {
		ex = " (e.g. pod " + r.unclaimedPod
		if r.unclaimedLabels != "" {
			ex += " with labels " + r.unclaimedLabels
		}
		ex += ")"
	}
	if r.selectors != "" {
		ex += "; the selectors want " + r.selectors
	}
	return ex
}
