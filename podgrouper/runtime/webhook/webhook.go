// Package webhook is gangmap's mutating admission webhook on Pod CREATE. For a pod gangmap will
// group (scheduler name matches, the top owner is a kind the hub says is gangmap's), it sets KAI's
// skip annotation, the pod-group-name annotation and the sub-group label at creation, so KAI's
// pod-grouper never sees the pod as its own and never puts it in a one-pod PodGroup first. The
// decision is the pod controller's (decide.Decider), so both paths agree.
//
// The webhook never fails a pod creation: on any error it admits the pod unchanged, logs and
// counts the error, and the pod controller repairs the pod moments later (with a Warning Event).
package webhook

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/workloadmap"
	"github.com/gangmap/gangmap/podgrouper/runtime/onboarding"
	"github.com/gangmap/gangmap/podgrouper/runtime/podview"
)

// Path is where the webhook server serves the pod mutator; a MutatingWebhookConfiguration's
// clientConfig.service.path must name it.
const Path = "/mutate-v1-pod"

// Results of an admission, the result label of gangmap_webhook_admissions_total.
const (
	// ResultMutated: the pod is gangmap's and was given its PodGroup at creation.
	ResultMutated = "Mutated"
	// ResultSkipped: the pod is not gangmap's, or the selectors exclude it.
	ResultSkipped = "Skipped"
	// ResultDryRun: the pod is gangmap's, but gangmap runs in shadow mode and changes nothing.
	ResultDryRun = "DryRun"
	// ResultError: gangmap could not decide; the pod was admitted unchanged (the controller
	// repairs it).
	ResultError = "Error"
)

// PodMutator is the admission handler.
type PodMutator struct {
	// Decider decides the pod's PodGroup, as the pod controller does.
	Decider *decide.Decider
	// Namespaces reads a pod's namespace for NamespaceSelector.
	Namespaces client.Reader
	// NamespaceSelector and ObjectSelector restrict the pods the webhook mutates (nil or empty:
	// all). The MutatingWebhookConfiguration should carry the same selectors, so the API server
	// does not call the webhook for other pods at all; the webhook applies them too, so a broader
	// configuration changes nothing.
	NamespaceSelector labels.Selector
	ObjectSelector    labels.Selector
	// Timeout bounds one decision (owner walk, plan), below the configuration's timeoutSeconds so
	// that a slow decision admits the pod unchanged instead of timing out the API server's call.
	// The decision runs on its own goroutine: the webhook answers by Timeout even when the
	// decision does not return (see decideWithin).
	Timeout time.Duration
	// Onboarding, when set, is the onboarding policy in force (onboarding.Source.Current), applied
	// to pods before the decision (see onboardPod); QueueLabelKey is the grouper's (KAI's) queue
	// label key, and Recorder records an Event on the top owner for each onboarded pod
	// (aggregated by client-go's event correlator).
	Onboarding    func() *onboarding.Compiled
	QueueLabelKey string
	Recorder      record.EventRecorder
	// DryRun: decide and count, but never change a pod.
	DryRun bool
}

var _ admission.Handler = (*PodMutator)(nil)

// Register serves the mutator at Path on srv.
func (m *PodMutator) Register(srv webhook.Server) {
	srv.Register(Path, &admission.Webhook{Handler: m, LogConstructor: requestLogger})
}

// requestLogger is the admission webhook's per-request logger: the base logger as it is. Handle
// names the pod and the request UID in each line it writes, so no request pays for building
// logger values (controller-runtime's default adds six, a clone of the zap core per request)
// when nothing is logged, as on nearly every admission.
func requestLogger(base logr.Logger, _ *admission.Request) logr.Logger { return base }

