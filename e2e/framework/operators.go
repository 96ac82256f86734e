package framework

import (
	"context"
	"crypto/sha1" //nolint:gosec // the JobSet controller's job key is a SHA-1
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// The control plane runs no workload operators, so these functions create what each operator
// creates, with the owner references and labels its documentation gives. Each returns the pods.

// JobSet labels (jobset.x-k8s.io API docs).
const (
	LabelJobSetName        = "jobset.sigs.k8s.io/jobset-name"
	LabelReplicatedJobName = "jobset.sigs.k8s.io/replicatedjob-name"
	LabelJobIndex          = "jobset.sigs.k8s.io/job-index"
	// LabelJobCompletionIndex is the Job controller's pod index of an Indexed Job (label and
	// annotation, batch.kubernetes.io).
	LabelJobCompletionIndex = "batch.kubernetes.io/job-completion-index"
)

// RunJobSet creates, for each replicated job, replicas Jobs owned by the JobSet and
// min(parallelism, completions) pods per Job owned by their Job (parallelism defaults to 1).
func (cp *ControlPlane) RunJobSet(ctx context.Context, js *unstructured.Unstructured) ([]*corev1.Pod, error) {
	rjs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	var pods []*corev1.Pod
	for _, item := range rjs {
		rj, _ := item.(map[string]any)
		p, err := cp.runReplicatedJob(ctx, js, rj)
		if err != nil {
			return nil, err
		}
		pods = append(pods, p...)
	}
	return pods, nil
}

// runReplicatedJob creates one replicated job's Jobs and their pods, as RunJobSet does.
func (cp *ControlPlane) runReplicatedJob(ctx context.Context, js *unstructured.Unstructured, rj map[string]any) ([]*corev1.Pod, error) {
	name, _ := rj["name"].(string)
	replicas, found, _ := unstructured.NestedInt64(rj, "replicas")
	if !found {
		replicas = 1
	}
	jobSpec := batchv1.JobSpec{}
	if m, ok, _ := unstructured.NestedMap(rj, "template", "spec"); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &jobSpec); err != nil {
			return nil, fmt.Errorf("replicated job %s: %w", name, err)
		}
	}
	perJob := int32(1)
	if jobSpec.Parallelism != nil {
		perJob = *jobSpec.Parallelism
	}
	if jobSpec.Completions != nil && *jobSpec.Completions < perJob {
		perJob = *jobSpec.Completions
	}
	if jobSpec.Template.Spec.RestartPolicy == "" {
		jobSpec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	var pods []*corev1.Pod
	for j := int64(0); j < replicas; j++ {
		jobName := fmt.Sprintf("%s-%s-%d", js.GetName(), name, j)
		labels := jobSetLabels(js, name, jobName, replicas, j)
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: jobName, Namespace: js.GetNamespace(),
			Labels: labels, Annotations: mergeLabels(nil, labels), OwnerReferences: []metav1.OwnerReference{UnstructuredOwnerRef(js)}}, Spec: *jobSpec.DeepCopy()}
		job.Spec.Template.Labels = mergeLabels(job.Spec.Template.Labels, labels)
		job.Spec.Template.Annotations = mergeLabels(job.Spec.Template.Annotations, labels)
		fillImages(&job.Spec.Template.Spec)
		// The job controller is not running: suspend the Job so nothing else would act on it.
		job.Spec.Suspend = ptr.To(true)
		if err := cp.Client.Create(ctx, job); err != nil {
			return nil, fmt.Errorf("job %s: %w", job.Name, err)
		}
		// The Job controller makes pods from the stored Job's template, which the API server gave
		// the Job's selector labels (batch.kubernetes.io/controller-uid, job-name, ...). Its
		// defaulting also wrote schedulerName default-scheduler into it where the JobSet said
		// none; the template's own (none: PodFromTemplate's kai-scheduler) is kept, as the e2e's
		// pods always had.
		tpl := job.Spec.Template.DeepCopy()
		tpl.Spec.SchedulerName = jobSpec.Template.Spec.SchedulerName
		for p := int32(0); p < perJob; p++ {
			pod := PodFromTemplate(tpl, js.GetNamespace(), fmt.Sprintf("%s-%d", job.Name, p), nil, OwnerRef(job, "batch/v1", "Job"))
			if jobSpec.CompletionMode == nil || *jobSpec.CompletionMode == batchv1.IndexedCompletion {
				// JobSet's webhook defaults completionMode to Indexed (jobset_webhook.go Default); the
				// Job controller then annotates and labels each pod with its completion index.
				pod.Labels[LabelJobCompletionIndex] = fmt.Sprint(p)
				if pod.Annotations == nil {
					pod.Annotations = map[string]string{}
				}
				pod.Annotations[LabelJobCompletionIndex] = fmt.Sprint(p)
			}
			if err := cp.Client.Create(ctx, pod); err != nil {
				return nil, fmt.Errorf("pod %s: %w", pod.Name, err)
			}
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// jobSetLabels are the labels (and annotations) the JobSet controller puts on Job number j of the
// replicated job rj and on its pod template (jobset pkg/controllers/jobset_controller.go
// labelAndAnnotateObject): the JobSet and replicated job names, restart attempt 0, the replicated
// job's and the JobSet's total replicas, the Job's index and global index (its place among every
// replicated job's Jobs in spec order), and the job key, the SHA-1 of "<namespace>/<job name>"
// (jobHashKey).
func jobSetLabels(js *unstructured.Unstructured, rj, jobName string, replicas, j int64) map[string]string {
	rjs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	var global, before int64
	for _, item := range rjs {
		m, _ := item.(map[string]any)
		r, found, _ := unstructured.NestedInt64(m, "replicas")
		if !found {
			r = 1
		}
		if m["name"] == rj {
			before = global
		}
		global += r
	}
	return map[string]string{
		LabelJobSetName: js.GetName(), LabelReplicatedJobName: rj, LabelJobIndex: fmt.Sprint(j),
		"jobset.sigs.k8s.io/restart-attempt": "0", "jobset.sigs.k8s.io/replicatedjob-replicas": fmt.Sprint(replicas),
		"jobset.sigs.k8s.io/global-replicas": fmt.Sprint(global), "jobset.sigs.k8s.io/job-global-index": fmt.Sprint(before + j),
		"jobset.sigs.k8s.io/job-key": fmt.Sprintf("%x", sha1.Sum([]byte(js.GetNamespace()+"/"+jobName))),
	}
}

// LeaderWorkerSet labels (leaderworkerset.x-k8s.io API docs).
const (
	LabelLWSName     = "leaderworkerset.sigs.k8s.io/name"
	LabelGroupIndex  = "leaderworkerset.sigs.k8s.io/group-index"
	LabelWorkerIndex = "leaderworkerset.sigs.k8s.io/worker-index"
)

// RunLeaderWorkerSet creates what the LWS controller creates: a leader StatefulSet owned by the
// LWS with one leader pod per group (worker index 0), and per group a worker StatefulSet owned by
// that group's leader pod with size-1 worker pods. A missing leaderTemplate means the leader uses
// the worker template.
func (cp *ControlPlane) RunLeaderWorkerSet(ctx context.Context, lws *unstructured.Unstructured) ([]*corev1.Pod, error) {
	s, err := readLWSShape(lws)
	if err != nil {
		return nil, err
	}
	leaderSts := statefulSet(s.name, s.namespace, s.leader, int32(s.replicas), UnstructuredOwnerRef(lws))
	if err := cp.Client.Create(ctx, leaderSts); err != nil {
		return nil, fmt.Errorf("leader statefulset: %w", err)
	}
	var pods []*corev1.Pod
	for g := int64(0); g < s.replicas; g++ {
		lp := s.leaderPod(g, leaderSts)
		if err := cp.Client.Create(ctx, lp); err != nil {
			return nil, fmt.Errorf("leader pod: %w", err)
		}
		pods = append(pods, lp)
		if s.size < 2 {
			continue
		}
		workers, err := cp.createWorkers(ctx, s, g, lp)
		if err != nil {
			return nil, err
		}
		pods = append(pods, workers...)
	}
	return pods, nil
}

func template(obj *unstructured.Unstructured, path ...string) (*corev1.PodTemplateSpec, error) {
	m, ok, _ := unstructured.NestedMap(obj.Object, path...)
	if !ok {
		return nil, nil
	}
	tpl := &corev1.PodTemplateSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, tpl); err != nil {
		return nil, fmt.Errorf("%v: %w", path, err)
	}
	return tpl, nil
}

func statefulSet(name, ns string, tpl *corev1.PodTemplateSpec, replicas int32, owner metav1.OwnerReference) *appsv1.StatefulSet {
	sel := map[string]string{"gangmap.io/e2e-statefulset": name}
	t := tpl.DeepCopy()
	t.Labels = mergeLabels(t.Labels, sel)
	fillImages(&t.Spec)
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: *t},
	}
}

func mergeLabels(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func fillImages(spec *corev1.PodSpec) {
	for i := range spec.Containers {
		if spec.Containers[i].Image == "" {
			spec.Containers[i].Image = "registry.example/none:0"
		}
	}
}
