package findings

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaiadmission"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// The admission check: the Reporter runs each written PodGroup of a workload, with the
// workload's pods, through the admission model (kaiadmission.Check), and a PodGroup the model
// says KAI cannot admit (Verdict.Stuck: a deadlock among the first minSubGroup sub-groups, a
// required sub-group whose pods finished, a partial commit) is a GangNotAdmittable finding naming
// the PodGroup and the sub-group that blocks it, once the verdict has held for
// Config.NotAdmittableGrace (the controller writes a PodGroup just after it groups the pod that
// changes it, so one check may see the PodGroup of a moment before).
//
// It costs at most MaxAdmissionChecks workloads and MaxAdmissionPods pods a tick (at least one
// workload), each check a read of the workload's PodGroups from the cache and of its pods from
// WorkloadPods, and runs on the Reporter's goroutine: the pod controller never waits for it. A
// workload is checked when its pods or plan changed since its last check (Tracker.Observe,
// Forget, SetPlan) and, while the model says it is stuck, on every tick until it is not.

// Bounds of one tick's admission checks.
const (
	MaxAdmissionChecks = 64
	MaxAdmissionPods   = 20000
)

// AdmissionPod is one pod of a workload as the admission model sees it, with the PodGroup its
// pod-group-name annotation names.
type AdmissionPod struct {
	PodGroup string
	kaiadmission.Pod
}

// WorkloadPods gives the pods of one workload: the pod controller's cache of the pods it grouped
// under the top owner uid, in namespace (no API call).
type WorkloadPods interface {
	PodsOf(ctx context.Context, namespace string, uid types.UID) []AdmissionPod
}

// admissionCheck is one workload due for the admission model, with the plan's PodGroup names (a
// name may hold a key placeholder: podgroup.ActualNames).
type admissionCheck struct {
	uid       types.UID
	namespace string
	podGroups []string
}

// Blocked is a written PodGroup the model says KAI cannot admit: which, the sub-group that
// blocks it ("default" for a flat PodGroup, "" when the model names none) and why.
type Blocked struct {
	PodGroup, SubGroup, Reason string
}

// blockedState is a workload's current Blocked verdict and since when it holds (since the
// Tracker's epoch).
type blockedState struct {
	Blocked
	since time.Duration
}

// admissionDue returns up to max workloads due for the admission check (their pods or plan
// changed since the last check, or the last check found them blocked) and marks them checked.
func (t *Tracker) admissionDue(max int) []admissionCheck {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []admissionCheck
	for uid, w := range t.workloads {
		if len(out) >= max {
			break
		}
		if !w.planned || (!w.admissionDue && w.rare.blocked == nil) {
			continue
		}
		w.admissionDue = false
		out = append(out, admissionCheck{uid: uid, namespace: w.namespace, podGroups: slices.Clone(w.podGroups)})
	}
	return out
}

// setAdmission records the check's verdict on the workload: b, or nil when every written
// PodGroup can be admitted (or is waiting for pods the operator may still create); putOff marks
// it due again instead (its check was put off to the next tick). The time a verdict holds since
// restarts when it names another PodGroup or sub-group.
func (t *Tracker) setAdmission(uid types.UID, b *Blocked, putOff bool, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.workloads[uid]
	switch {
	case w == nil:
	case putOff:
		w.admissionDue = true
	case b == nil:
		w.rare.blocked = nil
	case w.rare.blocked != nil && w.rare.blocked.PodGroup == b.PodGroup && w.rare.blocked.SubGroup == b.SubGroup:
		w.rare.blocked.Reason = b.Reason
	default:
		w.rare.blocked = &blockedState{Blocked: *b, since: t.since(now)}
	}
}

// blockedFinding is the workload's GangNotAdmittable finding from the model, once its verdict
// has held for the grace; nil before, or when fs already has a GangNotAdmittable of that role
// (the selector-miss finding says more).
func (r *rareState) blockedFinding(at time.Duration, cfg Config, fs []Finding) *Finding {
	b := r.blocked
	if b == nil || at-b.since < cfg.NotAdmittableGrace {
		return nil
	}
	if slices.ContainsFunc(fs, func(f Finding) bool { return f.Reason == GangNotAdmittable && f.Role == b.SubGroup }) {
		return nil
	}
	what := "KAI cannot admit PodGroup " + b.PodGroup
	if b.SubGroup != "" {
		what += " (sub-group " + b.SubGroup + " blocks it)"
	}
	return &Finding{Reason: GangNotAdmittable, Role: b.SubGroup, Counts: b.PodGroup + "/" + b.SubGroup, Message: fmt.Sprintf(
		"%s with the pods that exist, for %s: %s; see gangmap describe for the PodGroup and its pods", what, (at - b.since).Round(time.Second), b.Reason)}
}

// checkAdmission runs the admission check on the workloads due (see the comment at the top).
func (r *Reporter) checkAdmission(ctx context.Context, now time.Time) {
	if r.Pods == nil || r.Client == nil {
		return
	}
	budget := MaxAdmissionPods
	for _, c := range r.Tracker.admissionDue(MaxAdmissionChecks) {
		if budget <= 0 {
			r.Tracker.setAdmission(c.uid, nil, true, now) // next tick
			continue
		}
		pods := r.Pods.PodsOf(ctx, c.namespace, c.uid)
		budget -= len(pods) + 1
		b, err := r.blocked(ctx, c, pods)
		if err != nil {
			ctrl.LoggerFrom(ctx).V(1).Info("Admission check skipped", "namespace", c.namespace, "uid", c.uid, "error", err.Error())
		}
		r.Tracker.setAdmission(c.uid, b, err != nil, now)
	}
}

// blocked runs each written PodGroup of the workload with its pods through the model and returns
// the first one it says KAI cannot admit (nil when none). A PodGroup not written yet is skipped.
func (r *Reporter) blocked(ctx context.Context, c admissionCheck, pods []AdmissionPod) (*Blocked, error) {
	names, _, err := podgroup.ActualNames(ctx, r.Client, r.Owners, c.namespace, c.uid, c.podGroups)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		pg := &v2alpha2.PodGroup{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: c.namespace, Name: name}, pg, client.UnsafeDisableDeepCopy); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		var mine []kaiadmission.Pod
		for _, p := range pods {
			if p.PodGroup == name {
				mine = append(mine, p.Pod)
			}
		}
		v := kaiadmission.Check(pg, mine, r.Release)
		if !v.Stuck() {
			continue
		}
		b := &Blocked{PodGroup: name, SubGroup: v.Blocking, Reason: v.Reason}
		switch {
		case v.Finished != "":
			b.SubGroup = v.Finished
			b.Reason = fmt.Sprintf("sub-group %s requires pods that have finished (KAI counts no Succeeded pod towards a minimum, so it never takes the PodGroup): declare the role finished in the definition's startup.holds ({reason, finished: true}) or keep it out of the gang; %s", v.Finished, v.Reason)
		case v.Partial:
			b.Reason = fmt.Sprintf("KAI's first commit binds only %v of the gang (it commits an attempt without checking the minimum)", v.Steps[0])
		}
		return b, nil
	}
	return nil, nil
}
