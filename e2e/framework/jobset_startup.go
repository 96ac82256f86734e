package framework

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StepJobSet plays one reconcile of the JobSet controller's start sequence on js (re-read from
// the API server), the way jobset pkg/controllers does it:
//   - it computes status.replicatedJobsStatus from the pods of each replicated job that exists
//     (calculateReplicatedJobStatuses): a Job counts as succeeded when all its pods Succeeded,
//     ready when all are Running and Ready, failed when one Failed, else active;
//   - it creates every replicated job not created yet whose dependsOn entries are reached
//     (depends_on.go dependencyReachedStatus: Complete = succeeded Jobs == the dependency's
//     replicas; Ready = ready + failed + succeeded == replicas), writing the status first, as the
//     controller's status update precedes the Job controller creating the new pods;
//   - under startupPolicyOrder InOrder it goes through the replicated jobs in spec order and
//     stops at the first one not started yet (jobset_controller.go reconcileReplicatedJobs with
//     startup_policy.go allReplicasStarted: ready + failed + succeeded == replicas), creating it
//     when it does not exist: each is created only once every one before it has started.
//
// It returns the pods it created. The Job controller is not running, so pods are created here and
// their phase is set by the test (SetPodPhase).
func (cp *ControlPlane) StepJobSet(ctx context.Context, namespace, name string) ([]*corev1.Pod, error) {
	js, rjs, err := cp.readJobSet(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	var pods corev1.PodList
	if err := cp.Client.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{LabelJobSetName: name}); err != nil {
		return nil, err
	}
	statuses, replicas := replicatedJobStatuses(rjs, pods.Items)
	status := make([]any, 0, len(statuses))
	for _, rj := range rjs {
		n, _ := rj.(map[string]any)["name"].(string)
		if st, ok := statuses[n]; ok {
			status = append(status, st)
		}
	}
	if err := unstructured.SetNestedSlice(js.Object, status, "status", "replicatedJobsStatus"); err != nil {
		return nil, err
	}
	if err := cp.Client.Status().Update(ctx, js); err != nil {
		return nil, fmt.Errorf("JobSet %s/%s status: %w", namespace, name, err)
	}
	inOrder, _, _ := unstructured.NestedString(js.Object, "spec", "startupPolicy", "startupPolicyOrder")
	var created []*corev1.Pod
	for _, item := range rjs {
		rj, _ := item.(map[string]any)
		n, _ := rj["name"].(string)
		if !dependenciesReached(rj, statuses, replicas) {
			continue
		}
		st, exists := statuses[n]
		if inOrder == "InOrder" && exists && started(st, replicas[n]) {
			continue
		}
		if !exists {
			p, err := cp.runReplicatedJob(ctx, js, rj)
			if err != nil {
				return nil, err
			}
			created = append(created, p...)
		}
		// InOrder: the controller waits for this replicated job to start before the next one.
		if inOrder == "InOrder" {
			break
		}
	}
	return created, nil
}

// started is jobset's allReplicasStarted (startup_policy.go): ready + failed + succeeded Jobs ==
// the replicated job's replicas.
func started(st map[string]any, replicas int64) bool {
	return st["ready"].(int64)+st["failed"].(int64)+st["succeeded"].(int64) == replicas
}

// replicatedJobStatuses counts, per replicated job with pods, its Jobs by state (see StepJobSet),
// and returns the replicas of every replicated job.
func replicatedJobStatuses(rjs []any, pods []corev1.Pod) (map[string]map[string]any, map[string]int64) {
	replicas := map[string]int64{}
	for _, item := range rjs {
		rj, _ := item.(map[string]any)
		n, _ := rj["name"].(string)
		r, found, _ := unstructured.NestedInt64(rj, "replicas")
		if !found {
			r = 1
		}
		replicas[n] = r
	}
	type jobKey struct{ rj, index string }
	jobs := map[jobKey][]corev1.Pod{}
	for _, p := range pods {
		k := jobKey{p.Labels[LabelReplicatedJobName], p.Labels[LabelJobIndex]}
		jobs[k] = append(jobs[k], p)
	}
	out := map[string]map[string]any{}
	for k, ps := range jobs {
		st := out[k.rj]
		if st == nil {
			st = map[string]any{"name": k.rj, "ready": int64(0), "succeeded": int64(0), "failed": int64(0), "active": int64(0), "suspended": int64(0)}
			out[k.rj] = st
		}
		st[jobState(ps)] = st[jobState(ps)].(int64) + 1
	}
	return out, replicas
}

func jobState(pods []corev1.Pod) string {
	succeeded, ready := 0, 0
	for _, p := range pods {
		switch {
		case p.Status.Phase == corev1.PodFailed:
			return "failed"
		case p.Status.Phase == corev1.PodSucceeded:
			succeeded++
		case p.Status.Phase == corev1.PodRunning && podReady(p):
			ready++
		}
	}
	switch {
	case succeeded == len(pods):
		return "succeeded"
	case ready+succeeded == len(pods):
		return "ready"
	default:
		return "active"
	}
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// dependenciesReached is jobset's dependencyReachedStatus for every dependsOn entry of rj.
func dependenciesReached(rj map[string]any, statuses map[string]map[string]any, replicas map[string]int64) bool {
	deps, _, _ := unstructured.NestedSlice(rj, "dependsOn")
	for _, d := range deps {
		dep, _ := d.(map[string]any)
		n, _ := dep["name"].(string)
		st, ok := statuses[n]
		if !ok {
			return false
		}
		switch dep["status"] {
		case "Complete":
			if st["succeeded"].(int64) != replicas[n] {
				return false
			}
		case "Ready":
			if st["ready"].(int64)+st["failed"].(int64)+st["succeeded"].(int64) != replicas[n] {
				return false
			}
		}
	}
	return true
}

// SetPodPhase sets a pod's status as the kubelet would for phase: Running with the Ready
// condition, or Succeeded.
func (cp *ControlPlane) SetPodPhase(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase) error {
	p := &corev1.Pod{}
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(pod), p); err != nil {
		return err
	}
	p.Status.Phase = phase
	ready := corev1.ConditionFalse
	if phase == corev1.PodRunning {
		ready = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
	return cp.Client.Status().Update(ctx, p)
}

// CreateReplicatedJob creates the Jobs and pods of the replicated job rj of the JobSet
// namespace/name (re-read from the API server) and writes no status: the pods of a replicated
// job the JobSet controller creates in a reconcile (jobset_controller.go createJobs) may exist
// before the JobSet's status.replicatedJobsStatus says why it was created, which StepJobSet
// never shows (it writes the status first).
func (cp *ControlPlane) CreateReplicatedJob(ctx context.Context, namespace, name, rj string) ([]*corev1.Pod, error) {
	js, rjs, err := cp.readJobSet(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	for _, item := range rjs {
		if m, _ := item.(map[string]any); m["name"] == rj {
			return cp.runReplicatedJob(ctx, js, m)
		}
	}
	return nil, fmt.Errorf("JobSet %s/%s has no replicated job %q", namespace, name, rj)
}

// readJobSet reads the JobSet namespace/name from the API server and returns it with its
// spec.replicatedJobs.
func (cp *ControlPlane) readJobSet(ctx context.Context, namespace, name string) (*unstructured.Unstructured, []any, error) {
	js := &unstructured.Unstructured{}
	js.SetAPIVersion("jobset.x-k8s.io/v1alpha2")
	js.SetKind("JobSet")
	if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, js); err != nil {
		return nil, nil, err
	}
	rjs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	return js, rjs, nil
}
