package catalog_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
)

// startStep is one step of a workload's start sequence: the status its operator has written, and
// the gang that is satisfiable then.
type startStep struct {
	name   string
	status []any // status.replicatedJobsStatus
	// minSubGroup counts the sub-groups written to the PodGroup (all required; a finished
	// role's asks for 0 pods); held names the roles the start rule keeps out of the gang
	// minimum; deferred those of them not created yet, whose sub-groups (with their own
	// minimum) are written only once their pods exist.
	minSubGroup int32
	held        []string
	deferred    []string
	subGroups   []subGroupWant
}

// planWithStatus plans a testdata workload with status.replicatedJobsStatus set.
func planWithStatus(t *testing.T, file string, status []any) *gang.Plan {
	t.Helper()
	objs, err := manifest.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	obj := objs[0]
	if status != nil {
		require.NoError(t, unstructured.SetNestedSlice(obj.Object, status, "status", "replicatedJobsStatus"))
	}
	c := catalogRegistry(t).Lookup(obj.GroupVersionKind())
	require.NotNil(t, c)
	p, err := gang.Build(context.Background(), c, obj)
	require.NoError(t, err)
	return p
}

func checkSteps(t *testing.T, file string, steps []startStep) {
	t.Helper()
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			p := planWithStatus(t, file, s.status)
			require.Len(t, p.PodGroups, 1)
			pg := p.PodGroups[0]
			require.NotNil(t, pg.MinSubGroup)
			assert.Nil(t, pg.MinMember)
			assert.Equal(t, s.minSubGroup, *pg.MinSubGroup)
			var got []subGroupWant
			for _, sg := range pg.SubGroups {
				got = append(got, subGroupWant{sg.Name, *sg.MinMember, sg.Pods})
			}
			assert.Equal(t, s.subGroups, got)
			var held, deferred []string
			for _, r := range p.Roles {
				if r.StartupHold != "" {
					held = append(held, r.Name)
					assert.Zero(t, r.GangPods, "a held role is not in the gang minimum")
					assert.Positive(t, r.HeldPods, "a held role keeps its own minimum")
				}
			}
			for _, sg := range pg.SubGroups {
				if sg.Deferred {
					deferred = append(deferred, sg.Name)
				}
			}
			assert.Equal(t, s.held, held)
			assert.Equal(t, s.deferred, deferred)
		})
	}
}

func rjStatus(name string, ready, succeeded int64) map[string]any {
	return map[string]any{"name": name, "ready": ready, "succeeded": succeeded, "failed": int64(0), "active": ready, "suspended": int64(0)}
}

// JobSet dependsOn (jobset pkg/controllers depends_on.go dependencyReachedStatus, called from
// createJobs): the launcher is created when the initializer is Complete (succeeded Jobs ==
// replicas, 1), the worker when the launcher is Ready (ready + failed + succeeded == 1). At every
// step the PodGroup writes only the sub-groups whose pods exist or are being created (the others
// are deferred), all of them required, and a role whose Jobs all succeeded asks for 0 pods. That
// KAI admits each of these PodGroups once the step's pods exist is
// podgrouper/core/workloadmap TestStartPhasesAdmittedByKAI.
func TestJobSetDependsOnStartSequence(t *testing.T) {
	sgs := func(init, launcher int32) []subGroupWant {
		return []subGroupWant{{"initializer", init, 1}, {"launcher", launcher, 1}, {"worker", 4, 4}}
	}
	checkSteps(t, "jobset-depends-on-initializer-launcher-worker.yaml", []startStep{
		{name: "created", minSubGroup: 1, held: []string{"launcher", "worker"}, deferred: []string{"launcher", "worker"}, subGroups: sgs(1, 1)},
		{name: "initializer running", status: []any{rjStatus("initializer", 1, 0)}, minSubGroup: 1, held: []string{"launcher", "worker"}, deferred: []string{"launcher", "worker"}, subGroups: sgs(1, 1)},
		{name: "initializer complete", status: []any{rjStatus("initializer", 0, 1), rjStatus("launcher", 0, 0)}, minSubGroup: 2, held: []string{"initializer", "worker"}, deferred: []string{"worker"}, subGroups: sgs(0, 1)},
		{name: "launcher ready", status: []any{rjStatus("initializer", 0, 1), rjStatus("launcher", 1, 0), rjStatus("worker", 0, 0)}, minSubGroup: 3, held: []string{"initializer"}, subGroups: sgs(0, 1)},
		{name: "launcher done, workers running", status: []any{rjStatus("initializer", 0, 1), rjStatus("launcher", 0, 1), rjStatus("worker", 1, 0)}, minSubGroup: 3, held: []string{"initializer", "launcher"}, subGroups: sgs(0, 0)},
	})
}

