package workloadmap

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/podgrouper/core/kaiadmission"
)

// Start rules of definitions whose gang is flat (no sub-groups asked for): the Volcano Job
// (startup.firstInstances) and the MPIJob v2beta1 (startup.first with launcherCreationPolicy
// WaitForWorkersReady). Each test plays the operator's phases from its code and asks the model
// what KAI does with the PodGroup gangmap writes at each: the pods of a phase are admitted whole,
// never with one fewer, and no phase waits for a pod the operator has not created yet.

func volcanoPod(task string, index int, s kaiadmission.State) simPod {
	return simPod{name: fmt.Sprintf("job-%s-%d", task, index), state: s, labels: map[string]string{
		"volcano.sh/job-name": "job", "volcano.sh/task-spec": task, "volcano.sh/task-index": fmt.Sprint(index)}}
}

func volcanoPods(task string, n int, s kaiadmission.State) []simPod {
	out := make([]simPod, n)
	for i := range out {
		out[i] = volcanoPod(task, i, s)
	}
	return out
}

// withoutMinAvailable drops spec.minAvailable, so that every task's minimum is its replicas
// (Volcano's default: the sum of the tasks' minAvailable, each defaulting to its replicas).
func withoutMinAvailable(o *unstructured.Unstructured) {
	unstructured.RemoveNestedField(o.Object, "spec", "minAvailable")
}

// Volcano's example task-start-dependency job without minAvailable: job-nginx1 (1 pod), then
// job-nginx2 (5 pods, dependsOn job-nginx1), then job-nginx3 (5 pods, dependsOn job-nginx2).
// Volcano pkg/controllers/job/job_controller_actions.go syncJob creates a task's pods together
// (a goroutine per pod), a task with dependsOn only once waitDependsOnTaskMeetCondition holds:
// isDependsOnPodsReady, the depended-on task's pods Running (or Succeeded) with every container
// ready, at least its minAvailable of them. So: nginx1's pod alone; once it runs, nginx2's 5;
// once they run, nginx3's 5. At every phase KAI (the model) admits that phase's pods in one
// commit and never 4 of a task's 5.
func TestStartPhasesVolcanoJobDependsOn(t *testing.T) {
	s := newStartSim(t)
	job := workload(t, "volcanojob-task-start-dependency-min1.yaml", withoutMinAvailable)

	v := only(t, s.phase(job, volcanoPods("job-nginx1", 1, kaiadmission.Pending)))
	admittedWhole(t, v, 1, "created: job-nginx1 alone")

	first := volcanoPods("job-nginx1", 1, kaiadmission.Bound)
	v = only(t, s.phase(job, append(first, volcanoPods("job-nginx2", 4, kaiadmission.Pending)...)))
	notAdmitted(t, v, "job-nginx1 running, 4 of job-nginx2's 5 pods created")
	v = only(t, s.phase(job, append(first, volcanoPods("job-nginx2", 5, kaiadmission.Pending)...)))
	admittedWhole(t, v, 6, "job-nginx1 running: job-nginx2's 5 pods together")
	assert.Len(t, v.Steps, 1, "one commit: %v", v.Steps)

	running := append(first, volcanoPods("job-nginx2", 5, kaiadmission.Bound)...)
	v = only(t, s.phase(job, append(running, volcanoPods("job-nginx3", 4, kaiadmission.Pending)...)))
	notAdmitted(t, v, "job-nginx2 running, 4 of job-nginx3's 5 pods created")
	v = only(t, s.phase(job, append(running, volcanoPods("job-nginx3", 5, kaiadmission.Pending)...)))
	admittedWhole(t, v, 11, "job-nginx2 running: job-nginx3's 5 pods together")
	assert.Len(t, v.Steps, 1, "one commit: %v", v.Steps)
}

