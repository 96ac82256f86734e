package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/lru"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
)

// ReasonPodOutsidePlan is the Warning Event, once per pod and instance, on a pod (and its
// workload) whose instance or replica the workload's gang plan does not count, also after the
// workload was re-read from the API server: the definition does not name it.
const ReasonPodOutsidePlan = findings.ReasonPodOutsidePlan

// podsOutsidePlan counts the pods reported with ReasonPodOutsidePlan.
var podsOutsidePlan = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
	Name: "gangmap_pods_outside_plan_total",
	Help: "Pods whose instance or replica the workload's gang plan does not count (the definition does not name it), counted once per pod and instance, by top-owner kind: such a pod waits in the gang's PodGroup in no sub-group (a flat gang counts it), reported in the workload's UnclaimedPods finding.",
}, []string{"kind"})

// reportOutsidePlan tells, once per pod and instance, that the pod is outside its workload's
// plan (d.Seen.NotInPlan, after the decider re-read the workload): a Warning Event on the pod and
// on the workload naming the workload, the pod, the instance and where the pod goes instead, an
// Info log, and gangmap_pods_outside_plan_total. It is no error to retry: nothing changes until the
// workload or the definition does, and either regroups the pod.
func (r *PodReconciler) reportOutsidePlan(ctx context.Context, pod *corev1.Pod, d *decide.Decision) {
	instance := "its instance"
	var nip *gang.NotInPlanError
	if errors.As(d.Seen.NotInPlan, &nip) {
		instance = nip.Instance
	}
	if !firstReport(r.outsidePlan, string(pod.UID), instance) {
		return
	}
	podsOutsidePlan.WithLabelValues(d.Kind.Kind).Inc()
	where := "it is left to KAI's pod-grouper (default grouping, outside the gang)"
	if d.Metadata != nil {
		where = fmt.Sprintf("it joins the gang's PodGroup %s in no sub-group, and KAI does not schedule it until the plan places it", d.Metadata.Name)
		if len(d.Metadata.SubGroups) == 0 {
			where = fmt.Sprintf("it joins the gang's PodGroup %s, counted in its minMember", d.Metadata.Name)
		}
	}
	definition := "the definition"
	if d.Seen.Definition != nil {
		definition = fmt.Sprintf("definition %q", d.Seen.Definition.Name())
	}
	owner := d.Owner
	msg := fmt.Sprintf("pod %s of %s %s/%s is in %s, which the gang plan of the workload's current version does not count (%v): %s does not name it (check its instanceIdPath, replicasPath and pod templates against the workload); %s",
		pod.Name, owner.GetKind(), owner.GetNamespace(), owner.GetName(), instance, d.Seen.NotInPlan, definition, where)
	ctrl.LoggerFrom(ctx).Info("Pod outside its workload's gang plan", "workload", owner.GetName(), "instance", instance, "reason", d.Seen.NotInPlan.Error())
	r.Recorder.Event(pod, corev1.EventTypeWarning, ReasonPodOutsidePlan, msg)
	r.Recorder.Event(owner, corev1.EventTypeWarning, ReasonPodOutsidePlan, msg)
}

// reportedPods bounds the pods a memory of firstReport holds: the oldest are forgotten first.
const reportedPods = 4096

// firstReport says whether this is the first report in seen (pods already told something, so
// that a pod reconciled again, any change to it, is not told the same thing again) under the key
// made of parts (the pod's UID first).
func firstReport(seen *lru.Cache, parts ...string) bool {
	key := strings.Join(parts, "|")
	if _, ok := seen.Get(key); ok {
		return false
	}
	seen.Add(key, struct{}{})
	return true
}
