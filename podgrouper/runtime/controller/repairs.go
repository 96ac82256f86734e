package controller

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// FlushEvents writes the Events of every open episode now (the manager's stop; tests).
func (r *PodReconciler) FlushEvents() {
	r.repaired.flush()
	r.dryRun.flush()
}

// labelPod merge-patches only what differs: the pod-group-name annotation, KAI's skip
// annotation (so KAI's pod-grouper leaves the pod alone from now on), and the sub-group label
// (removed when stale, which KAI never does). A pod without the skip annotation was not mutated by
// gangmap's admission webhook at its creation, so KAI's pod-grouper may have grouped it meanwhile:
// reportRepair counts and logs it, and its workload gets one Warning Event per episode
// (GangmapRepairedPod) for all such pods.
func (r *PodReconciler) labelPod(ctx context.Context, pod *corev1.Pod, d *decide.Decision) error {
	pgName, subGroup := d.Metadata.Name, d.SubGroup
	md := map[string]map[string]any{} // "annotations" and "labels": the values to set (nil: remove)
	set := func(part, key string, v any) {
		if md[part] == nil {
			md[part] = map[string]any{}
		}
		md[part][key] = v
	}
	cur := pod.Annotations[kaikeys.PodGroupName]
	if cur != pgName {
		set("annotations", kaikeys.PodGroupName, pgName)
	}
	repaired := pod.Annotations[kaikeys.SkipPodGrouper] != "true"
	if repaired {
		set("annotations", kaikeys.SkipPodGrouper, "true")
	}
	if _, held := pod.Annotations[kaikeys.Held]; held {
		set("annotations", kaikeys.Held, nil) // grouped now: no longer held
	}
	curSG, has := pod.Labels[kaikeys.SubGroupName]
	switch {
	case subGroup == "" && has:
		set("labels", kaikeys.SubGroupName, nil)
	case subGroup != "" && curSG != subGroup:
		set("labels", kaikeys.SubGroupName, subGroup)
	}
	if len(md) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": md})
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return err
	}
	if repaired && r.Book.FirstRepair(client.ObjectKeyFromObject(pod), pod.UID) {
		r.reportRepair(ctx, pod, d, cur)
	}
	return nil
}

// holdFromKAI gives a pod whose decision failed (reason: DecideError.Reason) after a definition claimed its workload
// (DecideError.Claimed: the plan failed, the owner could not be read), or whose PodGroup could not
// be written (reasonPodGroupWrite: e.g. the workload's annotations, which the PodGroup copies as
// KAI's does, past 256 KiB, so that marking the workload fails too) KAI's skip annotation, as
// the admission webhook does at creation (webhook.PodMutator.hold), when the pod lacks it (created
// while the webhook was down, or before the definition applied): KAI's pod-grouper would
// otherwise give it a PodGroup of its own and KAI bind it outside its gang. The pod then waits,
// with no PodGroup, until a retry groups it. Nothing is written in shadow mode (DryRun) or for a
// pod KAI's pod-grouper already put in a PodGroup (the next successful decision repairs it). A
// failed patch is logged; the caller's retry tries again.
func (r *PodReconciler) holdFromKAI(ctx context.Context, pod *corev1.Pod, reason string) {
	claimed := decide.ClaimedReason(reason) || reason == reasonPodGroupWrite
	if r.DryRun || !claimed || pod.Annotations[kaikeys.SkipPodGrouper] == "true" ||
		pod.Annotations[kaikeys.PodGroupName] != "" {
		return
	}
	patch := []byte(`{"metadata":{"annotations":{"` + kaikeys.SkipPodGrouper + `":"true","` + kaikeys.Held + `":"true"}}}`)
	if perr := r.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); perr != nil {
		ctrl.LoggerFrom(ctx).Error(perr, "Cannot hold the pod from KAI's pod-grouper")
		return
	}
	podsHeld.Inc()
}

