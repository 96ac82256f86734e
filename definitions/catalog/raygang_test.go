package catalog_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
)

// The Ray definitions' worker gang rule, spec.variables workerGangReplicas:
//   - "minReplicas" (default) is KAI's native Ray plugin (pkg/podgrouper/podgrouper/plugins/ray/
//     ray_grouper.go calcJobNumOfPodsAndSubGroups): a worker group's sub-group minimum is
//     minReplicas × numOfHosts when minReplicas > 0, else replicas × numOfHosts, whether or not
//     enableInTreeAutoscaling is set;
//   - "desired" is KubeRay's own batch-scheduler gang (DoBatchSchedulingOnSubmission): the desired
//     replicas (replicas clamped to [minReplicas, maxReplicas], GetWorkerGroupDesiredReplicas), or
//     minReplicas with enableInTreeAutoscaling.
// Pods are KubeRay's desired replicas × numOfHosts in both modes; only the gang minimum differs.

// rayWorkerWant is the plan of one worker group.
type rayWorkerWant struct {
	group             string
	replicas, minReps int64 // role replicas (KubeRay desired) and the gang's replicas
	pods, gangPods    int64
}

// rayCase is a testdata Ray manifest, an optional edit of it, and the worker groups' plan.
type rayCase struct {
	file string
	// edit changes the manifest (a value the autoscaler or a user writes); nil keeps it as is.
	edit func(t *testing.T, obj *unstructured.Unstructured)
	// minSubGroup: headgroup plus the worker sub-groups that require pods.
	minSubGroup int32
	workers     []rayWorkerWant
}

// rayRegistry is a registry of the catalog whose Ray definitions' workerGangReplicas variable is
// the CEL expression mode ("" keeps the catalog's).
func rayRegistry(t *testing.T, mode string) *definitions.Registry {
	t.Helper()
	if mode == "" {
		return catalogRegistry(t)
	}
	ls, err := catalog.Load()
	require.NoError(t, err)
	edited := 0
	for _, l := range ls {
		for i, v := range l.Karta.Spec.Variables {
			if v.Name == "workerGangReplicas" {
				l.Karta.Spec.Variables[i].Expression = mode
				edited++
			}
		}
	}
	require.Equal(t, 6, edited, "RayCluster, RayJob and RayService (v1 and v1alpha1) carry workerGangReplicas")
	compiler, err := expr.NewCompiler(expr.Limits{})
	require.NoError(t, err)
	r := definitions.NewRegistry(compiler)
	r.SetSource(definitions.SourceCatalog, ls)
	return r
}

// rayPlan plans a (possibly edited) testdata Ray manifest with reg.
func rayPlan(t *testing.T, reg *definitions.Registry, c rayCase) (*gang.Plan, error) {
	t.Helper()
	objs, err := manifest.ReadFile(filepath.Join("testdata", c.file))
	require.NoError(t, err)
	obj := objs[0]
	if c.edit != nil {
		c.edit(t, obj)
	}
	def := reg.Lookup(obj.GroupVersionKind())
	require.NotNil(t, def, "%s: no definition for %s", c.file, obj.GroupVersionKind())
	return gang.Build(context.Background(), def, obj)
}

func checkRayCase(t *testing.T, reg *definitions.Registry, c rayCase) {
	t.Helper()
	p, err := rayPlan(t, reg, c)
	require.NoError(t, err, c.file)
	require.Len(t, p.PodGroups, 1, c.file)
	pg := p.PodGroups[0]
	if assert.NotNil(t, pg.MinSubGroup, "%s: minSubGroup", c.file) {
		assert.Equal(t, c.minSubGroup, *pg.MinSubGroup, "%s: minSubGroup", c.file)
	}
	gotWorkers := []rayWorkerWant{}
	for _, r := range p.Roles {
		if r.Name == "headgroup" {
			assert.Equal(t, int64(1), r.GangPods, "%s: the head is always in the gang", c.file)
			continue
		}
		gotWorkers = append(gotWorkers, rayWorkerWant{r.Name, r.Replicas, r.MinReplicas, r.Pods, r.GangPods})
	}
	assert.Equal(t, c.workers, gotWorkers, "%s: worker groups", c.file)
	// Sub-group minima follow the roles' gang pods (KAI: subGroup MinAvailable).
	for _, sg := range pg.SubGroups {
		for _, w := range c.workers {
			if sg.Name == w.group && assert.NotNil(t, sg.MinMember, "%s: %s minMember", c.file, sg.Name) {
				assert.Equal(t, int32(w.gangPods), *sg.MinMember, "%s: sub-group %s minimum", c.file, sg.Name)
			}
		}
	}
}

// setWorkerField sets field of the worker group at index of the manifest's cluster spec (at
// clusterPath: spec, spec.rayClusterSpec or spec.rayClusterConfig).
func setWorkerField(index int, field string, value any, clusterPath ...string) func(*testing.T, *unstructured.Unstructured) {
	return func(t *testing.T, obj *unstructured.Unstructured) {
		path := append(append([]string{}, clusterPath...), "workerGroupSpecs")
		groups, found, err := unstructured.NestedSlice(obj.Object, path...)
		require.NoError(t, err)
		require.True(t, found)
		groups[index].(map[string]any)[field] = value
		require.NoError(t, unstructured.SetNestedSlice(obj.Object, groups, path...))
	}
}