// Handle implements admission.Handler. It always allows the pod; it adds a patch only for a pod
// gangmap groups. The pod's JSON is decoded into gangmap's view of the pod (podview.DecodePod:
// the fields the decision reads, the same the pod controller's cache keeps), and the patch is a
// JSON patch of gangmap's own annotations and label on the request's raw object (see groupOps), so
// no field of the pod is ever re-encoded, changed or lost.
func (m *PodMutator) Handle(ctx context.Context, req admission.Request) (resp admission.Response) {
	var pod *corev1.Pod
	defer func() {
		if p := recover(); p != nil {
			resp = m.admitUnchanged(ctx, req, pod, nil, "Panic", fmt.Errorf("panic: %v", p))
		}
	}()
	if req.Operation != admissionv1.Create || req.Resource.Resource != "pods" || req.SubResource != "" {
		return skipped("not a pod creation")
	}
	decoded, err := podview.DecodePod(req.Object.Raw)
	if err != nil {
		return m.admitUnchanged(ctx, req, nil, nil, "Decode", err)
	}
	pod = decoded.Pod
	// On CREATE the pod's namespace may be empty in the object; the request has it (as KAI's
	// pod_mutator does).
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	if skip, err := m.excluded(ctx, decoded); err != nil {
		return m.admitUnchanged(ctx, req, pod, nil, "Namespace", err)
	} else if skip != "" {
		return skipped(skip)
	}
	if m.Timeout > 0 && m.onboardingActive() {
		// bounds onboarding's reads; decideWithin bounds the decision
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.Timeout)
		defer cancel()
	}
	pre, err := m.onboardPod(ctx, pod, decoded.HasMetadata, req.DryRun != nil && *req.DryRun)
	if err != nil {
		return m.admitUnchanged(ctx, req, pod, nil, "Onboard", err)
	}
	if pod.Spec.SchedulerName != m.Decider.SchedulerName {
		return skipped("not a pod of gangmap's scheduler")
	}
	return m.group(ctx, req, decoded, pre)
}

// excluded says why the webhook leaves the pod alone before onboarding and the decision ("" when
// it does not): another scheduler's pod no onboarding rule may take, or a pod the selectors
// exclude. Error: reading the pod's namespace.
func (m *PodMutator) excluded(ctx context.Context, decoded *podview.Decoded) (string, error) {
	pod := decoded.Pod
	switch {
	case pod.Spec.SchedulerName != m.Decider.SchedulerName && !m.mayOnboard(pod, decoded.HasMetadata):
		return "not a pod of gangmap's scheduler", nil
	case m.ObjectSelector != nil && !m.ObjectSelector.Empty() && !m.ObjectSelector.Matches(labels.Set(pod.Labels)):
		return "the object selector excludes the pod", nil
	case m.NamespaceSelector == nil || m.NamespaceSelector.Empty():
		return "", nil
	}
	ns := &corev1.Namespace{}
	if err := m.Namespaces.Get(ctx, client.ObjectKey{Name: pod.Namespace}, ns); err != nil {
		return "", err
	}
	if !m.NamespaceSelector.Matches(labels.Set(ns.Labels)) {
		return "the namespace selector excludes the pod's namespace", nil
	}
	return "", nil
}

// group decides the pod's PodGroup and answers with the onboarding patch pre (nil: none) and the
// patch of gangmap's keys (groupOps).
func (m *PodMutator) group(ctx context.Context, req admission.Request, decoded *podview.Decoded, pre []patchOp) admission.Response {
	pod := decoded.Pod
	var d *decide.Decision
	var err error
	if !m.Decider.KnownNotGrouped(pod) {
		d, err = m.decideWithin(ctx, pod)
	}
	switch {
	case decide.IsInvalidOwnerReference(err):
		// Not an error to log per admission: the pod has no owner for gangmap; the pod controller
		// tells the pod once, with a Warning Event, after it exists.
		if log := ctrl.LoggerFrom(ctx).V(1); log.Enabled() {
			log.Info("Owner reference ignored", "pod", klog.KRef(req.Namespace, pod.Name), "reason", err.Error())
		}
		return skipped("the pod's owner reference names no owner it may have")
	case (errors.Is(err, workloadmap.ErrPlanBuildsBusy) || decide.ClaimedFailure(err)) && !m.DryRun:
		return m.hold(ctx, req, decoded, pre, err)
	case err != nil:
		// with pre: onboarded, not grouped: the pod controller groups the (now KAI) pod moments later
		return m.admitUnchanged(ctx, req, pod, pre, "Decide", err)
	case d == nil && pre != nil:
		return patched(pre, "onboarded; not a pod gangmap groups")
	case d == nil:
		return skipped("not a pod gangmap groups")
	case m.DryRun:
		admittedDryRun.Inc()
		if log := ctrl.LoggerFrom(ctx).V(2); log.Enabled() {
			log.Info("Dry-run: the webhook would give the pod its PodGroup", decisionValues(req, pod, d)...)
		}
		return admission.Allowed("gangmap dry-run: unchanged")
	}
	ops, err := groupOps(decoded, d.Metadata.Name, d.SubGroup)
	if err != nil {
		return m.admitUnchanged(ctx, req, pod, pre, "Encode", err)
	}
	admittedMutated.Inc()
	if log := ctrl.LoggerFrom(ctx).V(1); log.Enabled() {
		log.Info("Pod given its PodGroup at creation", decisionValues(req, pod, d)...)
	}
	if len(pre)+len(ops) == 0 {
		return admission.Allowed("the pod already carries its PodGroup")
	}
	return patched(append(pre, ops...), "")
}