// The same job with the example's own spec.minAvailable 1: the minimum is spread over the tasks
// in start order (the definition's minReplicasPath), so job-nginx1 takes it and the dependent
// tasks require nothing (Volcano's gang is minAvailable pods, whatever their tasks): no role is
// held, and their pods are admitted as they come, none waits.
func TestStartPhasesVolcanoJobMinAvailableOne(t *testing.T) {
	s := newStartSim(t)
	job := workload(t, "volcanojob-task-start-dependency-min1.yaml", nil)
	v := only(t, s.phase(job, volcanoPods("job-nginx1", 1, kaiadmission.Pending)))
	admittedWhole(t, v, 1, "created: job-nginx1 alone")
	first := volcanoPods("job-nginx1", 1, kaiadmission.Bound)
	v = only(t, s.phase(job, append(first, volcanoPods("job-nginx2", 3, kaiadmission.Pending)...)))
	assert.True(t, v.AlreadyMet, "the gang's minimum 1 was met by job-nginx1")
	assert.Len(t, slices.Concat(v.Steps...), 3, "job-nginx2's pods, required by no gang, are bound as they come: %v", v.Steps)
}

func mpiPod(role string, index int, s kaiadmission.State) simPod {
	name := fmt.Sprintf("tensorflow-benchmarks-worker-%d", index)
	labels := map[string]string{"training.kubeflow.org/job-role": role, "training.kubeflow.org/job-name": "tensorflow-benchmarks",
		"training.kubeflow.org/operator-name": "mpi-operator"}
	if role == "launcher" {
		name = "tensorflow-benchmarks-launcher-abcde"
	} else {
		labels["training.kubeflow.org/replica-index"] = fmt.Sprint(index)
	}
	return simPod{name: name, state: s, labels: labels}
}

// MPIJob v2beta1 with launcherCreationPolicy WaitForWorkersReady (mpi-operator
// pkg/controller/mpi_job_controller.go syncHandler: getOrCreateWorker creates every worker pod,
// and the launcher Job, whose Job controller creates the one launcher pod, is created only when
// countReadyWorkerPods(worker) == len(worker)): the 2 workers together first, never 1; then the
// launcher alone beside the running workers.
func TestStartPhasesMPIJobWaitForWorkersReady(t *testing.T) {
	s := newStartSim(t)
	job := workload(t, "mpijob-tf-benchmarks-worker-gpu-limits.yaml", func(o *unstructured.Unstructured) {
		require.NoError(t, unstructured.SetNestedField(o.Object, "WaitForWorkersReady", "spec", "launcherCreationPolicy"))
	})
	v := only(t, s.phase(job, []simPod{mpiPod("worker", 0, kaiadmission.Pending)}))
	notAdmitted(t, v, "1 of the 2 workers created")
	v = only(t, s.phase(job, []simPod{mpiPod("worker", 0, kaiadmission.Pending), mpiPod("worker", 1, kaiadmission.Pending)}))
	admittedWhole(t, v, 2, "created: the 2 workers together, no launcher yet")

	v = only(t, s.phase(job, []simPod{mpiPod("worker", 0, kaiadmission.Bound), mpiPod("worker", 1, kaiadmission.Bound), mpiPod("launcher", 0, kaiadmission.Pending)}))
	require.True(t, v.Admitted, "%s: %s", v.Blocking, v.Reason)
	assert.False(t, v.Partial)
	assert.Equal(t, [][]string{{"tensorflow-benchmarks-launcher-abcde"}}, v.Steps, "workers ready: the launcher")
	assert.Empty(t, v.Stranded)
}

// MPIJob v2beta1 with the default launcherCreationPolicy AtStartup: syncHandler creates the
// launcher Job and the workers in the same reconcile, so the gang is all 3 pods at once.
func TestStartPhasesMPIJobAtStartup(t *testing.T) {
	s := newStartSim(t)
	job := workload(t, "mpijob-tf-benchmarks-worker-gpu-limits.yaml", nil)
	two := []simPod{mpiPod("worker", 0, kaiadmission.Pending), mpiPod("worker", 1, kaiadmission.Pending)}
	notAdmitted(t, only(t, s.phase(job, two)), "the workers without the launcher")
	v := only(t, s.phase(job, append(two, mpiPod("launcher", 0, kaiadmission.Pending))))
	admittedWhole(t, v, 3, "launcher and workers together")
}