// releaseHeld hands a pod gangmap held (kaikeys.Held, with no PodGroup) back to KAI's
// pod-grouper once its kind is no longer gangmap's (its definitions were removed, or a native
// plugin now groups it): it removes KAI's skip annotation and kaikeys.Held, so that KAI groups the
// pod by its own rules, as it does every new pod of a kind whose definition was deleted
// (docs/reliability.md, "a definition deleted while its workloads run"). Without it the pod would
// wait for ever: KAI's pod-grouper skips it and gangmap no longer groups it.
func (r *PodReconciler) releaseHeld(ctx context.Context, pod *corev1.Pod) error {
	if r.DryRun || pod.Annotations[kaikeys.Held] != "true" || pod.Annotations[kaikeys.PodGroupName] != "" || pod.DeletionTimestamp != nil {
		return nil
	}
	patch := []byte(`{"metadata":{"annotations":{"` + kaikeys.SkipPodGrouper + `":null,"` + kaikeys.Held + `":null}}}`)
	if err := r.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return client.IgnoreNotFound(err)
	}
	podsReleased.Inc()
	ctrl.LoggerFrom(ctx).Info("Held pod handed back to KAI's pod-grouper: its kind is no longer gangmap's")
	r.Recorder.Event(pod, corev1.EventTypeNormal, ReasonReleased, "gangmap no longer groups this pod's kind: the pod is handed back to KAI's pod-grouper")
	return nil
}

// reportRepair tells of a pod labelled after creation: gangmap_pods_repaired_total, an Info log
// with the PodGroup it joined (and the one it had, when another writer, KAI's pod-grouper, had
// put it in one), and the pod counted in its workload's repair episode.
func (r *PodReconciler) reportRepair(ctx context.Context, pod *corev1.Pod, d *decide.Decision, previous string) {
	repairs.Inc()
	pgName := d.Metadata.Name
	detail := "joined PodGroup " + pgName
	log := ctrl.LoggerFrom(ctx)
	if previous != "" && previous != pgName {
		detail = fmt.Sprintf("moved from PodGroup %s to %s", previous, pgName)
		log.Info("Pod labelled after creation, moved from another PodGroup (gangmap's admission webhook had not set it)", "previousPodGroup", previous)
	} else {
		log.Info("Pod labelled after creation (gangmap's admission webhook had not set it)")
	}
	r.repaired.add(d.Owner, pod.Name, detail)
}

// reportDryRun counts a pod the dry run would group in its workload's dry-run episode (one
// DryRunPodGroup Event per workload and episode, naming each PodGroup with its gang) and logs it.
func (r *PodReconciler) reportDryRun(ctx context.Context, pod *corev1.Pod, d *decide.Decision) {
	md := d.Metadata
	ctrl.LoggerFrom(ctx).V(2).Info("Dry-run: PodGroup decided, nothing written")
	r.dryRun.add(d.Owner, pod.Name, fmt.Sprintf("would join PodGroup %s (%s)", md.Name, gangSummary(md)))
}

// repairMessage renders a repair episode's Event. What is known: the pods had no
// kai.scheduler/skip-podgrouper when the controller first saw them, so gangmap's admission
// webhook had not mutated them at creation; whether this grouper serves the webhook; which pods
// another writer (KAI's pod-grouper) had put in another PodGroup. Why the webhook had not is not
// known to the controller, so the possible causes are named.
func repairMessage(webhookServed bool) func(*episode) string {
	why := "this grouper does not serve gangmap's admission webhook (--webhook-port=0), so the controller labels every pod after creation"
	if webhookServed {
		why = "this grouper serves gangmap's admission webhook, so the API server's call to it failed or timed out (failurePolicy Ignore admits the pod unchanged), " +
			"the webhook configuration's namespace or object selector leaves these pods out, or they were created before the webhook was configured " +
			"(gangmap_webhook_errors_total and the API server's log tell which)"
	}
	return func(e *episode) string {
		return fmt.Sprintf("labelled %s after creation (%s): %s. They had no kai.scheduler/skip-podgrouper when gangmap first saw them, "+
			"so KAI's pod-grouper may have grouped them meanwhile; %s",
			pods(e.Pods), e.SampleList(), e.DetailList(), why)
	}
}

// dryRunMessage renders a dry-run episode's Event.
func dryRunMessage(e *episode) string {
	return fmt.Sprintf("dry-run: %s (%s) decided, nothing written: %s", pods(e.Pods), e.SampleList(), e.DetailList())
}

