package webhook

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/definitions/onboard"
	"github.com/gangmap/gangmap/podgrouper/core/owners"
	"github.com/gangmap/gangmap/podgrouper/runtime/onboarding"
)

// onboarded counts the pods an onboarding rule matched at creation, by rule and result.
var onboarded = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
	Name: "gangmap_onboarded_pods_total",
	Help: "Pods the onboarding policy matched at creation, by rule and result (Onboarded, DryRun, NoQueue, OtherScheduler, NamespaceQueueMissing).",
}, []string{"rule", "result"})

// Onboarded results, the result label of gangmap_onboarded_pods_total: the pod was onboarded,
// would have been in shadow mode (DryRun), was onboarded without a queue (NoQueue: the top owner
// lacks the queue label) or was left alone as it names another scheduler (OtherScheduler).
const (
	OnboardedResult     = "Onboarded"
	OnboardedDryRun     = "DryRun"
	OnboardedNoQueue    = "NoQueue"
	OnboardedOtherSched = "OtherScheduler"
	// OnboardedRefused: the rule selects the pod's namespace but the namespace lacks the label
	// the rule takes the queue from; the pod is created unchanged.
	OnboardedRefused     = "NamespaceQueueMissing"
	onboardedEventReason = "GangmapOnboarded"
)

// onboardingActive reports whether an onboarding policy with rules is in force (a rule may then
// apply to a pod of another scheduler).
func (m *PodMutator) onboardingActive() bool { return m.Onboarding != nil && !m.Onboarding().Empty() }

// mayOnboard reports whether a rule could apply to pod, cheaply, before any read: the policy has
// rules, and the pod has metadata, owners and another scheduler name.
func (m *PodMutator) mayOnboard(pod *corev1.Pod, hasMetadata bool) bool {
	return hasMetadata && len(pod.OwnerReferences) > 0 && pod.Spec.SchedulerName != m.Decider.SchedulerName && m.onboardingActive()
}