// patched allows the pod with the JSON patch of ops (onboarding's first, then gangmap's group
// keys). Encoding cannot fail: every value is a string or a map of strings (or of such maps).
func patched(ops []patchOp, msg string) admission.Response {
	resp := admission.Allowed(msg)
	resp.Patch, _ = json.Marshal(ops)
	resp.PatchType = ptr.To(admissionv1.PatchTypeJSONPatch)
	return resp
}

// patchOp is one JSON Patch (RFC 6902) operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// groupOps are the JSON patch (RFC 6902) operations that make on the admitted pod the change
// the pod controller makes: KAI's skip annotation and pod-group-name set, the sub-group label set
// (or removed when the pod has no sub-group). They touch nothing else: `add` (which also replaces
// an existing member) of /metadata/annotations/<key> and /metadata/labels/<key>, `add` of the
// whole /metadata/annotations or /metadata/labels map (or of /metadata) when the object has none,
// and `remove` of a stale sub-group label. Keys are escaped as JSON pointers ("~" as "~0", "/" as
// "~1"). None when the pod already carries every key. Error: an empty podGroup.
func groupOps(pod *podview.Decoded, podGroup, subGroup string) ([]patchOp, error) {
	if podGroup == "" {
		return nil, errors.New("no PodGroup name to set")
	}
	ann := map[string]string{kaikeys.SkipPodGrouper: "true", kaikeys.PodGroupName: podGroup}
	ops := metadataOps(pod, ann, subGroup, kaikeys.SkipPodGrouper, kaikeys.PodGroupName)
	if _, has := pod.Pod.Labels[kaikeys.SubGroupName]; subGroup == "" && has {
		ops = append(ops, patchOp{Op: "remove", Path: "/metadata/labels/" + escapePointer(kaikeys.SubGroupName)})
	}
	return ops, nil
}

// metadataOps are the operations that give the pod the annotations ann (keys in order) and, when
// subGroup is not "", the sub-group label: the whole metadata when the object has none, else
// setKeys of each.
func metadataOps(pod *podview.Decoded, ann map[string]string, subGroup string, keys ...string) []patchOp {
	var lbl map[string]string
	if subGroup != "" {
		lbl = map[string]string{kaikeys.SubGroupName: subGroup}
	}
	if !pod.HasMetadata {
		md := map[string]any{"annotations": ann}
		if lbl != nil {
			md["labels"] = lbl
		}
		return []patchOp{{Op: "add", Path: "/metadata", Value: md}}
	}
	ops := setKeys(make([]patchOp, 0, 3), "/metadata/annotations", pod.Pod.Annotations, ann, keys...)
	if lbl != nil {
		ops = setKeys(ops, "/metadata/labels", pod.Pod.Labels, lbl, kaikeys.SubGroupName)
	}
	return ops
}

// setKeys appends the operations that give the map at path (cur, nil when the object has none)
// the values in want, for keys in order: the whole map when there is none, else an `add` per key
// whose value differs.
func setKeys(ops []patchOp, path string, cur, want map[string]string, keys ...string) []patchOp {
	if cur == nil {
		return append(ops, patchOp{Op: "add", Path: path, Value: want})
	}
	for _, k := range keys {
		if v, ok := cur[k]; !ok || v != want[k] {
			ops = append(ops, patchOp{Op: "add", Path: path + "/" + escapePointer(k), Value: want[k]})
		}
	}
	return ops
}

// pointerEscaper escapes a JSON pointer reference token (RFC 6901: "~" as "~0", "/" as "~1").
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapePointer(s string) string { return pointerEscaper.Replace(s) }

// admitUnchanged allows the pod after an error, counted and logged: gangmap never blocks a pod
// creation. pre is the onboarding patch of a pod the policy already changed: it is kept (the pod
// controller groups the pod later). pod is the decoded pod, nil when decoding failed.
func (m *PodMutator) admitUnchanged(ctx context.Context, req admission.Request, pod *corev1.Pod, pre []patchOp, reason string, err error) admission.Response {
	countError(ctx, req, pod, reason, err, "Admitting the pod unchanged; the pod controller will group it")
	if len(pre) > 0 {
		return patched(pre, "onboarded; gangmap could not decide its PodGroup (the pod controller groups it)")
	}
	return admission.Allowed("gangmap could not decide; admitted unchanged")
}

