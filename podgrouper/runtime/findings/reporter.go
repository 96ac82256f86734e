package findings

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kairelease"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// Event reasons of the findings: a Warning per finding (its Reason), and a Normal one when a
// finding clears.
const ReasonCleared = "GangFindingCleared"

// ReasonMoreFindings is the Warning Event that counts a workload's findings past the first
// MaxHealthFindings of one evaluation, which get no Event of their own.
const ReasonMoreFindings = "GangFindingsMore"

// Reporter turns the Tracker's findings into Events, metrics and the HealthAnnotation. It runs
// as a manager Runnable (on the leader only), evaluating every Interval; what it reports changes
// only when a finding appears, clears, or changes what it counts (Finding.Counts: "2 pod(s)"
// after "1 pod(s)"; not its age), or (for Events) ResendInterval has passed.
type Reporter struct {
	Tracker *Tracker
	Config  Config
	// Client patches the HealthAnnotation on PodGroups; unused in dry-run.
	Client client.Client
	// Owners, when set, gives a workload's own PodGroups by its UID (strays.OwnerIndex), so that
	// the names a planned name with a key placeholder stands for are found among them, not among
	// every PodGroup of the namespace (podgroup.ActualNames).
	Owners   podgroup.OwnerLister
	Recorder record.EventRecorder
	// DryRun reports through Events and metrics only, and writes no annotation.
	DryRun bool
	// Interval is how often findings are evaluated (default 2s).
	Interval time.Duration
	// Now returns the time (time.Now when nil; tests set it).
	Now func() time.Time
	// Pods, when set, gives a workload's pods to the admission model: each tick the written
	// PodGroups of the workloads due are run through it (checkAdmission, admission.go); nil
	// turns the check off. Release is the KAI release the model follows (nil: the latest).
	Pods    WorkloadPods
	Release *kairelease.Release

	state map[types.UID]*reported
}

var _ manager.Runnable = (*Reporter)(nil)

// reported is what was last reported for one workload.
type reported struct {
	kind, definition string
	// sent is when each current finding was last sent, and its Counts then (nil until the
	// workload's first finding).
	sent map[findingKey]sentFinding
	// dirty says the annotation must be written (again: a PodGroup may not exist yet).
	dirty      bool
	transition time.Time
}

type findingKey struct {
	reason Reason
	role   string
}

// sentFinding is when a finding was last sent and what it counted (Finding.Counts).
type sentFinding struct {
	at     time.Time
	counts string
}

// clearedText says why a finding of reason cleared, for its GangFindingCleared Event.
func clearedText(reason Reason) string {
	return cmp.Or(map[Reason]string{
		TopologyUnresolved: "the plan now honours the workload's topology and segment requests",
		TopologyNotFound:   "the KAI Topology and the levels the constraints name now exist",
	}[reason], "the pods now agree with the gang plan")
}

// Start implements manager.Runnable: Tick at once and then every Interval until ctx ends.
func (r *Reporter) Start(ctx context.Context) error {
	wait.NonSlidingUntilWithContext(ctx, r.Tick, cmp.Or(r.Interval, 2*time.Second))
	return nil
}