// Several dependencies: the worker waits for both initializers to be Complete (the controller
// checks every dependsOn entry since JobSet v0.8).
func TestJobSetMultipleDependsOn(t *testing.T) {
	sgs := func(dataset, model int32) []subGroupWant {
		return []subGroupWant{{"dataset-initializer", dataset, 1}, {"model-initializer", model, 1}, {"worker", 4, 4}}
	}
	checkSteps(t, "jobset-multiple-depends-on-two-initializers.yaml", []startStep{
		{name: "created", minSubGroup: 2, held: []string{"worker"}, deferred: []string{"worker"}, subGroups: sgs(1, 1)},
		{name: "one initializer complete", status: []any{rjStatus("dataset-initializer", 0, 1), rjStatus("model-initializer", 1, 0)}, minSubGroup: 2, held: []string{"dataset-initializer", "worker"}, deferred: []string{"worker"}, subGroups: sgs(0, 1)},
		{name: "both complete", status: []any{rjStatus("dataset-initializer", 0, 1), rjStatus("model-initializer", 0, 1)}, minSubGroup: 3, held: []string{"dataset-initializer", "model-initializer"}, subGroups: sgs(0, 0)},
	})
	p := planWithStatus(t, "jobset-multiple-depends-on-two-initializers.yaml", []any{rjStatus("dataset-initializer", 0, 1)})
	assert.Equal(t, "dependsOn: the JobSet controller creates it only when model-initializer is Complete", p.Roles[2].StartupHold,
		"the reason names the dependency still unmet")
}

// startupPolicyOrder InOrder (jobset startup_policy.go allReplicasStarted, createJobs): each
// replicated job is created once every one before it has all Jobs started.
func TestJobSetInOrderStartSequence(t *testing.T) {
	file := "jobset-paralleljobs-two-rjobs.yaml" // workers (parallelism 4), then driver (1)
	objs, err := manifest.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(objs[0].Object, "InOrder", "spec", "startupPolicy", "startupPolicyOrder"))
	c := catalogRegistry(t).Lookup(objs[0].GroupVersionKind())
	for _, tc := range []struct {
		status      []any
		minSubGroup int32
		held        string
	}{
		{nil, 1, "startupPolicyOrder InOrder: the JobSet controller creates it only after workers have all Jobs ready"},
		{[]any{rjStatus("workers", 0, 0)}, 1, "startupPolicyOrder InOrder: the JobSet controller creates it only after workers have all Jobs ready"},
		{[]any{rjStatus("workers", 1, 0)}, 2, ""}, // the one workers Job is ready: the driver is created
	} {
		o := objs[0].DeepCopy()
		if tc.status != nil {
			require.NoError(t, unstructured.SetNestedSlice(o.Object, tc.status, "status", "replicatedJobsStatus"))
		}
		p, err := gang.Build(context.Background(), c, o)
		require.NoError(t, err)
		assert.Equal(t, tc.minSubGroup, *p.PodGroups[0].MinSubGroup)
		assert.Equal(t, tc.held, p.Roles[1].StartupHold)
		assert.Equal(t, int32(1), *p.PodGroups[0].SubGroups[1].MinMember, "the driver's sub-group keeps its minimum")
	}
}