// pods is "1 pod" or "n pods".
func pods(n int) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}

// Bounds of an episode (see aggregator).
const (
	// EpisodeQuiet ends an episode when no pod came for 5 s: a workload's pods are created in a
	// burst and reconciled close together, also behind a client rate limit (the 10,000-pod
	// benchmark's queue holds a workload's ten pods within a second of each other).
	EpisodeQuiet = 5 * time.Second
	// episodeLongest ends an episode a minute after it began, so that a workload whose pods keep
	// coming gets an Event a minute (and a count) rather than none until they stop.
	episodeLongest = time.Minute
	// maxOpenEpisodes bounds the episodes open at once (about 300 B each); past it the oldest is
	// written early.
	maxOpenEpisodes = 10000
	// maxDetails bounds the distinct details an episode keeps (a LeaderWorkerSet of 1,000 groups
	// has 1,000 PodGroups); the rest are counted as others.
	maxDetails = 8
	// maxSample is the number of pod names an episode keeps to name in its Event.
	maxSample = 3
)

// aggregator writes one Event per workload and episode for a fact gangmap learns per pod (a pod
// labelled after creation, a pod a dry run would group), so that the Events a grouper writes
// scale with workloads, not pods: a workload of 1,000 pods the controller repairs gets one Event
// with the count, not 1,000. The per-pod facts stay in the logs and metrics of the caller.
//
// An episode of a workload begins with its first pod, takes every pod added while it lasts, and
// ends when no pod came for quiet or when it is longest old; its Event is written then, once,
// with the count of pods and the details (e.g. PodGroup names) they were added under. The next pod
// of the workload begins a new episode. Events go through the recorder, so client-go's correlator
// still applies (same object and reason: a repeat of the very same message is a PATCH of the
// count). The zero value of quiet, longest and maxOpen means their defaults. Safe for concurrent
// use.
type aggregator struct {
	recorder record.EventRecorder
	// typ (corev1.EventTypeNormal or EventTypeWarning) and reason of the Events.
	typ, reason string
	// message renders the Event of an episode that ended.
	message func(*episode) string
	// quiet, longest and maxOpen bound an episode (see the constants).
	quiet, longest time.Duration
	maxOpen        int

	mu   sync.Mutex
	open map[types.UID]*episode
	// now and afterFunc are time.Now and time.AfterFunc, replaced in tests.
	now       func() time.Time
	afterFunc func(time.Duration, func()) (stop func() bool)
}

// episode is what an aggregator gathered for one workload between its first pod and its Event.
type episode struct {
	// Workload is the workload's identity (apiVersion, kind, namespace, name, UID): the Event's
	// object.
	Workload *unstructured.Unstructured
	// Pods is the number of pods added (each Add counts one).
	Pods int
	// Sample holds the names of the first pods added (at most 3).
	Sample []string
	// Details counts the pods by the detail they were added with (at most 8 distinct details;
	// OtherDetails counts the pods of the others). An empty detail is not counted.
	Details      map[string]int
	OtherDetails int
	// Started and Last are when the first and the latest pod were added.
	Started, Last time.Time

	stop func() bool
}

// add counts pod under workload's current episode, with detail (e.g. the PodGroup the pod
// joined; "" for none), beginning an episode when the workload has none. Only workload's identity
// is kept (not the object).
func (a *aggregator) add(workload *unstructured.Unstructured, pod, detail string) {
	uid := workload.GetUID()
	a.mu.Lock()
	a.init()
	e, ok := a.open[uid]
	var evicted *episode
	if !ok {
		evicted = a.evictOldestLocked()
		e = &episode{Workload: identity(workload), Started: a.now(), Details: map[string]int{}}
		a.open[uid] = e
		e.stop = a.afterFunc(a.quiet, func() { a.expire(uid, e) })
	}
	e.Pods++
	e.Last = a.now()
	if len(e.Sample) < maxSample {
		e.Sample = append(e.Sample, pod)
	}
	if detail != "" {
		if _, known := e.Details[detail]; known || len(e.Details) < maxDetails {
			e.Details[detail]++
		} else {
			e.OtherDetails++
		}
	}
	a.mu.Unlock()
	a.write(evicted)
}

