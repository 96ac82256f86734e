// Package controller is gangmap's pod controller: for each pod scheduled by KAI whose top owner
// is a kind gangmap groups, it writes the pod's PodGroup and labels the pod as KAI's own
// pod-grouper would. It never binds, admits or places a pod: KAI keeps that authority.
package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/lru"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/kaiadmission"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/kairelease"
	"github.com/gangmap/gangmap/podgrouper/core/owners"
	"github.com/gangmap/gangmap/podgrouper/core/ownerskip"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
	"github.com/gangmap/gangmap/podgrouper/runtime/podbook"
	"github.com/gangmap/gangmap/podgrouper/runtime/podcache"
	"github.com/gangmap/gangmap/podgrouper/runtime/podview"
	"github.com/gangmap/gangmap/podgrouper/runtime/strays"
)

// Event reasons gangmap emits.
const (
	ReasonPodGroupCreated = "PodGroupCreated"
	ReasonPodGroupUpdated = "PodGroupUpdated"
	ReasonWouldWrite      = podgroup.ReasonWouldWrite
	ReasonGroupingFailed  = "GangmapGroupingFailed"
	// ReasonReleased: a held pod handed back to KAI's pod-grouper (PodReconciler.releaseHeld).
	ReasonReleased = "GangmapReleasedToKAI"
	ReasonRepaired = "GangmapRepairedPod"
	// ReasonInvalidOwner is the Warning Event, once per pod, on a pod whose owner reference names
	// an object of another namespace or a replaced owner: gangmap treats it as having no owner.
	ReasonInvalidOwner = "GangmapInvalidOwnerReference"
)

// PodReconciler groups pods. Client is the manager's client; Pods is the pod cache (podcache:
// each pod's podview.Record; required); Decider decides each pod's PodGroup (shared with the
// admission webhook).
type PodReconciler struct {
	Client   client.Client
	Pods     *podcache.Cache
	Decider  *decide.Decider
	Applier  *podgroup.Applier
	Recorder record.EventRecorder
	// Release is the KAI release beside gangmap (nil: the latest). On a release that does not
	// honour the skip annotation (before v0.15) gangmap never takes back a pod KAI's pod-grouper
	// regrouped (see yieldToKAI).
	Release *kairelease.Release
	// DryRun (shadow mode) computes and reports through Events, logs and metrics, and writes
	// nothing.
	DryRun bool
	// WebhookServed says this grouper serves gangmap's admission webhook (--webhook-port is not
	// 0): the repair Event then says the webhook had not set the pods although it is served.
	WebhookServed bool

	// Observer records each decision for the findings and the workload metrics. Its Book, when
	// nil, is one of the reconciler's own; in it the controller also keeps each pod's top owner
	// (for the workload watches) and the UID of the pod it last repaired, so that a reconcile that
	// reads a cached pod older than its own repair patch (a workload event regroups every pod at
	// once) neither counts nor reports the pod again. Its Planner, when nil, is the Decider's
	// grouper when that is one (SetupWithManager).
	Observer
	// Owners, when set, marks each workload gangmap groups with KAI's skip annotation (markOwner).
	Owners *ownerskip.Marker
	// Strays, when set, deletes (in dry-run: reports) the workload's PodGroups no pod names any
	// more.
	Strays *strays.Collector
	// PodGroupOwners, when set, gives a workload's own PodGroups by its UID (strays.OwnerIndex)
	// to the workload status keeper, which then reads them instead of its namespace's PodGroups
	// (podgroup.ActualNames).
	PodGroupOwners podgroup.OwnerLister

	// marked holds the resourceVersion each workload had when gangmap marked it; marking holds,
	// by UID, the workloads a reconcile is marking now (a channel closed when it is done);
	// markUntold the workloads marked whose mark no Event has told yet (see writePodGroup).
	marked, marking, markUntold sync.Map

	// workloads starts a watch per workload kind the first time a pod of it is grouped.
	workloads *workloadWatcher
	// queue is the controller's work queue (regroupSiblings).
	queue queueRef
	// invalidOwners and outsidePlan remember the pods already told their owner reference is
	// ignored, or that they are outside their workload's plan (firstReport).
	invalidOwners, outsidePlan *lru.Cache
	// repaired and dryRun write the Events about pods once per workload and episode
	// (aggregator): a workload's pods labelled after creation (ReasonRepaired) and, in dry-run,
	// the pods that would join its PodGroups (ReasonWouldWrite). Each pod stays in the log and in
	// gangmap_pods_repaired_total or gangmap_pods_grouped_total.
	repaired, dryRun *aggregator
	// once makes, at the first use (init), the Book when none is given and the fields above.
	once sync.Once
}

