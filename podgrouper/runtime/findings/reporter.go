package findings

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

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
	current    []Finding
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
	switch reason {
	case TopologyUnresolved:
		return "the plan now honours the workload's topology and segment requests"
	case TopologyNotFound:
		return "the KAI Topology and the levels the constraints name now exist"
	}
	return "the pods now agree with the gang plan"
}

// Start implements manager.Runnable: Tick at once and then every Interval until ctx ends.
func (r *Reporter) Start(ctx context.Context) error {
	iv := r.Interval
	if iv <= 0 {
		iv = 2 * time.Second
	}
	wait.NonSlidingUntilWithContext(ctx, r.Tick, iv)
	return nil
}

func (r *Reporter) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Tick evaluates once and reports what changed.
func (r *Reporter) Tick(ctx context.Context) {
	if r.state == nil {
		r.state = map[types.UID]*reported{}
	}
	cfg := r.Config.WithDefaults()
	now := r.now()
	r.checkAdmission(ctx, now)
	seen := map[types.UID]bool{}
	// The workloads without findings matter only if they had some: what was sent is cleared.
	reportedOn := func(uid types.UID) bool { _, ok := r.state[uid]; return ok }
	for _, rep := range r.Tracker.EvaluateSome(now, cfg, reportedOn) {
		uid := types.UID(rep.Workload.UID)
		st := r.state[uid]
		if st == nil {
			if len(rep.Findings) == 0 {
				// Nothing to send and nothing sent to clear: a healthy workload keeps no state
				// (at 10,000 workloads, 140 bytes each: BenchmarkWorkloadStateBytes).
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
	// The Events' objects, made for the first Event (most ticks send none).
	var workload, karta *corev1.ObjectReference
	objects := func() {
		if workload == nil {
			workload, karta = workloadObject(rep.Workload), kartaObject(rep.Definition)
		}
	}
	var sent, unsent, cleared, uncleared int
	before := reasonsOf(st.sent)
	defer func() { moveGauge(st, before, reasonsOf(st.sent)) }()
	cur := map[findingKey]Finding{}
	for _, f := range rep.Findings {
		k := findingKey{f.Reason, f.Role}
		cur[k] = f
		last, had := st.sent[k]
		changed := had && last.counts != f.Counts
		if !had {
			Total.WithLabelValues(st.kind, st.definition, string(f.Reason)).Inc()
			st.dirty, st.transition = true, now
		}
		if changed {
			// The annotation says what the finding counts now (the transition time stays).
			st.dirty = true
		}
		if had && !changed && now.Sub(last.at) < cfg.ResendInterval {
			continue
		}
		if st.sent == nil {
			// Made with the first finding: most workloads never have one.
			st.sent = map[findingKey]sentFinding{}
		}
		st.sent[k] = sentFinding{at: now, counts: f.Counts}
		if sent++; sent > MaxHealthFindings {
			unsent++
			continue
		}
		objects()
		r.event(workload, corev1.EventTypeWarning, string(f.Reason), "%s", withRole(f))
		if karta != nil {
			r.event(karta, corev1.EventTypeWarning, string(f.Reason), "%s %s/%s: %s", rep.Workload.Kind, rep.Workload.Namespace, rep.Workload.Name, withRole(f))
		}
	}
	for k := range st.sent {
		if _, ok := cur[k]; ok {
			continue
		}
		delete(st.sent, k)
		st.dirty, st.transition = true, now
		if cleared++; cleared > MaxHealthFindings {
			uncleared++
			continue
		}
		f := Finding{Reason: k.reason, Role: k.role}
		objects()
		r.event(workload, corev1.EventTypeNormal, ReasonCleared, "%s cleared: %s", label(f), clearedText(f.Reason))
		if karta != nil {
			r.event(karta, corev1.EventTypeNormal, ReasonCleared, "%s cleared on %s %s/%s: %s", label(f), rep.Workload.Kind, rep.Workload.Namespace, rep.Workload.Name, clearedText(f.Reason))
		}
	}
	if unsent > 0 {
		objects()
		r.event(workload, corev1.EventTypeWarning, ReasonMoreFindings, "%d more finding(s) not sent as Events (at most %d at once); the PodGroup's %s annotation lists the first %d and counts the rest", unsent, MaxHealthFindings, HealthAnnotation, MaxHealthFindings)
	}
	if uncleared > 0 {
		objects()
		r.event(workload, corev1.EventTypeNormal, ReasonCleared, "%d more finding(s) cleared: the pods now agree with the gang plan", uncleared)
	}
	st.current = rep.Findings
	if st.dirty && !r.DryRun && r.Client != nil {
		st.dirty = !r.annotate(ctx, rep, st)
	}
}

// annotate writes the HealthAnnotation on the workload's PodGroups; it reports whether every
// PodGroup was written (a missing one is retried on the next tick).
func (r *Reporter) annotate(ctx context.Context, rep Report, st *reported) bool {
	h := Health{Healthy: len(st.current) == 0, Findings: st.current, LastTransitionTime: st.transition.UTC().Format(time.RFC3339)}
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
		if err := r.setAnnotation(ctx, types.NamespacedName{Namespace: rep.Workload.Namespace, Name: name}, string(v)); err != nil {
			if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				ctrl.LoggerFrom(ctx).Error(err, "Writing the health annotation", "podGroup", rep.Workload.Namespace+"/"+name)
			}
			done = false
		}
	}
	return done
}

// setAnnotation reads the PodGroup (from the cache, without a deep copy: only read until it must
// change, then copied) and updates it with the annotation, with the verbs gangmap already has on
// PodGroups (get and update: no patch). A conflict is retried on the next tick.
func (r *Reporter) setAnnotation(ctx context.Context, key types.NamespacedName, v string) error {
	pg := &v2alpha2.PodGroup{}
	if err := r.Client.Get(ctx, key, pg, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	if pg.Annotations[HealthAnnotation] == v {
		return nil
	}
	pg = pg.DeepCopy()
	if pg.Annotations == nil {
		pg.Annotations = map[string]string{}
	}
	pg.Annotations[HealthAnnotation] = v
	return r.Client.Update(ctx, pg)
}

func (r *Reporter) event(obj *corev1.ObjectReference, typ, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, typ, reason, format, args...)
	}
}

func label(f Finding) string {
	if f.Role == "" {
		return string(f.Reason)
	}
	return string(f.Reason) + " (role " + f.Role + ")"
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

// kartaObject is a reference object for Events on a cluster Karta, or nil for a definition
// from a file or the catalog.
func kartaObject(d Definition) *corev1.ObjectReference {
	if d.KartaUID == "" {
		return nil
	}
	return &corev1.ObjectReference{APIVersion: definitions.APIVersion, Kind: definitions.Kind, Name: d.Name, UID: d.KartaUID}
}
