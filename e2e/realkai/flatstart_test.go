//go:build e2e_kai

package realkai_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// Start rules of flat gangs on the real KAI scheduler (issue 27): a Volcano Job whose dependent
// task has several pods, and an MPIJob v2beta1 with launcherCreationPolicy WaitForWorkersReady.
// The definitions ask for no sub-groups; KAI's allocate action binds the pods of a PodGroup
// whose minimum is met one at a time (allocation_info.go collectTasksFromSubGroupSet, the
// elastic phase), so a role the operator creates later must not join an admitted flat gang.

// runOperator calls step (one sync of an operator) every 300 ms until the test ends.
func runOperator(t *testing.T, what string, step func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := step(ctx); err != nil && ctx.Err() == nil {
				t.Logf("%s step: %v", what, err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// volcanoTask is a task of the test's Volcano Job: pods pods of gpu GPUs, after the named tasks.
func volcanoTask(name string, pods, gpu int, dependsOn ...string) map[string]any {
	t := map[string]any{"name": name, "replicas": int64(pods), "template": map[string]any{"spec": map[string]any{
		"restartPolicy": "OnFailure",
		"containers": []any{map[string]any{"name": name, "image": "registry.example/" + name + ":1",
			"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": int64(gpu)}}}}}}}
	if len(dependsOn) > 0 {
		deps := make([]any, len(dependsOn))
		for i, d := range dependsOn {
			deps[i] = d
		}
		t["dependsOn"] = map[string]any{"name": deps}
	}
	return t
}

// TestVolcanoJobDependsOn: a Volcano Job (no spec.minAvailable: every task's minAvailable is its
// replicas) of a first task (1 pod, 1 GPU) and "workers" (3 pods, 2 GPUs each) dependsOn it, on
// one 4-GPU node. Volcano's job controller creates the workers' pods only once the first task's
// pod runs and is ready (job_controller_actions.go syncJob, waitDependsOnTaskMeetCondition;
// framework.StepVolcanoJob). So KAI must admit the first pod alone, and then the 3 workers all
// or none: none while 3 GPUs are free (1 worker would fit, and a flat gang already admitted would
// take it), all 3 once a second 4-GPU node is added. The first task is named to sort before
// ("aa-first") and after ("zz-first") the workers.
func TestVolcanoJobDependsOn(t *testing.T) {
	for _, first := range []string{"aa-first", "zz-first"} {
		t.Run("first="+first, func(t *testing.T) {
			ctx := context.Background()
			b := newBed(t, "volcano-"+first, 1, 4)
			job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
				"spec": map[string]any{"schedulerName": "kai-scheduler", "tasks": []any{
					volcanoTask(first, 1, 1), volcanoTask("workers", 3, 2, first)}}}}
			job.SetName("train")
			b.pin(job)
			require.NoError(t, kai.Client.Create(ctx, job))
			runOperator(t, "Volcano job controller", func(ctx context.Context) error {
				_, err := kai.StepVolcanoJob(ctx, b.ns, "train")
				return err
			})
			task := func(name string) labels.Selector {
				return labels.SelectorFromSet(labels.Set{framework.LabelVolcanoJobName: "train", framework.LabelVolcanoTaskSpec: name})
			}
			_, err := kai.WaitAllBound(ctx, b.ns, task(first), 1, admitTimeout)
			require.NoError(t, err, "KAI admits the first task's pod, the only one Volcano created\n%s", kai.Report(ctx, b.ns))
			admitAllOrNothing(t, b, task("workers"), 3, 4)
			f, err := kai.Place(ctx, b.ns, task(first))
			require.NoError(t, err)
			assert.Len(t, f.Bound, 1, "the first task still runs")
			t.Logf("PodGroups: %s", podGroupsOf(t, ctx, b.ns))
		})
	}
}

// TestMPIJobWaitForWorkersReady: an MPIJob v2beta1 with launcherCreationPolicy
// WaitForWorkersReady, 2 workers of 2 GPUs and a launcher of 1 GPU, on one 2-GPU node.
// mpi-operator's syncHandler creates the workers at once and the launcher Job only when every
// worker pod is ready (framework.StepMPIJob). So KAI must admit the 2 workers all or none (none
// on 2 GPUs, where 1 fits; both once a 4-GPU node is added), no launcher may exist before both
// workers are bound, and the launcher is admitted once they are ready, beside them.
func TestMPIJobWaitForWorkersReady(t *testing.T) {
	ctx := context.Background()
	b := newBed(t, "mpijob-wait-workers", 1, 2)
	tpl := func(name string, gpu int64) map[string]any {
		return map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": name, "image": "mpioperator/tensorflow-benchmarks:latest",
			"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": gpu}}}}}}
	}
	mpi := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
		"spec": map[string]any{"slotsPerWorker": int64(1), "launcherCreationPolicy": "WaitForWorkersReady", "mpiReplicaSpecs": map[string]any{
			"Launcher": map[string]any{"replicas": int64(1), "template": tpl("launcher", 1)},
			"Worker":   map[string]any{"replicas": int64(2), "template": tpl("worker", 2)}}}}}
	mpi.SetName("bench")
	b.pin(mpi)
	require.NoError(t, kai.Client.Create(ctx, mpi))
	runOperator(t, "mpi-operator", func(ctx context.Context) error {
		_, err := kai.StepMPIJob(ctx, b.ns, "bench")
		return err
	})
	role := func(r string) labels.Selector {
		return labels.SelectorFromSet(labels.Set{framework.LabelMPIJobName: "bench", framework.LabelMPIJobRole: r})
	}
	err := framework.WaitFor(ctx, admitTimeout, func(ctx context.Context) (bool, error) {
		p, err := kai.Place(ctx, b.ns, role("worker"))
		return err == nil && len(p.Bound)+len(p.Pending) == 2, nil
	})
	require.NoError(t, err, "the mpi-operator created the 2 workers")
	l, err := kai.Place(ctx, b.ns, role("launcher"))
	require.NoError(t, err)
	assert.Empty(t, append(l.Bound, l.Pending...), "no launcher before the workers are ready")
	admitAllOrNothing(t, b, role("worker"), 2, 4)
	_, err = kai.WaitAllBound(ctx, b.ns, role("launcher"), 1, admitTimeout)
	require.NoError(t, err, "KAI admits the launcher, created once both workers are ready\n%s", kai.Report(ctx, b.ns))
	w, err := kai.Place(ctx, b.ns, role("worker"))
	require.NoError(t, err)
	assert.Len(t, w.Bound, 2, "the workers still run")
	t.Logf("PodGroups: %s", podGroupsOf(t, ctx, b.ns))
}

// podGroupsOf describes the namespace's PodGroups for the log.
func podGroupsOf(t *testing.T, ctx context.Context, ns string) []string {
	t.Helper()
	list := &v2alpha2.PodGroupList{}
	require.NoError(t, kai.Client.List(ctx, list, client.InNamespace(ns)))
	var out []string
	for i := range list.Items {
		out = append(out, list.Items[i].Name+": "+describe(&list.Items[i]))
	}
	return out
}
