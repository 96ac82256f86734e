package catalog_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/gang"
)

// Volcano's task-start-dependency example without spec.minAvailable: every task's minimum is
// its replicas (Volcano's default), and job-nginx2 (5 pods) and job-nginx3 (5 pods) are created
// only after the task they depend on runs (volcano pkg/controllers/job/job_controller_actions.go
// syncJob, waitDependsOnTaskMeetCondition). A flat PodGroup would let KAI bind a dependent
// task's pods one at a time beside the running first task, so the plan gives each task a
// sub-group: job-nginx1's is written (minSubGroup 1), the dependent tasks' are deferred, each
// with its own minimum of 5, until their pods exist.
func TestVolcanoJobDependentTasksGetSubGroups(t *testing.T) {
	file := "volcanojob-task-start-dependency-min1.yaml"
	obj := workloadOf(t, file)
	unstructured.RemoveNestedField(obj.Object, "spec", "minAvailable")
	p, err := gang.Build(context.Background(), catalogRegistry(t).Lookup(obj.GroupVersionKind()), obj)
	require.NoError(t, err)
	checkBuiltPlan(t, file, p, planWant{
		podGroups: []podGroupWant{{name: "pg-job-job", minSubGroup: 1, pods: 11,
			subGroups: []subGroupWant{{"job-nginx1", 1, 1}, {"job-nginx2", 5, 5}, {"job-nginx3", 5, 5}}}},
		roles: []roleWant{
			{"job-nginx1", 1, 1, 1, 1, 0},
			{"job-nginx2", 5, 5, 5, 0, 0}, // held: its 5 are its sub-group's own minimum
			{"job-nginx3", 5, 5, 5, 0, 0},
		},
		notes: []string{"role task[job-nginx2] is kept out of the gang minimum"},
	})
	var deferred []string
	for _, sg := range p.PodGroups[0].SubGroups {
		if sg.Deferred {
			deferred = append(deferred, sg.Name)
		}
	}
	assert.Equal(t, []string{"job-nginx2", "job-nginx3"}, deferred)
}

// An MPIJob v2beta1 with launcherCreationPolicy WaitForWorkersReady holds one launcher pod: one
// pod is whole, so the PodGroup stays flat as KAI's MPI plugin writes it, minMember the 2
// workers (mpi-operator syncHandler creates the launcher once every worker is ready).
func TestMPIJobWaitForWorkersReadyStaysFlat(t *testing.T) {
	file := "mpijob-tf-benchmarks-worker-gpu-limits.yaml"
	obj := workloadOf(t, file)
	require.NoError(t, unstructured.SetNestedField(obj.Object, "WaitForWorkersReady", "spec", "launcherCreationPolicy"))
	p, err := gang.Build(context.Background(), catalogRegistry(t).Lookup(obj.GroupVersionKind()), obj)
	require.NoError(t, err)
	require.Len(t, p.PodGroups, 1)
	assert.Empty(t, p.PodGroups[0].SubGroups)
	assert.Equal(t, int32(2), *p.PodGroups[0].MinMember)
}