// Tick evaluates once and reports what changed.
func (r *Reporter) Tick(ctx context.Context) {
	if r.state == nil {
		r.state = map[types.UID]*reported{}
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	cfg := r.Config.WithDefaults()
	now := r.Now()
	r.checkAdmission(ctx, now)
	seen := map[types.UID]bool{}
	// The workloads without findings matter only if they had some: what was sent is cleared.
	reportedOn := func(uid types.UID) bool { _, ok := r.state[uid]; return ok }
	for _, rep := range r.Tracker.Evaluate(now, cfg, reportedOn) {
		uid := types.UID(rep.Workload.UID)
		st := r.state[uid]
		if st == nil {
			if len(rep.Findings) == 0 {
				// Nothing to send and nothing sent to clear: a healthy workload keeps no state.
				continue
			}
			st = &reported{kind: rep.Workload.Kind, definition: rep.Definition.Name}
			r.state[uid] = st
		}
		seen[uid] = true
		r.report(ctx, rep, st, now, cfg)
		if len(st.sent) == 0 && (!st.dirty || r.DryRun || r.Client == nil) {
			// Every finding cleared and the annotation says so (or none is written): the state
			// is that of a healthy workload.
			delete(r.state, uid)
		}
	}
	for uid, st := range r.state {
		if !seen[uid] {
			moveGauge(st, reasonsOf(st.sent), nil)
			delete(r.state, uid)
		}
	}
}

// reasonsOf is the set of reasons among a workload's sent findings (at most every Reason).
func reasonsOf(sent map[findingKey]sentFinding) map[Reason]bool {
	out := make(map[Reason]bool, len(Reasons))
	for k := range sent {
		out[k.reason] = true
	}
	return out
}

// moveGauge counts the workload in Gauge under each reason it has now and had not (before),
// and takes it off each reason it had and has no more: Gauge counts workloads, so a workload
// with 900 roles short of pods is one GangUnsatisfiable workload, not 900.
func moveGauge(st *reported, before, now map[Reason]bool) {
	for reason := range now {
		if !before[reason] {
			Gauge.WithLabelValues(st.kind, st.definition, string(reason)).Inc()
		}
	}
	for reason := range before {
		if !now[reason] {
			Gauge.WithLabelValues(st.kind, st.definition, string(reason)).Dec()
		}
	}
}

// report emits the Events and metrics of one workload's findings and writes its annotation. At
// most MaxHealthFindings Events of findings (and as many of cleared ones) go out per call; the
// findings past them are recorded as sent and said in one summary Event (see MaxHealthFindings).
func (r *Reporter) report(ctx context.Context, rep Report, st *reported, now time.Time, cfg Config) {
	var sent, cleared int
	before := reasonsOf(st.sent)
	defer func() { moveGauge(st, before, reasonsOf(st.sent)) }()
	cur := make(map[findingKey]bool, len(rep.Findings))
	for _, f := range rep.Findings {
		k := findingKey{f.Reason, f.Role}
		cur[k] = true
		switch last, had := st.sent[k]; {
		case !had:
			Total.WithLabelValues(st.kind, st.definition, string(f.Reason)).Inc()
			st.dirty, st.transition = true, now
		case last.counts != f.Counts:
			// The annotation says what the finding counts now (the transition time stays).
			st.dirty = true
		case now.Sub(last.at) < cfg.ResendInterval:
			continue
		}
		if st.sent == nil {
			// Made with the first finding: most workloads never have one.
			st.sent = map[findingKey]sentFinding{}
		}
		st.sent[k] = sentFinding{at: now, counts: f.Counts}
		if sent++; sent <= MaxHealthFindings {
			msg := withRole(f)
			r.events(rep, corev1.EventTypeWarning, string(f.Reason), msg, func(w string) string { return w + ": " + msg })
		}
	}
	for k := range st.sent {
		if cur[k] {
			continue
		}
		delete(st.sent, k)
		st.dirty, st.transition = true, now
		if cleared++; cleared <= MaxHealthFindings {
			what, why := k.label(), clearedText(k.reason)
			r.events(rep, corev1.EventTypeNormal, ReasonCleared, what+" cleared: "+why, func(w string) string { return what + " cleared on " + w + ": " + why })
		}
	}
	if unsent := sent - MaxHealthFindings; unsent > 0 {
		r.events(rep, corev1.EventTypeWarning, ReasonMoreFindings, fmt.Sprintf("%d more finding(s) not sent as Events (at most %d at once); the PodGroup's %s annotation lists the first %d and counts the rest", unsent, MaxHealthFindings, HealthAnnotation, MaxHealthFindings), nil)
	}
	if uncleared := cleared - MaxHealthFindings; uncleared > 0 {
		r.events(rep, corev1.EventTypeNormal, ReasonCleared, fmt.Sprintf("%d more finding(s) cleared: the pods now agree with the gang plan", uncleared), nil)
	}
	if st.dirty && !r.DryRun && r.Client != nil {
		st.dirty = !r.annotate(ctx, rep, st)
	}
}

// annotate writes the HealthAnnotation on the workload's PodGroups; it reports whether every
// PodGroup was written (a missing one is retried on the next tick).
func (r *Reporter) annotate(ctx context.Context, rep Report, st *reported) bool {
	h := Health{Healthy: len(rep.Findings) == 0, Findings: rep.Findings, LastTransitionTime: st.transition.UTC().Format(time.RFC3339)}
	if len(h.Findings) > MaxHealthFindings {
		h.Findings, h.Omitted = h.Findings[:MaxHealthFindings], len(h.Findings)-MaxHealthFindings
	}
	v, err := json.Marshal(h)
	if err != nil {
		return true
	}
	// An alpha plan's name with a {key} placeholder stands for the PodGroups the pods' values
	// named: write those (none yet: retried on the next tick, as a PodGroup not created yet).
	names, done, err := podgroup.ActualNames(ctx, r.Client, r.Owners, rep.Workload.Namespace, types.UID(rep.Workload.UID), rep.PodGroups)
	if err != nil {
		return false
	}
	for _, name := range names {
		if _, err := SetAnnotation(ctx, r.Client, types.NamespacedName{Namespace: rep.Workload.Namespace, Name: name}, HealthAnnotation, string(v), nil); err != nil {
			if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				ctrl.LoggerFrom(ctx).Error(err, "Writing the health annotation", "podGroup", rep.Workload.Namespace+"/"+name)
			}
			done = false
		}
	}
	return done
}

