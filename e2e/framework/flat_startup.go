package framework

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Pod labels the Volcano job controller and the mpi-operator write (volcano
// pkg/controllers/job/job_controller_util.go createJobPod; mpi-operator
// pkg/controller/mpi_job_controller.go defaultLabels, newWorker).
const (
	LabelVolcanoJobName   = "volcano.sh/job-name"
	LabelVolcanoTaskSpec  = "volcano.sh/task-spec"
	LabelVolcanoTaskIndex = "volcano.sh/task-index"
	LabelMPIJobName       = "training.kubeflow.org/job-name"
	LabelMPIJobRole       = "training.kubeflow.org/job-role"
)

// StepVolcanoJob plays one sync of Volcano's job controller on the named Job
// (batch.volcano.sh/v1alpha1, re-read from the API server): for every task, in spec order, the
// missing pods <job>-<task>-<index> (jobhelpers.MakePodName), owned by the Job, with the Job's
// schedulerName when the template names none and the labels createJobPod writes. A task with
// dependsOn gets its pods only once every task it names is ready (job_controller_actions.go
// syncJob, waitDependsOnTaskMeetCondition, isDependsOnPodsReady: at least the task's
// minAvailable pods Running or Succeeded and ready; Volcano's mutating webhook defaults a task's
// minAvailable to its replicas). It returns the pods it created. Pod phases come from kwok or
// the test.
func (cp *ControlPlane) StepVolcanoJob(ctx context.Context, namespace, name string) ([]*corev1.Pod, error) {
	job := &unstructured.Unstructured{}
	job.SetAPIVersion("batch.volcano.sh/v1alpha1")
	job.SetKind("Job")
	if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, job); err != nil {
		return nil, err
	}
	pods := &corev1.PodList{}
	if err := cp.Client.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{LabelVolcanoJobName: name}); err != nil {
		return nil, err
	}
	tasks, _, _ := unstructured.NestedSlice(job.Object, "spec", "tasks")
	scheduler, _, _ := unstructured.NestedString(job.Object, "spec", "schedulerName")
	var created []*corev1.Pod
	for i, t := range tasks {
		task, _ := t.(map[string]any)
		tname, _ := task["name"].(string)
		replicas, _, _ := unstructured.NestedInt64(task, "replicas")
		if !volcanoDependsOnReady(task, tasks, pods.Items) {
			continue
		}
		tpl, err := template(&unstructured.Unstructured{Object: task}, "template")
		if err != nil || tpl == nil {
			return created, fmt.Errorf("volcano job %s/%s task %d: template: %v", namespace, name, i, err)
		}
		if tpl.Spec.SchedulerName == "" {
			tpl.Spec.SchedulerName = scheduler
		}
		for idx := int64(0); idx < replicas; idx++ {
			labels := map[string]string{LabelVolcanoJobName: name, "volcano.sh/job-namespace": namespace, LabelVolcanoTaskSpec: tname, LabelVolcanoTaskIndex: fmt.Sprint(idx)}
			pod := PodFromTemplate(tpl, namespace, fmt.Sprintf("%s-%s-%d", name, tname, idx), labels, UnstructuredOwnerRef(job))
			if err := cp.Client.Create(ctx, pod); apierrors.IsAlreadyExists(err) {
				continue
			} else if err != nil {
				return created, fmt.Errorf("volcano job %s/%s pod %s: %w", namespace, name, pod.Name, err)
			}
			created = append(created, pod)
		}
	}
	return created, nil
}

// volcanoDependsOnReady is waitDependsOnTaskMeetCondition for task (its dependsOn.name tasks,
// all of them; any of them with iteration "any" and several names) over the job's pods.
func volcanoDependsOnReady(task map[string]any, tasks []any, pods []corev1.Pod) bool {
	names, _, _ := unstructured.NestedStringSlice(task, "dependsOn", "name")
	if len(names) == 0 {
		return true
	}
	iteration, _, _ := unstructured.NestedString(task, "dependsOn", "iteration")
	anyOf := len(names) > 1 && iteration == "any"
	for _, dep := range names {
		ready := volcanoTaskReady(dep, tasks, pods)
		if anyOf && ready {
			return true
		}
		if !anyOf && !ready {
			return false
		}
	}
	return !anyOf
}

// volcanoTaskReady is isDependsOnPodsReady: at least the task's minAvailable (default its
// replicas) of its pods Running or Succeeded and ready.
func volcanoTaskReady(name string, tasks []any, pods []corev1.Pod) bool {
	want := int64(-1)
	for _, t := range tasks {
		task, _ := t.(map[string]any)
		if task["name"] != name {
			continue
		}
		want, _, _ = unstructured.NestedInt64(task, "replicas")
		if m, ok, _ := unstructured.NestedInt64(task, "minAvailable"); ok {
			want = m
		}
	}
	if want < 0 {
		return false
	}
	ready := int64(0)
	for _, p := range pods {
		if p.Labels[LabelVolcanoTaskSpec] == name && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded) && podReady(p) {
			ready++
		}
	}
	return ready >= want
}