// onboardPod applies the onboarding policy to a pod at creation, before gangmap decides its
// PodGroup: a pod whose top owner is a kind a rule names, in a namespace the rule selects, is given
// the rule's scheduler name, queue label, labels and annotations (onboard.Settings.Changes, the
// rules `gangmap onboard` applies to manifests). It returns the JSON patch operations that onboard
// pod and applies the same changes to pod (so the grouping decision sees a KAI pod), or nil when
// no rule applies; its error leaves the pod as it is (Handle admits it unchanged). The
// top owner is found by d's owner walk (the decision's own, cached). In dry run (shadow mode) it
// reports and changes nothing. Only pods with owner references and metadata are onboarded.
//
// dryRunRequest is the admission request's dryRun (kubectl create --dry-run=server): the pod gets
// the same patch, so the dry run shows what a create would, but no Event is recorded and nothing
// counted, since no pod is created (the chart declares the webhook sideEffects: None).
func (m *PodMutator) onboardPod(ctx context.Context, pod *corev1.Pod, hasMetadata, dryRunRequest bool) ([]patchOp, error) {
	if !m.mayOnboard(pod, hasMetadata) {
		return nil, nil
	}
	policy := m.Onboarding()
	chain, err := m.Decider.Walker.Walk(ctx, pod.Namespace, pod.OwnerReferences)
	var invalid *owners.InvalidReferenceError
	if errors.As(err, &invalid) || (err != nil && (apierrors.IsNotFound(err) || meta.IsNoMatchError(err))) {
		// An owner reference the pod may not have (another namespace's object, a replaced owner),
		// or an owner that does not exist (deleted, made up, of a kind the API server does not
		// serve): the pod has no owner for gangmap, so no rule applies; not an error to count per
		// pod (the decision path treats it the same, and the pod controller tells the pod once).
		return nil, nil
	}
	if err != nil || chain == nil {
		return nil, fmt.Errorf("finding the top owner to onboard the pod: %w", err)
	}
	top := chain.Top()
	t := onboarding.Target{Kind: top.GroupVersionKind().GroupKind(), OwnerLabels: top.Labels, Namespace: pod.Namespace}
	if policy.NeedsNamespaces() {
		ns := &corev1.Namespace{}
		if err := m.Namespaces.Get(ctx, client.ObjectKey{Name: pod.Namespace}, ns); err != nil {
			return nil, fmt.Errorf("reading namespace %s to onboard the pod: %w", pod.Namespace, err)
		}
		t.NamespaceLabels = ns.Labels
	}
	match := policy.Match(t, m.Decider.SchedulerName, m.QueueLabelKey)
	if match == nil {
		return nil, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("rule", match.Rule, "workload", klog.KRef(top.Namespace, top.Name), "kind", t.Kind)
	ref := &corev1.ObjectReference{APIVersion: top.APIVersion, Kind: top.Kind, Namespace: top.Namespace, Name: top.Name, UID: top.UID}
	// report counts the pod by result and, unless msg is "", records the Event on its workload;
	// both only for pods that are created.
	report := func(result, typ, msg string) {
		if dryRunRequest {
			return
		}
		onboarded.WithLabelValues(match.Rule, result).Inc()
		if msg != "" && m.Recorder != nil {
			m.Recorder.Event(ref, typ, onboardedEventReason, msg)
		}
	}
	if match.Refused != nil {
		log.V(1).Info("Pod not onboarded: the rule's queue source is missing on the namespace", "problem", match.Refused.Error())
		report(OnboardedRefused, corev1.EventTypeWarning, "Pods not onboarded: "+match.Refused.Error())
		return nil, nil
	}
	changes, err := match.Settings.Changes(podDocument(pod), onboard.PodSlots(nil))
	var skip *onboard.SkipError
	if errors.As(err, &skip) {
		report(OnboardedOtherSched, "", "")
		log.V(1).Info("Pod names another scheduler; the onboarding rule does not override it", "scheduler", skip.Scheduler)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if m.DryRun {
		report(OnboardedDryRun, "", "")
		log.Info("Dry-run: the onboarding policy would set on the pod", "changes", len(changes))
		return nil, nil
	}
	ops := onboardPod(pod, changes)
	log.V(1).Info("Pod onboarded", "changes", len(changes), "problem", match.Problem, "dryRunRequest", dryRunRequest)
	// a Warning when the pod got no queue label (the problem says why)
	msg := fmt.Sprintf("Pods onboarded to %s by onboarding rule %s", pod.Spec.SchedulerName, match.Rule)
	if match.Problem != "" {
		report(OnboardedNoQueue, corev1.EventTypeWarning, msg+" without a queue label: "+match.Problem)
	} else {
		report(OnboardedResult, corev1.EventTypeNormal, msg)
	}
	return ops, nil
}

// podDocument is the part of pod that onboarding reads, in JSON shape.
func podDocument(pod *corev1.Pod) map[string]any {
	md := map[string]any{}
	if pod.Labels != nil {
		md["labels"] = stringMap(pod.Labels)
	}
	if pod.Annotations != nil {
		md["annotations"] = stringMap(pod.Annotations)
	}
	return map[string]any{"metadata": md, "spec": map[string]any{"schedulerName": pod.Spec.SchedulerName}}
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// onboardPod makes changes on the typed pod and returns their JSON patch operations on the pod as
// admitted: `add` of /spec/schedulerName, of each label and annotation, or of the whole map when
// the pod has none. Nothing else of the pod is touched.
func onboardPod(pod *corev1.Pod, changes []onboard.Change) []patchOp {
	var ops []patchOp
	labels, annotations := map[string]string{}, map[string]string{}
	for _, c := range changes {
		switch {
		case len(c.Path) == 2 && c.Path[0] == "spec" && c.Path[1] == "schedulerName":
			ops = append(ops, patchOp{Op: "add", Path: "/spec/schedulerName", Value: c.New})
			pod.Spec.SchedulerName = c.New
		case len(c.Path) == 3 && c.Path[1] == "labels":
			labels[c.Path[2].(string)] = c.New
		case len(c.Path) == 3 && c.Path[1] == "annotations":
			annotations[c.Path[2].(string)] = c.New
		}
	}
	ops = addKeys(ops, "/metadata/labels", &pod.Labels, labels)
	return addKeys(ops, "/metadata/annotations", &pod.Annotations, annotations)
}

// addKeys appends the operations that set want in the map *m (the pod's, nil when absent): the
// whole map when absent, else an `add` per key, in key order (setKeys: each key of want is one
// the onboarding changes, absent or different in *m); then sets them in *m.
func addKeys(ops []patchOp, path string, m *map[string]string, want map[string]string) []patchOp {
	if len(want) == 0 {
		return ops
	}
	ops = setKeys(ops, path, *m, want, slices.Sorted(maps.Keys(want))...)
	if *m == nil {
		*m = make(map[string]string, len(want))
	}
	maps.Copy(*m, want)
	return ops
}
