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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/workloadmap"
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
	// Onboarding, when set, applies the onboarding policy to pods before the decision.
	Onboarding *Onboarder
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
			resp = m.admitUnchanged(ctx, req, pod, "Panic", fmt.Errorf("panic: %v", p))
		}
	}()
	if req.Operation != admissionv1.Create || req.Resource.Resource != "pods" || req.SubResource != "" {
		return skipped("not a pod creation")
	}
	decoded, err := podview.DecodePod(req.Object.Raw)
	if err != nil {
		return m.admitUnchanged(ctx, req, nil, "Decode", err)
	}
	pod = decoded.Pod
	// On CREATE the pod's namespace may be empty in the object; the request has it (as KAI's
	// pod_mutator does).
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	if pod.Spec.SchedulerName != m.Decider.SchedulerName && !m.Onboarding.mayOnboard(pod, decoded.HasMetadata) {
		return skipped("not a pod of gangmap's scheduler")
	}
	if m.ObjectSelector != nil && !m.ObjectSelector.Empty() && !m.ObjectSelector.Matches(labels.Set(pod.Labels)) {
		return skipped("the object selector excludes the pod")
	}
	if m.NamespaceSelector != nil && !m.NamespaceSelector.Empty() {
		ns := &corev1.Namespace{}
		if err := m.Namespaces.Get(ctx, client.ObjectKey{Name: pod.Namespace}, ns); err != nil {
			return m.admitUnchanged(ctx, req, pod, "Namespace", err)
		}
		if !m.NamespaceSelector.Matches(labels.Set(ns.Labels)) {
			return skipped("the namespace selector excludes the pod's namespace")
		}
	}
	if m.Timeout > 0 && onboardingActive(m.Onboarding) {
		// bounds onboarding's reads; decideWithin bounds the decision
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.Timeout)
		defer cancel()
	}
	pre, err := m.onboardPod(ctx, pod, decoded.HasMetadata, req.DryRun != nil && *req.DryRun)
	if err != nil {
		return m.admitUnchanged(ctx, req, pod, "Onboard", err)
	}
	if pod.Spec.SchedulerName != m.Decider.SchedulerName {
		return skipped("not a pod of gangmap's scheduler")
	}
	var d *decide.Decision
	if !m.Decider.KnownNotGrouped(pod) {
		d, err = m.decideWithin(ctx, pod)
	}
	if decide.IsInvalidOwnerReference(err) {
		// Not an error to log per admission: the pod has no owner for gangmap; the pod controller
		// tells the pod once, with a Warning Event, after it exists.
		if log := ctrl.LoggerFrom(ctx).V(1); log.Enabled() {
			log.Info("Owner reference ignored", "pod", klog.KRef(req.Namespace, pod.Name), "reason", err.Error())
		}
		return skipped("the pod's owner reference names no owner it may have")
	}
	if (errors.Is(err, workloadmap.ErrPlanBuildsBusy) || decide.ClaimedFailure(err)) && !m.DryRun {
		return m.hold(ctx, req, decoded, pod, pre, err)
	}
	if err != nil {
		if pre != nil {
			// onboarded, not grouped: the pod controller groups the (now KAI) pod moments later
			return m.admitWith(ctx, req, pod, pre, "Decide", err)
		}
		return m.admitUnchanged(ctx, req, pod, "Decide", err)
	}
	if d == nil {
		if pre != nil {
			return patched(pre, "onboarded; not a pod gangmap groups")
		}
		return skipped("not a pod gangmap groups")
	}
	if m.DryRun {
		admittedDryRun.Inc()
		if log := ctrl.LoggerFrom(ctx).V(2); log.Enabled() {
			log.Info("Dry-run: the webhook would give the pod its PodGroup", decisionValues(req, pod, d)...)
		}
		return admission.Allowed("gangmap dry-run: unchanged")
	}
	ops, err := groupOps(decoded, d.Metadata.Name, d.SubGroup)
	if err != nil {
		return m.admitWith(ctx, req, pod, pre, "Encode", err)
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

// patched allows the pod with the JSON patch of ops (onboarding's first, then gangmap's group keys).
func patched(ops []patchOp, msg string) admission.Response {
	patch, err := json.Marshal(ops)
	if err != nil {
		return admission.Allowed("gangmap could not encode its patch; admitted unchanged")
	}
	pt := admissionv1.PatchTypeJSONPatch
	resp := admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: true, Patch: patch, PatchType: &pt}}
	if msg != "" {
		resp.Result = &metav1.Status{Message: msg}
	}
	return resp
}

// admitWith is admitUnchanged for a pod the onboarding policy already changed: the onboarding
// patch is kept (the pod controller groups the pod later), the error counted and logged.
func (m *PodMutator) admitWith(ctx context.Context, req admission.Request, pod *corev1.Pod, pre []patchOp, reason string, err error) admission.Response {
	resp := m.admitUnchanged(ctx, req, pod, reason, err)
	if len(pre) == 0 {
		return resp
	}
	return patched(pre, "onboarded; gangmap could not decide its PodGroup (the pod controller groups it)")
}

// onboardingActive reports whether an onboarding policy with rules is in force (a rule may then
// apply to a pod of another scheduler).
func onboardingActive(o *Onboarder) bool {
	return o != nil && o.Policy != nil && !o.Policy().Empty()
}

// admitUnchanged allows the pod as it is after an error: gangmap never blocks a pod creation.
// pod is the decoded pod, nil when decoding failed.
func (m *PodMutator) admitUnchanged(ctx context.Context, req admission.Request, pod *corev1.Pod, reason string, err error) admission.Response {
	admittedError.Inc()
	admissionErrors.WithLabelValues(reason).Inc()
	ctrl.LoggerFrom(ctx).Error(err, "Admitting the pod unchanged; the pod controller will group it",
		"reason", reason, "pod", klog.KRef(req.Namespace, podName(req, pod)), "uid", req.UID)
	return admission.Allowed("gangmap could not decide; admitted unchanged")
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
	switch {
	case req.Name != "":
		return req.Name
	case pod == nil:
		return ""
	case pod.Name != "":
		return pod.Name
	default:
		return pod.GenerateName
	}
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
func (m *PodMutator) hold(ctx context.Context, req admission.Request, decoded *podview.Decoded, pod *corev1.Pod, pre []patchOp, err error) admission.Response {
	reason, msg := "Held", "gangmap could not decide the pod's PodGroup: the pod is held from KAI's pod-grouper until gangmap's pod controller groups it"
	if errors.Is(err, workloadmap.ErrPlanBuildsBusy) {
		reason, msg = "PlanBusy", "gangmap's plan builds are busy: the pod is held from KAI's pod-grouper until gangmap's pod controller groups it"
	}
	admittedError.Inc()
	admissionErrors.WithLabelValues(reason).Inc()
	ctrl.LoggerFrom(ctx).Error(err, "Admitting the pod held from KAI's pod-grouper; the pod controller will group it",
		"reason", reason, "pod", klog.KRef(req.Namespace, podName(req, pod)), "uid", req.UID)
	skip := map[string]string{kaikeys.SkipPodGrouper: "true", kaikeys.Held: "true"}
	var ops []patchOp
	if decoded.HasMetadata {
		ops = setKeys(nil, "/metadata/annotations", decoded.Pod.Annotations, skip, kaikeys.SkipPodGrouper, kaikeys.Held)
	} else {
		ops = []patchOp{{Op: "add", Path: "/metadata", Value: map[string]any{"annotations": skip}}}
	}
	return patched(append(pre, ops...), msg)
}
