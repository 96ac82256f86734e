package kaiplugin

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/grouper"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// DefaultTimeout bounds one call of Grouper.Metadata when Timeout is zero: KAI's Grouper
// interface has no context (pkg/podgrouper/podgrouper/plugins/grouper/interface.go), so the
// plugin makes its own. A plan build is also bounded by the workload grouper's PlanTimeout.
const DefaultTimeout = 10 * time.Second

// Observer records gangmap's decisions inside KAI's pod-grouper for the findings and the
// workload metrics (inkai.Observer: its state lives in the runtime, beside KAI's manager cache).
type Observer interface {
	// Observe records the decision d for pod (its PodGroup, role and what the plan saw).
	Observe(ctx context.Context, pod *corev1.Pod, d *decide.Decision)
	// Forget drops what was recorded of the pod (it is in no PodGroup of gangmap's now).
	Forget(pod types.NamespacedName)
}

// Grouper is gangmap's grouper as KAI's pod-grouper calls it for a kind Hub.Choose gave
// Gangmap: the same decision as the standalone grouper's (decide.Decider.DecideOwned on the
// same workload grouper), converted to KAI's shape (KAIMetadata).
type Grouper struct {
	// Decider re-reads a top owner older than its pod (its APIReader); it needs no walker, hub or
	// access checker: KAI walked the owners and read the top owner.
	Decider *decide.Decider
	// Grouper is gangmap's workload grouper (a *workloadmap.Grouper with KAIPlugin set, so a pod
	// the definition places in no gang gets KAI's default PodGroup rather than none).
	Grouper grouper.Grouper
	// PodGroups reads the existing PodGroup of a pod whose metadata has deferred sub-groups
	// (KAIMetadata needs it for the start order); nil: none is read (as if none existed).
	PodGroups PodGroupReader
	// Timeout bounds one call (zero: DefaultTimeout).
	Timeout time.Duration
	// Log is the logger (the discard logger when unset).
	Log logr.Logger
	// Observer, when set, records each decision for the findings and the workload metrics
	// (inkai.Observer inside KAI's pod-grouper).
	Observer Observer
	// Shadow, when set, is shadow mode (see Shadow): KAI's own grouper's result is written, and
	// Shadow tells how gangmap's differs. The nested module's hub reads it.
	Shadow *Shadow
}

// Metadata returns the KAI-shaped metadata of the pod's PodGroup (KAIMetadata: detached from
// gangmap's plan cache), or nil without an error when gangmap's grouper places the pod in no
// PodGroup (KAI's pod controller then leaves the pod alone, its contract for a nil result).
// topOwner is the top owner as KAI read it (its cached unstructured client), owners KAI's chain
// from the pod's direct owner to the top owner. Errors name the pod and its workload; they come
// from the plan (a definition that does not fit the workload), a re-read of the workload, or the
// timeout.
func (g *Grouper) Metadata(topOwner *unstructured.Unstructured, pod *corev1.Pod, owners ...*metav1.PartialObjectMetadata) (*podgroup.Metadata, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(max(g.Timeout, 0), DefaultTimeout))
	defer cancel()
	log := g.Log.WithValues("pod", klog.KObj(pod), "workload", klog.KObj(topOwner), "kind", topOwner.GroupVersionKind().String())
	ctx = logf.IntoContext(ctx, log)
	start := time.Now()
	dec, err := g.Decider.DecideOwned(ctx, g.Grouper, topOwner, owners, pod)
	decisionSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		decisions.WithLabelValues(resultError).Inc()
		return nil, fmt.Errorf("gangmap: pod %s/%s of %s %s: %w", pod.Namespace, pod.Name, topOwner.GetKind(), topOwner.GetName(), err)
	}
	if dec == nil {
		decisions.WithLabelValues(resultNone).Inc()
		if g.Observer != nil {
			g.Observer.Forget(client.ObjectKeyFromObject(pod))
		}
		log.V(1).Info("gangmap places the pod in no PodGroup")
		return nil, nil
	}
	if g.Observer != nil {
		g.Observer.Observe(ctx, pod, dec)
	}
	var existing *v2alpha2.PodGroup
	if g.PodGroups != nil && dec.Metadata.HasDeferred() && !dec.Metadata.DropDeferred {
		if existing, err = g.PodGroups(ctx, dec.Metadata.Namespace, dec.Metadata.Name); err != nil {
			decisions.WithLabelValues(resultError).Inc()
			return nil, fmt.Errorf("gangmap: pod %s/%s: reading PodGroup %s: %w", pod.Namespace, pod.Name, dec.Metadata.Name, err)
		}
	}
	decisions.WithLabelValues(resultGrouped).Inc()
	log.V(1).Info("Grouped by gangmap", "podGroup", dec.Metadata.Name, "subGroup", dec.SubGroup)
	return KAIMetadata(dec.Metadata, existing), nil
}

// PodGroupReader returns the PodGroup namespace/name as the cluster has it now, in gangmap's copy
// of the type, or nil without an error when there is none. The nested module reads KAI's typed
// PodGroup through KAI's manager cache (the informer KAI's handler reads too).
type PodGroupReader func(ctx context.Context, namespace, name string) (*v2alpha2.PodGroup, error)

// Results of Grouper.Metadata, the result label of gangmap_kai_plugin_decisions_total.
const (
	resultGrouped = "Grouped"
	resultNone    = "NoPodGroup"
	resultError   = "Error"
)

var (
	decisions = withSeries(promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
		Name: "gangmap_kai_plugin_decisions_total",
		Help: "Pods gangmap's grouper decided inside KAI's pod-grouper, by result: Grouped (a PodGroup, a gang or KAI's default one for a pod in no gang), NoPodGroup (none: KAI leaves the pod alone), Error (KAI retries the pod and records a PodGrouperWarning Event).",
	}, []string{"result"}), resultGrouped, resultNone, resultError)
	decisionSeconds = promauto.With(metrics.Registry).NewHistogram(prometheus.HistogramOpts{
		Name:    "gangmap_kai_plugin_decision_duration_seconds",
		Help:    "Time gangmap's grouper took to decide one pod's PodGroup inside KAI's pod-grouper (plan from cache or built, pod placement, re-read of a stale workload).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9),
	})
)