// StepMPIJob plays one sync of the mpi-operator v2 on the named MPIJob (kubeflow.org/v2beta1,
// re-read from the API server), as pkg/controller/mpi_job_controller.go syncHandler does:
// getOrCreateWorker creates the missing worker pods <job>-worker-<i>, owned by the MPIJob
// (newWorker: labels job-name, job-role worker, replica-index, operator-name); the launcher Job
// <job>-launcher (owned by the MPIJob) is created at once with launcherCreationPolicy AtStartup
// (the default), and with WaitForWorkersReady only once countReadyWorkerPods(worker) ==
// len(worker). The Job controller then creates the launcher's one pod, owned by the Job, with
// the template's labels (newLauncherPodTemplate: job-role launcher); the Job controller is not
// running here, so this does it and leaves the Job suspended. It returns the pods it created.
func (cp *ControlPlane) StepMPIJob(ctx context.Context, namespace, name string) ([]*corev1.Pod, error) {
	mpi := &unstructured.Unstructured{}
	mpi.SetAPIVersion("kubeflow.org/v2beta1")
	mpi.SetKind("MPIJob")
	if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mpi); err != nil {
		return nil, err
	}
	workers, err := cp.mpiWorkers(ctx, mpi)
	if err != nil {
		return nil, err
	}
	var created []*corev1.Pod
	ready := 0
	for _, w := range workers {
		if w.created {
			created = append(created, w.pod)
		}
		if w.pod.Status.Phase == corev1.PodRunning && podReady(*w.pod) {
			ready++
		}
	}
	policy, _, _ := unstructured.NestedString(mpi.Object, "spec", "launcherCreationPolicy")
	if policy == "WaitForWorkersReady" && ready != len(workers) {
		return created, nil
	}
	launcher, err := cp.mpiLauncher(ctx, mpi)
	if launcher != nil {
		created = append(created, launcher)
	}
	return created, err
}

type mpiWorker struct {
	pod     *corev1.Pod
	created bool
}

// mpiWorkers is getOrCreateWorker: every worker pod, created when missing.
func (cp *ControlPlane) mpiWorkers(ctx context.Context, mpi *unstructured.Unstructured) ([]mpiWorker, error) {
	replicas, _, _ := unstructured.NestedInt64(mpi.Object, "spec", "mpiReplicaSpecs", "Worker", "replicas")
	tpl, err := template(mpi, "spec", "mpiReplicaSpecs", "Worker", "template")
	if err != nil || (tpl == nil && replicas > 0) {
		return nil, fmt.Errorf("mpijob %s/%s: worker template: %v", mpi.GetNamespace(), mpi.GetName(), err)
	}
	var out []mpiWorker
	for i := int64(0); i < replicas; i++ {
		key := client.ObjectKey{Namespace: mpi.GetNamespace(), Name: fmt.Sprintf("%s-worker-%d", mpi.GetName(), i)}
		pod := &corev1.Pod{}
		err := cp.Client.Get(ctx, key, pod)
		if err == nil {
			out = append(out, mpiWorker{pod: pod})
			continue
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
		labels := map[string]string{LabelMPIJobName: mpi.GetName(), LabelMPIJobRole: "worker", "training.kubeflow.org/operator-name": "mpi-operator",
			"training.kubeflow.org/replica-index": fmt.Sprint(i)}
		pod = PodFromTemplate(tpl, key.Namespace, key.Name, labels, UnstructuredOwnerRef(mpi))
		if err := cp.Client.Create(ctx, pod); err != nil {
			return nil, fmt.Errorf("mpijob worker pod %s: %w", key.Name, err)
		}
		out = append(out, mpiWorker{pod: pod, created: true})
	}
	return out, nil
}

// mpiLauncher creates the launcher Job and its pod when the Job is missing, and returns the pod
// (nil when the Job existed).
func (cp *ControlPlane) mpiLauncher(ctx context.Context, mpi *unstructured.Unstructured) (*corev1.Pod, error) {
	key := client.ObjectKey{Namespace: mpi.GetNamespace(), Name: mpi.GetName() + "-launcher"}
	if err := cp.Client.Get(ctx, key, &batchv1.Job{}); err == nil || !apierrors.IsNotFound(err) {
		return nil, err
	}
	tpl, err := template(mpi, "spec", "mpiReplicaSpecs", "Launcher", "template")
	if err != nil || tpl == nil {
		return nil, fmt.Errorf("mpijob %s/%s: launcher template: %v", key.Namespace, mpi.GetName(), err)
	}
	labels := map[string]string{LabelMPIJobName: mpi.GetName(), LabelMPIJobRole: "launcher", "training.kubeflow.org/operator-name": "mpi-operator"}
	tpl.Labels = mergeLabels(tpl.Labels, labels)
	if tpl.Spec.RestartPolicy == "" {
		tpl.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}
	fillImages(&tpl.Spec)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: labels, OwnerReferences: []metav1.OwnerReference{UnstructuredOwnerRef(mpi)}},
		Spec: batchv1.JobSpec{Template: *tpl, Suspend: ptr.To(true)}}
	if err := cp.Client.Create(ctx, job); err != nil {
		return nil, fmt.Errorf("mpijob launcher job %s: %w", key.Name, err)
	}
	podTpl := job.Spec.Template.DeepCopy()
	podTpl.Spec.SchedulerName = tpl.Spec.SchedulerName
	pod := PodFromTemplate(podTpl, key.Namespace, key.Name+"-"+string(job.UID)[:5], nil, OwnerRef(job, "batch/v1", "Job"))
	if err := cp.Client.Create(ctx, pod); err != nil {
		return nil, fmt.Errorf("mpijob launcher pod: %w", err)
	}
	return pod, nil
}