// countError counts an admission that failed for reason and logs err with msg.
func countError(ctx context.Context, req admission.Request, pod *corev1.Pod, reason string, err error, msg string) {
	admittedError.Inc()
	admissionErrors.WithLabelValues(reason).Inc()
	ctrl.LoggerFrom(ctx).Error(err, msg, "reason", reason, "pod", klog.KRef(req.Namespace, podName(req, pod)), "uid", req.UID)
}

func skipped(msg string) admission.Response {
	admittedSkipped.Inc()
	return admission.Allowed(msg)
}

// decisionValues are the structured-log values of an admission gangmap decided.
func decisionValues(req admission.Request, pod *corev1.Pod, d *decide.Decision) []any {
	return []any{"pod", klog.KRef(req.Namespace, podName(req, pod)), "uid", req.UID,
		"podGroup", klog.KRef(d.Metadata.Namespace, d.Metadata.Name), "subGroup", d.SubGroup, "workload", klog.KObj(d.Owner)}
}

// podName is the pod's name for logs: the request's name, else the decoded pod's name or
// generateName (read from the pod decoded once, never parsed again for a log line).
func podName(req admission.Request, pod *corev1.Pod) string {
	if pod == nil {
		return req.Name
	}
	return cmp.Or(req.Name, pod.Name, pod.GenerateName)
}

// hold admits a pod of a kind gangmap groups whose decision failed with KAI's skip annotation
// (kai.scheduler/skip-podgrouper: "true") and gangmap's kaikeys.Held, and nothing else, keeping the onboarding patch pre: the
// plan gate refused its build for now (workloadmap.ErrPlanBuildsBusy, reason PlanBusy), or the
// decision failed after a definition claimed the workload (decide.DecideError.Claimed: its
// plan failed, its owner could not be read; reason Held). The pod is gangmap's to group: without
// the annotation KAI's pod-grouper could give it a PodGroup of its own (a never-seen workload is
// not marked yet) and KAI bind it outside its gang. With it, the pod waits with no PodGroup, which
// KAI's scheduler does not schedule, until gangmap's pod controller groups it (its retry builds
// the plan again) or, for a definition that cannot plan the workload, for as long as the
// controller reports the failure (GroupingFailed Events): a wrong definition fails loudly and
// never splits a gang.
func (m *PodMutator) hold(ctx context.Context, req admission.Request, decoded *podview.Decoded, pre []patchOp, err error) admission.Response {
	reason, msg := "Held", "gangmap could not decide the pod's PodGroup: the pod is held from KAI's pod-grouper until gangmap's pod controller groups it"
	if errors.Is(err, workloadmap.ErrPlanBuildsBusy) {
		reason, msg = "PlanBusy", "gangmap's plan builds are busy: the pod is held from KAI's pod-grouper until gangmap's pod controller groups it"
	}
	countError(ctx, req, decoded.Pod, reason, err, "Admitting the pod held from KAI's pod-grouper; the pod controller will group it")
	skip := map[string]string{kaikeys.SkipPodGrouper: "true", kaikeys.Held: "true"}
	return patched(append(pre, metadataOps(decoded, skip, "", kaikeys.SkipPodGrouper, kaikeys.Held)...), msg)
}

// ErrDecisionTimeout is the error of a decision that did not finish within PodMutator.Timeout.
var ErrDecisionTimeout = fmt.Errorf("the decision did not finish in time")

// decideWithin runs the decision on its own goroutine and waits for it at most m.Timeout (none
// when zero), so the webhook answers within its timeout whatever the decision does: reads that
// ignore their context, or a plan that is still being built (the plan build goes on and is
// cached for the pod controller, which repairs the pod). A decision that panics is an error.
func (m *PodMutator) decideWithin(ctx context.Context, pod *corev1.Pod) (*decide.Decision, error) {
	if m.Timeout <= 0 {
		return m.Decider.DecideShared(ctx, pod)
	}
	ctx, cancel := context.WithTimeout(ctx, m.Timeout)
	defer cancel()
	type result struct {
		d   *decide.Decision
		err error
	}
	done := make(chan result, 1) // buffered: a late decision never blocks its goroutine
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("panic: %v", p)}
			}
		}()
		d, err := m.Decider.DecideShared(ctx, pod)
		done <- result{d, err}
	}()
	select {
	case r := <-done:
		return r.d, r.err
	case <-ctx.Done(): // at m.Timeout, or when the request's context ends first
		return nil, fmt.Errorf("%w (%v): %w", ErrDecisionTimeout, m.Timeout, ctx.Err())
	}
}

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