// SetAnnotation sets the annotation to v on the PodGroup when it differs and write (nil: any)
// allows it, and reports whether it sent the update: the PodGroup is read from the cache without
// a deep copy (only read until it must change, then copied) and updated with the verbs gangmap
// already has on PodGroups (get and update: no patch). A conflict is the caller's to retry.
func SetAnnotation(ctx context.Context, c client.Client, key types.NamespacedName, annotation, v string, write func(*v2alpha2.PodGroup) bool) (bool, error) {
	pg := &v2alpha2.PodGroup{}
	if err := c.Get(ctx, key, pg, client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	if pg.Annotations[annotation] == v || (write != nil && !write(pg)) {
		return false, nil
	}
	pg = pg.DeepCopy()
	if pg.Annotations == nil {
		pg.Annotations = map[string]string{}
	}
	pg.Annotations[annotation] = v
	return true, c.Update(ctx, pg)
}

// events records an Event on the workload and, when its definition is a cluster Karta and
// onKarta is set, one on the Karta whose message onKarta renders from "Kind namespace/name".
func (r *Reporter) events(rep Report, typ, reason, msg string, onKarta func(workload string) string) {
	if r.Recorder == nil {
		return
	}
	w := rep.Workload
	r.Recorder.Event(workloadObject(w), typ, reason, msg)
	if k := rep.Definition.Karta(); k != nil && onKarta != nil {
		r.Recorder.Event(k, typ, reason, onKarta(w.Kind+" "+w.Namespace+"/"+w.Name))
	}
}

// label renders "Reason (role role)", or "Reason" for the workload.
func (k findingKey) label() string {
	if k.role == "" {
		return string(k.reason)
	}
	return string(k.reason) + " (role " + k.role + ")"
}

func withRole(f Finding) string {
	if f.Role == "" {
		return f.Message
	}
	return "role " + f.Role + ": " + f.Message
}

// workloadObject is the reference of Events on the workload.
func workloadObject(w gang.WorkloadRef) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: w.APIVersion, Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, UID: types.UID(w.UID)}
}

// Karta is the reference of Events on the definition's cluster Karta, nil for a definition from
// a file or the catalog.
func (d Definition) Karta() *corev1.ObjectReference {
	if d.KartaUID == "" {
		return nil
	}
	return &corev1.ObjectReference{APIVersion: definitions.APIVersion, Kind: definitions.Kind, Name: d.Name, UID: d.KartaUID}
}

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