// The real manifests unchanged: KAI's rule and KubeRay's agree on each (minReplicas equals
// replicas, or minReplicas 0 without autoscaling, or replicas 0), so both modes give one plan.
var rayUnchanged = []rayCase{
	// numOfHosts 4, replicas 1, minReplicas 0, no autoscaling: KAI takes replicas (min is 0) ×
	// 4 hosts; KubeRay desired 1 × 4.
	{file: "raycluster-tpu-numofhosts4-min0.yaml", minSubGroup: 2,
		workers: []rayWorkerWant{{"tpu-group", 1, 1, 4, 4}}},
	// replicas = minReplicas = 2.
	{file: "raycluster-kai-gpu-fraction-annotation.yaml", minSubGroup: 2,
		workers: []rayWorkerWant{{"shared-gpu", 2, 2, 2, 2}}},
	// Autoscaling, 1/1 and two groups at 0/0 (KAI skips a group at 0 and 0; gangmap makes no
	// sub-group for a role with 0 pods).
	{file: "raycluster-three-groups-ray-gpu-resource-only.yaml", minSubGroup: 2,
		workers: []rayWorkerWant{{"large-cpu-group", 1, 1, 1, 1}, {"accelerator-group", 0, 0, 0, 0}, {"spot-group", 0, 0, 0, 0}}},
	// RayJob cluster: replicas 1, minReplicas 1, maxReplicas 5.
	{file: "rayjob-kueue-generatename.yaml", minSubGroup: 2,
		workers: []rayWorkerWant{{"small-group", 1, 1, 1, 1}}},
	// RayService cluster: replicas = minReplicas = maxReplicas = 2.
	{file: "rayservice-deepseek-2x8gpu.yaml", minSubGroup: 2,
		workers: []rayWorkerWant{{"gpu-group", 2, 2, 2, 2}}},
}

func TestRayWorkerGangRuleOnRealManifests(t *testing.T) {
	for _, mode := range []string{"", `'minReplicas'`, `'desired'`} {
		reg := rayRegistry(t, mode)
		for _, c := range rayUnchanged {
			t.Run(mode+" "+c.file, func(t *testing.T) { checkRayCase(t, reg, c) })
		}
	}
}

// Where the rules differ, on real manifests with one value changed as a user or the Ray
// autoscaler changes it.
func TestRayWorkerGangRuleKAIParityAndDesired(t *testing.T) {
	// RayJob small-group at replicas 3 (minReplicas 1, maxReplicas 5, no in-tree autoscaling):
	// KubeRay runs desired 3 pods. KAI: minReplicas 1 > 0, so the sub-group needs 1.
	// KubeRay's batch gang (desired): 3.
	scaledJob := rayCase{file: "rayjob-kueue-generatename.yaml", edit: setWorkerField(0, "replicas", int64(3), "spec", "rayClusterSpec"), minSubGroup: 2}
	// RayCluster with enableInTreeAutoscaling, the autoscaler has set accelerator-group (index 1,
	// minReplicas 0, maxReplicas 10) to replicas 2: 2 pods. KAI: minReplicas 0, so replicas 2
	// (three required sub-groups). KubeRay with autoscaling: minReplicas 0, the group is not
	// required.
	scaledCluster := rayCase{file: "raycluster-three-groups-ray-gpu-resource-only.yaml", edit: setWorkerField(1, "replicas", int64(2), "spec")}
	// The TPU group suspended (KubeRay WorkerGroupSpec.suspend): desired 0, no pods in either
	// mode. (KAI's plugin reads a field "suspended", which KubeRay does not have.)
	suspended := rayCase{file: "raycluster-tpu-numofhosts4-min0.yaml", edit: setWorkerField(0, "suspend", true, "spec"), minSubGroup: 1,
		workers: []rayWorkerWant{{"tpu-group", 0, 0, 0, 0}}}

	t.Run("minReplicas (default, KAI's rule)", func(t *testing.T) {
		reg := rayRegistry(t, "")
		c := scaledJob
		c.workers = []rayWorkerWant{{"small-group", 3, 1, 3, 1}}
		checkRayCase(t, reg, c)
		c = scaledCluster
		c.minSubGroup = 3
		c.workers = []rayWorkerWant{{"large-cpu-group", 1, 1, 1, 1}, {"accelerator-group", 2, 2, 2, 2}, {"spot-group", 0, 0, 0, 0}}
		checkRayCase(t, reg, c)
		checkRayCase(t, reg, suspended)
	})
	t.Run("desired (KubeRay's batch gang)", func(t *testing.T) {
		reg := rayRegistry(t, `'desired'`)
		c := scaledJob
		c.workers = []rayWorkerWant{{"small-group", 3, 3, 3, 3}}
		checkRayCase(t, reg, c)
		c = scaledCluster
		// headgroup and large-cpu-group required; accelerator-group's 2 pods are optional (its
		// sub-group asks for 0), and still counted: a sub-group of minimum 0 is satisfied by no
		// pod (KAI subgroupset.go GetNumActiveAllocatedDirectSubGroups), so minSubGroup 2 would
		// let it stand in for large-cpu-group (KAI admits the head alone: kaiadmission
		// TestZeroMinimumLeaf).
		c.minSubGroup = 3
		c.workers = []rayWorkerWant{{"large-cpu-group", 1, 1, 1, 1}, {"accelerator-group", 2, 0, 2, 0}, {"spot-group", 0, 0, 0, 0}}
		checkRayCase(t, reg, c)
		checkRayCase(t, reg, suspended)
	})
}

// A value other than "minReplicas" or "desired" is an error naming the variable, not a guess.
func TestRayWorkerGangRuleRejectsUnknownMode(t *testing.T) {
	reg := rayRegistry(t, `'maximum'`)
	_, err := rayPlan(t, reg, rayCase{file: "raycluster-tpu-numofhosts4-min0.yaml"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `workerGangReplicas: want "minReplicas" or "desired", got maximum`)
}