// flush ends every open episode now and writes their Events (for a stop, and for tests).
func (a *aggregator) flush() {
	a.mu.Lock()
	a.init()
	ended := make([]*episode, 0, len(a.open))
	for uid, e := range a.open {
		e.stop()
		delete(a.open, uid)
		ended = append(ended, e)
	}
	a.mu.Unlock()
	slices.SortFunc(ended, func(a, b *episode) int { return a.Started.Compare(b.Started) })
	for _, e := range ended {
		a.write(e)
	}
}

// expire is the timer of episode e of uid: it ends e when it has been quiet for quiet or is
// longest old, else waits again until the earlier of the two.
func (a *aggregator) expire(uid types.UID, e *episode) {
	a.mu.Lock()
	if a.open[uid] != e {
		a.mu.Unlock()
		return // ended already (flushed, evicted)
	}
	now := a.now()
	end := e.Last.Add(a.quiet)
	if longest := e.Started.Add(a.longest); longest.Before(end) {
		end = longest
	}
	if now.Before(end) {
		e.stop = a.afterFunc(end.Sub(now), func() { a.expire(uid, e) })
		a.mu.Unlock()
		return
	}
	delete(a.open, uid)
	a.mu.Unlock()
	a.write(e)
}

// evictOldestLocked removes and returns the oldest open episode when maxOpen are open, else nil.
func (a *aggregator) evictOldestLocked() *episode {
	if len(a.open) < a.maxOpen {
		return nil
	}
	var oldest *episode
	var oldestUID types.UID
	for uid, e := range a.open {
		if oldest == nil || e.Started.Before(oldest.Started) {
			oldest, oldestUID = e, uid
		}
	}
	oldest.stop()
	delete(a.open, oldestUID)
	return oldest
}

// write records the Event of the ended episode e (nil: nothing).
func (a *aggregator) write(e *episode) {
	if e == nil {
		return
	}
	a.recorder.Event(e.Workload, a.typ, a.reason, a.message(e))
}

// init makes the map of open episodes and sets the zero bounds to their defaults, at the first
// add or flush.
func (a *aggregator) init() {
	if a.open != nil {
		return
	}
	a.open = map[types.UID]*episode{}
	if a.now == nil {
		a.now = time.Now
	}
	if a.afterFunc == nil {
		a.afterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	a.quiet, a.longest = cmp.Or(max(a.quiet, 0), EpisodeQuiet), cmp.Or(max(a.longest, 0), episodeLongest)
	a.maxOpen = cmp.Or(max(a.maxOpen, 0), maxOpenEpisodes)
}

// DetailList renders the episode's details, each after its count of pods, by count then detail:
// details phrased as what a pod did ("joined PodGroup a") read "7 joined PodGroup a, 3 moved
// from PodGroup b to a"; ", and N more" counts the pods of the details not kept; "" when none.
func (e *episode) DetailList() string {
	keys := slices.SortedFunc(maps.Keys(e.Details), func(a, b string) int {
		return cmp.Or(cmp.Compare(e.Details[b], e.Details[a]), strings.Compare(a, b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", e.Details[k], k)
	}
	s := strings.Join(parts, ", ")
	if e.OtherDetails > 0 {
		s += fmt.Sprintf(", and %d more", e.OtherDetails)
	}
	return s
}

// SampleList renders the sample of pod names, with "and N more" when the episode counted more.
func (e *episode) SampleList() string {
	s := strings.Join(e.Sample, ", ")
	if more := e.Pods - len(e.Sample); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// identity is a new object with only u's apiVersion, kind, namespace, name and UID: what an
// Event's involvedObject records.
func identity(u *unstructured.Unstructured) *unstructured.Unstructured {
	id := &unstructured.Unstructured{Object: make(map[string]any, 3)}
	id.SetAPIVersion(u.GetAPIVersion())
	id.SetKind(u.GetKind())
	id.SetNamespace(u.GetNamespace())
	id.SetName(u.GetName())
	id.SetUID(u.GetUID())
	return id
}