var _ reconcile.Reconciler = (*PodReconciler)(nil)

// Reconcile reads the pod from the pod cache (its podview.Record as a Pod) and groups it; see
// reconcile for the steps. A pod the cache lacks is gone (the cache holds every pod of the
// scheduler once synced, which the controller waits for): what is kept of it is forgotten.
func (r *PodReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.init()
	pod, ok := r.Pods.Get(req.NamespacedName)
	if !ok {
		r.Forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("pod", klog.KObj(pod))
	return r.reconcile(ctrl.LoggerInto(ctx, log), pod)
}

func (r *PodReconciler) reconcile(ctx context.Context, pod *corev1.Pod) (ctrl.Result, error) {
	start := time.Now()
	key := client.ObjectKeyFromObject(pod)

	// 1. Decide: our scheduler, owners walked to the top owner, a kind gangmap groups (not
	// native, with a definition), the gang plan of the live workload, the pod's place in it.
	d, err := r.Decider.DecideCached(ctx, pod, r.fullPod())
	if err != nil {
		return r.decideFailed(ctx, pod, err)
	}
	if d != nil && d.Pod != nil {
		pod = d.Pod
	}
	r.Observe(key, pod, d)
	if d != nil && d.Seen.NotInPlan != nil {
		r.reportOutsidePlan(ctx, pod, d)
	}
	if d == nil || d.Metadata == nil {
		r.Book.Ungroup(key)
		if r.Metrics != nil {
			r.Metrics.ForgetPod(key)
		}
		ctrl.LoggerFrom(ctx).V(4).Info("Pod is not gangmap's")
		return ctrl.Result{}, r.releaseHeld(ctx, pod)
	}
	decisionSeconds.Observe(time.Since(start).Seconds())
	log := ctrl.LoggerFrom(ctx).WithValues("podGroup", klog.KRef(d.Metadata.Namespace, d.Metadata.Name), "subGroup", d.SubGroup, "workload", klog.KObj(d.Owner))

	// 2. Remember the pod under its workload and watch the workload's kind, so that a change of
	// the workload (scaling, labels) regroups its pods even when no pod changes.
	r.Book.Group(key, d.Owner.GetUID())
	if r.workloads != nil {
		if err := r.workloads.ensure(ctx, d.Kind); err != nil {
			log.Error(err, "Cannot watch the workload kind; its pods are regrouped on pod events only", "kind", d.Kind.String())
		}
	}

	if r.DryRun {
		r.Strays.Enqueue(strays.Workload{Owner: d.Owner, Keep: d.Planned})
		podGroupWrites.WithLabelValues("DryRun").Inc()
		podsGrouped.WithLabelValues(d.Kind.Kind, "true").Inc()
		r.reportDryRun(ctx, pod, d)
		r.Track(ctx, pod, d)
		return ctrl.Result{}, nil
	}
	return r.write(ctx, log, pod, d)
}

// decideFailed handles a failed decision: a pod whose owner reference gangmap ignores is reported
// once and not retried; any other failure is reported and retried (fail), after handing a held
// pod back to KAI when its owner chain no longer runs through a kind gangmap groups.
func (r *PodReconciler) decideFailed(ctx context.Context, pod *corev1.Pod, err error) (ctrl.Result, error) {
	var de *decide.DecideError
	if !errors.As(err, &de) {
		return r.fail(ctx, pod, nil, "Decide", err)
	}
	if decide.IsInvalidOwnerReference(err) {
		r.Book.Ungroup(client.ObjectKeyFromObject(pod))
		r.ignoreOwner(ctx, pod, de.Err)
		return ctrl.Result{}, nil
	}
	var ce *owners.ChainError
	if !de.Claimed() && errors.As(err, &ce) {
		// A cycle no longer through a kind gangmap groups (its definition deleted): a pod held for
		// it (decide.OwnerChain) is handed back, as a pod of a kind no longer gangmap's is. A
		// transient walk error releases nothing.
		if rerr := r.releaseHeld(ctx, pod); rerr != nil {
			return ctrl.Result{}, rerr
		}
	}
	return r.fail(ctx, pod, de.Owner, de.Reason, de.Err)
}

// write does the writes of a decided pod (steps 3 to 5); log carries the decision (writePodGroup
// logs with it).
func (r *PodReconciler) write(ctx context.Context, log logr.Logger, pod *corev1.Pod, d *decide.Decision) (ctrl.Result, error) {
	// 3. On a KAI that cannot be told to skip the pod, leave a pod its pod-grouper took.
	if r.yieldToKAI(ctx, pod, d.Owner, d.Metadata.Name) {
		return ctrl.Result{}, nil
	}

	// 4. Mark the workload for KAI's pod-grouper, then write the PodGroup (nothing is written
	// when it already matches); one Event on the workload says what this reconcile wrote.
	marked := r.markOwner(ctx, d)
	deferred, err := r.writePodGroup(ctrl.LoggerInto(ctx, log), d.Metadata, d.Owner, marked)
	if err != nil {
		return r.fail(ctx, pod, d.Owner, reasonPodGroupWrite, err)
	}
	if deferred.Requeue {
		return deferred, nil
	}

	// 5. Label the pod (the webhook normally did at creation; this repairs a pod it missed).
	r.regroupSiblings(pod, d)
	if err := r.labelPod(ctx, pod, d); err != nil {
		return r.fail(ctx, pod, d.Owner, "PodPatch", err)
	}
	podsGrouped.WithLabelValues(d.Kind.Kind, "false").Inc()
	r.Track(ctx, pod, d)
	r.Strays.Enqueue(strays.Workload{Owner: d.Owner, Keep: d.Planned})
	return deferred, nil
}

// writePodGroup writes the PodGroup (nothing when it already matches) and says so with an Event on
// the workload. The Result asks to requeue (Requeue) when another writer won a race (conflict,
// already exists): the pod's other writes wait; or to apply again later (RequeueAfter) when an
// update of the PodGroup's labels and annotations alone was deferred (podgroup.Deferred) and this
// pod's reconcile took the retry (RetryDeferred): the PodGroup's gang is current, so the pod's
// other writes go on. When
// the workload's mark (markOwner) is not told yet, the PodGroupCreated or PodGroupUpdated Event
// tells it too, so that a workload's first pods cost one Event, not two; marked says this
// reconcile set the mark, and it then tells the mark on its own (GangmapMarkedWorkload) when no
// PodGroup Event has.
func (r *PodReconciler) writePodGroup(ctx context.Context, md *podgroup.Metadata, owner *unstructured.Unstructured, marked bool) (ctrl.Result, error) {
	defer func() {
		if marked && r.tellMark(owner.GetUID()) {
			r.Recorder.Event(owner, corev1.EventTypeNormal, ReasonOwnerMarked, "set "+markNote)
		}
	}()
	res, err := r.Applier.Apply(ctx, md)
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return ctrl.Result{Requeue: true}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	podGroupWrites.WithLabelValues(string(res)).Inc()
	if res == podgroup.Deferred {
		after, _ := r.Applier.RetryDeferred(md) // 0 (no requeue) when another pod's reconcile retries
		return ctrl.Result{RequeueAfter: after}, nil
	}
	reason, wrote := map[podgroup.Result]string{podgroup.Created: ReasonPodGroupCreated, podgroup.Updated: ReasonPodGroupUpdated}[res]
	if !wrote {
		return ctrl.Result{}, nil
	}
	also := ""
	if r.tellMark(owner.GetUID()) {
		also = "; also set " + markNote
	}
	verb := strings.ToLower(string(res)) // "created", "updated"
	r.Recorder.Eventf(owner, corev1.EventTypeNormal, reason, "%s PodGroup %s: %s%s", verb, md.Name, gangSummary(md), also)
	ctrl.LoggerFrom(ctx).V(1).Info("PodGroup " + verb)
	return ctrl.Result{}, nil
}

// reasonPodGroupWrite is the grouping-error reason of a decided pod whose PodGroup could not be
// written (the API server refused it, or the request failed): the pod is held (holdFromKAI).
const reasonPodGroupWrite = "PodGroupWrite"

// yieldToKAI reports whether gangmap leaves the pod to KAI's pod-grouper: the KAI release does not
// honour kai.scheduler/skip-podgrouper (before v0.15, kai-releases.md §2), and the pod's
// pod-group-name is KAI's default grouper's name for it (pg-<owner name>-<owner UID>, dg, with the
// workload or, when KAI may not read the workload, the pod as owner) instead of gangmap's. KAI
// rewrites the annotation whenever it differs from its own result (pc Reconcile), so taking the
// pod back would start a tug-of-war of patches; gangmap stops after one Warning Event
// (GangmapYieldedToKAI) and counts gangmap_pods_yielded_total.
func (r *PodReconciler) yieldToKAI(ctx context.Context, pod *corev1.Pod, owner *unstructured.Unstructured, pgName string) bool {
	if r.Release.HonoursSkipAnnotation() {
		return false
	}
	cur := pod.Annotations[kaikeys.PodGroupName]
	if cur == "" || cur == pgName || !strings.HasPrefix(cur, "pg-") ||
		!(strings.HasSuffix(cur, "-"+string(owner.GetUID())) || strings.HasSuffix(cur, "-"+string(pod.UID))) {
		return false
	}
	yielded.Inc()
	r.Recorder.Eventf(pod, corev1.EventTypeWarning, kairelease.ReasonYielded,
		"KAI's pod-grouper put the pod in PodGroup %s; KAI %s does not honour kai.scheduler/skip-podgrouper (v0.15+), so gangmap leaves it there instead of fighting over it (its gang %s is not used): keep KAI's pod-grouper off these pods or upgrade KAI",
		cur, r.Release.Line, pgName)
	ctrl.LoggerFrom(ctx).Info("Pod left to KAI's pod-grouper (no skip annotation in this KAI release)", "kaiPodGroup", cur, "kaiVersion", r.Release.Requested)
	return true
}

// init makes what the reconciler keeps for itself, once (at its first Reconcile or at
// SetupWithManager): its Book when none is given, the memories of pods already told something
// and the episodes of Events.
func (r *PodReconciler) init() {
	r.once.Do(func() {
		if r.Book == nil {
			r.Book = podbook.New()
		}
		r.invalidOwners, r.outsidePlan = lru.New(reportedPods), lru.New(reportedPods)
		r.repaired = &aggregator{recorder: r.Recorder, typ: corev1.EventTypeWarning, reason: ReasonRepaired,
			message: repairMessage(r.WebhookServed)}
		r.dryRun = &aggregator{recorder: r.Recorder, typ: corev1.EventTypeNormal, reason: ReasonWouldWrite,
			message: dryRunMessage}
	})
}

// requests returns a reconcile request for every pod grouped under the top owner with uid.
func (r *PodReconciler) requests(uid types.UID) []reconcile.Request {
	pods := r.Book.Grouped(uid)
	out := make([]reconcile.Request, len(pods))
	for i, pod := range pods {
		out[i] = reconcile.Request{NamespacedName: pod}
	}
	return out
}

// fail reports an error on the pod (and the workload when known) with a Warning Event, counts
// it, and returns it so the pod is retried with backoff without blocking other pods.
func (r *PodReconciler) fail(ctx context.Context, pod *corev1.Pod, owner *unstructured.Unstructured, reason string, err error) (ctrl.Result, error) {
	groupingErrors.WithLabelValues(reason).Inc()
	if errors.Is(err, context.Canceled) {
		return ctrl.Result{}, err
	}
	msg := fmt.Sprintf("gangmap could not group the pod (%s): %v", reason, err)
	r.holdFromKAI(ctx, pod, reason)
	r.Recorder.Event(pod, corev1.EventTypeWarning, ReasonGroupingFailed, msg)
	if owner != nil {
		r.Recorder.Eventf(owner, corev1.EventTypeWarning, ReasonGroupingFailed, "pod %s: %s", pod.Name, msg)
	}
	return ctrl.Result{}, fmt.Errorf("%s: %w", reason, err)
}

// ignoreOwner reports, once per pod and owner references (a pod whose references change is
// reported again), a pod whose owner reference gangmap
// treats as absent: a Warning Event on the pod, a count, an Info log. It is not an error to
// retry: the reference itself is wrong, and the pod's next change reconciles it again anyway.
func (r *PodReconciler) ignoreOwner(ctx context.Context, pod *corev1.Pod, err error) {
	key := []string{string(pod.UID)}
	for _, ref := range pod.OwnerReferences {
		key = append(key, string(ref.UID))
	}
	if !firstReport(r.invalidOwners, key...) {
		return
	}
	groupingErrors.WithLabelValues(decide.InvalidOwnerReference).Inc()
	ctrl.LoggerFrom(ctx).Info("Owner reference ignored; the pod is not grouped by gangmap", "reason", err.Error())
	r.Recorder.Event(pod, corev1.EventTypeWarning, ReasonInvalidOwner, err.Error())
}

// gangSummary renders minMember or minSubGroup with the sub-groups and GPUs for Events.
func gangSummary(md *podgroup.Metadata) string {
	s := fmt.Sprintf("minMember %d", md.MinAvailable)
	if md.MinSubGroup != nil {
		s = fmt.Sprintf("minSubGroup %d", *md.MinSubGroup)
		for _, sg := range md.SubGroups {
			s += fmt.Sprintf(", %s minMember %d", sg.Name, sg.MinAvailable)
		}
	}
	if g := md.Annotations[kaikeys.GPUs]; g != "" {
		s += fmt.Sprintf(", %s GPUs", g)
	}
	return s
}

// fullPod is the Decider's FullPodFunc (the cached pods are Records, not whole pods): a GET of the pod from the API server (Decider.APIReader), made the webhook's view of it
// (podview.Pod). Only pods of workloads whose definition reads beyond a pod's metadata pay it, on
// each reconcile. A pod replaced under the same name (another UID) is NotFound: the new pod has
// its own event.
func (r *PodReconciler) fullPod() decide.FullPodFunc {
	return func(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
		full := &corev1.Pod{}
		if err := r.Decider.APIReader.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, full); err != nil {
			return nil, err
		}
		if full.UID != pod.UID {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, fmt.Sprintf("%s (UID %s)", pod.Name, pod.UID))
		}
		return podview.Pod(full), nil
	}
}

var _ findings.WorkloadPods = (*PodReconciler)(nil)

// PodsOf implements findings.WorkloadPods: the pods grouped under the top owner uid (the Book)
// in namespace that carry a pod-group-name annotation, read from the pod cache (no API call), each with its sub-group label and the state KAI's scheduler gives it
// (kaiadmission.PodFor). The pod cache keeps no scheduling gates (podview), so a gated pod reads
// as pending: the model may then call a PodGroup admitted that KAI holds as not ready, never the
// other way round.
func (r *PodReconciler) PodsOf(_ context.Context, namespace string, uid types.UID) []findings.AdmissionPod {
	keys := r.Book.Grouped(uid)
	out := make([]findings.AdmissionPod, 0, len(keys))
	for _, key := range keys {
		if key.Namespace != namespace {
			continue
		}
		pod, ok := r.Pods.Get(key)
		if !ok {
			continue // deleted meanwhile
		}
		pg := pod.Annotations[kaikeys.PodGroupName]
		if pg == "" {
			continue
		}
		out = append(out, findings.AdmissionPod{PodGroup: pg, Pod: kaiadmission.PodFor(pod)})
	}
	return out
}
