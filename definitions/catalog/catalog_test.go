package catalog_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
)

// The tests plan real manifests (testdata/, copied unchanged from the frameworks' repositories:
// each file names its source) with the built-in catalog, and check every number against the
// framework's documented semantics, named in a comment by the number.

var (
	registryOnce sync.Once
	registry     *definitions.Registry
	registryErr  error
)

// semanticLimits are the default expression bounds with a wall-clock timeout of a minute: the
// catalog's tests check what definitions mean, and under -race on a loaded machine one
// evaluation has passed the default 1 s (TestMilvusVersionRuleMatchesTheOperatorsParser failed so
// once). The step, value-size and CEL cost bounds, which are deterministic, still apply; the
// bounds themselves are tested with the defaults (bounds_test.go, definitions/expr).
var semanticLimits = expr.Limits{Timeout: time.Minute}

// catalogRegistry is a registry holding only the built-in catalog.
func catalogRegistry(t *testing.T) *definitions.Registry {
	t.Helper()
	registryOnce.Do(func() {
		var compiler *expr.Compiler
		compiler, registryErr = expr.NewCompiler(semanticLimits)
		if registryErr != nil {
			return
		}
		registry = definitions.NewRegistry(compiler)
		registryErr = catalog.Register(registry)
	})
	require.NoError(t, registryErr)
	return registry
}

// TestCatalogLoadsStrictlyAndCompiles: every file decodes strictly (no unknown field), is named
// after its root kind as upstream names catalog files, and compiles with no problem.
func TestCatalogLoadsStrictlyAndCompiles(t *testing.T) {
	loaded, err := catalog.Load()
	require.NoError(t, err)
	require.NotEmpty(t, loaded)
	r := catalogRegistry(t)
	assert.Empty(t, r.Problems(), "catalog definitions must compile without problems")
	seen := map[schema.GroupVersionKind]string{}
	for _, l := range loaded {
		k := l.Karta.Spec.StructureDefinition.RootComponent.Kind
		require.NotNil(t, k, l.Origin)
		gvk := k.GVK()
		assert.Empty(t, seen[gvk], "%s: kind %s already defined by %s", l.Origin, gvk, seen[gvk])
		seen[gvk] = l.Origin
		group := k.Group
		if group == "" {
			group = "core"
		}
		slug := strings.ReplaceAll(group, ".", "-") + "-" + strings.ToLower(k.Kind) + "-" + k.Version
		assert.Equal(t, slug, l.Name(), "%s: the definition is named {group}-{kind}-{version}", l.Origin)
		assert.Equal(t, "catalog:"+slug+".yaml", l.Origin, "file name follows the definition name")
		c, err := definitions.Compile(l, r.Compiler())
		require.NoError(t, err, l.Origin)
		assert.NotNil(t, c.Status, "%s: the root has a statusDefinition", l.Origin)
		if active := r.Lookup(gvk); assert.NotNil(t, active, "%s: no active definition for %s", l.Origin, gvk) {
			assert.Equal(t, l.Origin, active.Loaded.Origin, "the catalog file is the active definition for %s", gvk)
		}
	}
}

type roleWant struct {
	name                                  string
	replicas, minReplicas, pods, gangPods int64
	gpusPerPod                            float64
}

type subGroupWant struct {
	name      string
	minMember int32
	pods      int64
}

type podGroupWant struct {
	name string
	// minMember or minSubGroup: the other is 0 (and must be unset on the PodGroup).
	minMember, minSubGroup int32
	pods                   int64
	subGroups              []subGroupWant
}

type planWant struct {
	podGroups []podGroupWant
	roles     []roleWant
	totalGPUs float64
	// notes are substrings that must each appear in some note of the plan.
	notes []string
}

// buildPlan plans the workload of a testdata file with the catalog definition of its kind.
func buildPlan(t *testing.T, file string) *gang.Plan {
	t.Helper()
	obj := workloadOf(t, file)
	c := catalogRegistry(t).Lookup(obj.GroupVersionKind())
	p, err := gang.Build(context.Background(), c, obj)
	require.NoError(t, err, file)
	return p
}

// workloadOf reads a testdata file and returns its workload: the one object of a catalog kind (a
// sample may carry objects the workload uses, as the ConfigMap of a KubeRay sample).
func workloadOf(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	objs, err := manifest.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	var workloads []*unstructured.Unstructured
	for _, o := range objs {
		if catalogRegistry(t).Lookup(o.GroupVersionKind()) != nil {
			workloads = append(workloads, o)
		}
	}
	require.Len(t, workloads, 1, "%s holds one workload of a catalog kind", file)
	return workloads[0]
}

// checkPlan compares a plan with what the framework's semantics say, and checks that every
// PodGroup is one KAI's PodGroup webhook accepts.
func checkPlan(t *testing.T, file string, want planWant) {
	t.Helper()
	checkBuiltPlan(t, file, buildPlan(t, file), want)
}

// checkBuiltPlan is checkPlan on a plan already built (of a manifest changed by a test, file
// naming it in messages).
func checkBuiltPlan(t *testing.T, file string, p *gang.Plan, want planWant) {
	t.Helper()
	require.Len(t, p.PodGroups, len(want.podGroups), "%s: PodGroups", file)
	for i, w := range want.podGroups {
		pg := p.PodGroups[i]
		assert.Equal(t, w.name, pg.Name, "%s: PodGroup %d name", file, i)
		assert.Equal(t, w.pods, pg.Pods, "%s: %s pods", file, pg.Name)
		if w.minSubGroup == 0 {
			if assert.NotNil(t, pg.MinMember, "%s: %s minMember", file, pg.Name) {
				assert.Equal(t, w.minMember, *pg.MinMember, "%s: %s minMember", file, pg.Name)
			}
			assert.Nil(t, pg.MinSubGroup, "%s: %s has no minSubGroup", file, pg.Name)
		} else {
			if assert.NotNil(t, pg.MinSubGroup, "%s: %s minSubGroup", file, pg.Name) {
				assert.Equal(t, w.minSubGroup, *pg.MinSubGroup, "%s: %s minSubGroup", file, pg.Name)
			}
			assert.Nil(t, pg.MinMember, "%s: %s has no minMember", file, pg.Name)
		}
		got := make([]subGroupWant, 0, len(pg.SubGroups))
		for _, sg := range pg.SubGroups {
			if sg.MinSubGroup != nil {
				// A parent sub-group (per-replica leaves below it): minSubGroup, never minMember.
				assert.Nil(t, sg.MinMember, "%s: parent sub-group %s has no minMember", file, sg.Name)
				got = append(got, subGroupWant{name: sg.Name + " (parent)", minMember: *sg.MinSubGroup, pods: sg.Pods})
				continue
			}
			require.NotNil(t, sg.MinMember, "%s: leaf sub-group %s needs minMember", file, sg.Name)
			name := sg.Name
			if sg.Parent != nil {
				name = *sg.Parent + "/" + sg.Name
			}
			got = append(got, subGroupWant{name: name, minMember: *sg.MinMember, pods: sg.Pods})
			assert.LessOrEqual(t, int64(*sg.MinMember), sg.Pods, "%s: sub-group %s minimum within its pods", file, sg.Name)
		}
		if w.subGroups == nil {
			w.subGroups = []subGroupWant{}
		}
		assert.Equal(t, w.subGroups, got, "%s: %s sub-groups", file, pg.Name)
		// What KAI accepts: minMember xor minSubGroup, a minimum its pods can meet.
		assert.True(t, (pg.MinMember == nil) != (pg.MinSubGroup == nil), "%s: minMember xor minSubGroup", file)
		if pg.MinMember != nil {
			assert.LessOrEqual(t, int64(*pg.MinMember), pg.Pods, "%s: minMember within the PodGroup's pods", file)
		}
		if pg.MinSubGroup != nil {
			top := 0
			for _, sg := range pg.SubGroups {
				if sg.Parent == nil {
					top++
				}
			}
			assert.LessOrEqual(t, int(*pg.MinSubGroup), top, "%s: minSubGroup within the top-level sub-groups", file)
		}
	}
	gotRoles := make([]roleWant, 0, len(p.Roles))
	for _, r := range p.Roles {
		gotRoles = append(gotRoles, roleWant{name: r.Name, replicas: r.Replicas, minReplicas: r.MinReplicas, pods: r.Pods, gangPods: r.GangPods, gpusPerPod: r.GPUsPerPod.Devices()})
	}
	if want.roles == nil {
		want.roles = []roleWant{}
	}
	assert.Equal(t, want.roles, gotRoles, "%s: roles", file)
	assert.InDelta(t, want.totalGPUs, p.TotalGPUs.Devices(), 1e-9, "%s: total GPUs", file)
	for _, n := range want.notes {
		found := false
		for _, got := range p.Notes {
			if strings.Contains(got, n) {
				found = true
			}
		}
		assert.True(t, found, "%s: expected a note containing %q, got %q", file, n, p.Notes)
	}
}

// Ray: head 1 pod; a worker group's pods = desired replicas × numOfHosts, desired = replicas
// clamped to [minReplicas, maxReplicas] (KubeRay GetWorkerGroupDesiredReplicas); the gang takes
// desired, or minReplicas with enableInTreeAutoscaling (KubeRay DoBatchSchedulingOnSubmission).
// Sub-groups "headgroup" and each groupName, as KAI's Ray plugin names them.
func TestRayCluster(t *testing.T) {
	cases := map[string]planWant{
		// Autoscaler sample: enableInTreeAutoscaling, the only worker group at replicas 0 and
		// minReplicas 0: no worker pods, the gang is the head alone.
		"raycluster-autoscaler-replicas0.yaml": {
			podGroups: []podGroupWant{{
				name:        "pg-raycluster-autoscaler-raycluster", // pg-<name, offline for the UID>-<podGroup.name>
				minSubGroup: 1,                                     // only headgroup requires pods
				pods:        1,
				subGroups:   []subGroupWant{{"headgroup", 1, 1}}, // a group with 0 pods gets no sub-group
			}},
			roles: []roleWant{
				{"headgroup", 1, 1, 1, 1, 0},   // head: always 1 pod
				{"small-group", 0, 0, 0, 0, 0}, // replicas 0: 0 pods
			},
		},
		// KAI GPU-sharing sample: workers ask for half a GPU through the gpu-fraction annotation,
		// no nvidia.com/gpu resource.
		"raycluster-kai-gpu-fraction-annotation.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-raycluster-half-gpu-raycluster", minSubGroup: 2, pods: 3,
				subGroups: []subGroupWant{{"headgroup", 1, 1}, {"shared-gpu", 2, 2}}, // no autoscaling: gang = desired 2
			}},
			roles: []roleWant{
				{"headgroup", 1, 1, 1, 1, 0},
				{"shared-gpu", 2, 2, 2, 2, 0.5}, // gpu-fraction "0.5" = half a device per pod
			},
			totalGPUs: 1, // 2 pods × 0.5
		},
		// Three worker groups, two at replicas 0; GPUs only as Ray logical resources (GPU: "1"),
		// which are not Kubernetes requests.
		"raycluster-three-groups-ray-gpu-resource-only.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-ray-label-cluster-raycluster", minSubGroup: 2, pods: 2,
				subGroups: []subGroupWant{{"headgroup", 1, 1}, {"large-cpu-group", 1, 1}}, // autoscaling: gang = minReplicas 1
			}},
			roles: []roleWant{
				{"headgroup", 1, 1, 1, 1, 0},
				{"large-cpu-group", 1, 1, 1, 1, 0},
				{"accelerator-group", 0, 0, 0, 0, 0}, // Ray resources GPU "1" is not nvidia.com/gpu
				{"spot-group", 0, 0, 0, 0, 0},
			},
			totalGPUs: 0,
		},
		// Multi-host TPU: numOfHosts 4, replicas 1, minReplicas 0, no autoscaling.
		"raycluster-tpu-numofhosts4-min0.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-raycluster-tpu-v6e-multihost-raycluster", minSubGroup: 2, pods: 5,
				// minReplicas 0 does not apply without autoscaling: gang = desired 1 × 4 hosts
				subGroups: []subGroupWant{{"headgroup", 1, 1}, {"tpu-group", 4, 4}},
			}},
			roles: []roleWant{
				{"headgroup", 1, 1, 1, 1, 0},
				{"tpu-group", 1, 1, 4, 4, 0}, // pods = replicas 1 × numOfHosts 4; google.com/tpu is no GPU
			},
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// RayJob: the cluster comes from spec.rayClusterSpec (RayCluster rules); with only a
// clusterSelector the RayJob uses an existing cluster and has no pods of its own.
func TestRayJob(t *testing.T) {
	cases := map[string]planWant{
		"rayjob-batch-inference-head-only-gpu.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-rayjob-sample-rayjob", minSubGroup: 1, pods: 1,
				subGroups: []subGroupWant{{"headgroup", 1, 1}},
			}},
			roles:     []roleWant{{"headgroup", 1, 1, 1, 1, 4}}, // head only; 4 GPUs in requests and limits, counted once
			totalGPUs: 4,
			notes:     []string{"workerGroupSpecs[]?.groupName) resolved to nothing"}, // no worker groups
		},
		// clusterSelector only: no rayClusterSpec, so no head and no worker roles, no PodGroup;
		// the plan says why (spec.gangmap.ownsNoPods), not that a path resolved to nothing.
		"rayjob-existing-cluster-selector.yaml": {
			podGroups: nil,
			roles:     nil,
			notes:     []string{"no PodGroup: this RayJob creates no head or worker pods of its own: with spec.clusterSelector it runs on the existing RayCluster the selector names, whose pods belong to that RayCluster"},
		},
		// metadata.generateName and no name: offline the PodGroup name uses generateName
		// ("rayjob-sample-" without its dash) in place of the UID.
		"rayjob-kueue-generatename.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-rayjob-sample-rayjob", minSubGroup: 2, pods: 2,
				subGroups: []subGroupWant{{"headgroup", 1, 1}, {"small-group", 1, 1}},
			}},
			roles: []roleWant{
				{"headgroup", 1, 1, 1, 1, 0},
				{"small-group", 1, 1, 1, 1, 0}, // replicas 1, minReplicas 1, maxReplicas 5: desired 1
			},
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// TestRayJobOnExistingClusterIsNotDrift: KubeRay creates no RayCluster for a RayJob with a
// clusterSelector, even with a rayClusterSpec (rayjob_controller.go getOrCreateRayClusterInstance:
// the cluster the selector names must exist, "It must be created manually"). Its plan is empty by
// design: no path miss (which the grouper would count and report as definition drift), and the
// reason in the plan, for both served versions.
func TestRayJobOnExistingClusterIsNotDrift(t *testing.T) {
	p := buildPlan(t, "rayjob-existing-cluster-selector.yaml")
	assert.Empty(t, p.Misses, "not drift")
	assert.Empty(t, p.PodGroups)
	assert.Contains(t, p.OwnsNoPods, "this RayJob creates no head or worker pods of its own")

	withSpec := workloadOf(t, "rayjob-batch-inference-head-only-gpu.yaml")
	require.NoError(t, unstructured.SetNestedStringMap(withSpec.Object, map[string]string{"ray.io/cluster": "shared"}, "spec", "clusterSelector"))
	for _, version := range []string{"v1", "v1alpha1"} {
		obj := withSpec.DeepCopy()
		obj.SetAPIVersion("ray.io/" + version)
		c := catalogRegistry(t).Lookup(obj.GroupVersionKind())
		require.NotNil(t, c, version)
		p, err := gang.Build(context.Background(), c, obj)
		require.NoError(t, err, version)
		assert.NotEmpty(t, p.OwnsNoPods, "%s: a clusterSelector wins over rayClusterSpec", version)
		assert.Empty(t, p.PodGroups, "%s: the head and workers of rayClusterSpec are never created", version)
		assert.Empty(t, p.Roles, version)
		assert.Empty(t, p.Misses, version)
	}
}

// RayService: the cluster comes from spec.rayClusterConfig (RayCluster rules).
func TestRayService(t *testing.T) {
	checkPlan(t, "rayservice-deepseek-2x8gpu.yaml", planWant{
		podGroups: []podGroupWant{{
			name: "pg-deepseek-r1-rayservice", minSubGroup: 2, pods: 3,
			subGroups: []subGroupWant{{"headgroup", 1, 1}, {"gpu-group", 2, 2}}, // min = max = replicas = 2
		}},
		roles: []roleWant{
			{"headgroup", 1, 1, 1, 1, 0}, // head: num-gpus "0" and no GPU request
			{"gpu-group", 2, 2, 2, 2, 8}, // 8 nvidia.com/gpu per worker pod
		},
		totalGPUs: 16, // 2 workers × 8
	})
}

// PyTorchJob: pods of a role = its replicas (default 1); the gang minimum is
// runPolicy.schedulingPolicy.minAvailable, else elasticPolicy.minReplicas, else every pod, the
// master counted first (training-operator; KAI's PyTorch plugin).
func TestPyTorchJob(t *testing.T) {
	cases := map[string]planWant{
		// Elastic, Worker only: replicas 2, elasticPolicy.minReplicas 1, no resources.
		"pytorchjob-elastic-echo-no-resources.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-elastic-example-echo-pytorchjob", minSubGroup: 1, pods: 2,
				subGroups: []subGroupWant{{"worker", 1, 2}}, // gang 1 of the 2 workers (elastic min)
			}},
			roles: []roleWant{
				{"master", 0, 0, 0, 0, 0}, // no Master replica spec
				{"worker", 2, 1, 2, 1, 0},
			},
		},
		// KAI's elastic sample: min 1, max 3, replicas 2.
		"pytorchjob-kai-elastic-min1-max3.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-elastic-example-imagenet-pytorchjob", minSubGroup: 1, pods: 2,
				subGroups: []subGroupWant{{"worker", 1, 2}},
			}},
			roles: []roleWant{
				{"master", 0, 0, 0, 0, 0},
				{"worker", 2, 1, 2, 1, 0}, // maxReplicas 3 is a ceiling for the elastic agent, not pods
			},
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// MPIJob v2beta1: launcher 1 + workers; the gang is every pod unless
// runPolicy.schedulingPolicy.minAvailable says less (mpi-operator calculateMinAvailable).
func TestMPIJob(t *testing.T) {
	checkPlan(t, "mpijob-tf-benchmarks-worker-gpu-limits.yaml", planWant{
		podGroups: []podGroupWant{{
			name: "pg-tensorflow-benchmarks-mpijob", minMember: 3, pods: 3, // workers 2 + launcher 1, created at once (AtStartup)
		}},
		roles: []roleWant{
			{"launcher", 1, 1, 1, 1, 0}, // the launcher asks for no GPU
			{"worker", 2, 2, 2, 2, 1},   // nvidia.com/gpu 1 in limits only: limits stand in for requests
		},
		totalGPUs: 2,
	})
}

// Knative Service: a revision starts with max(initial-scale (1), min-scale (0)) pods (Knative
// autoscaling docs); the gang minimum is min-scale as KAI's Knative plugin reads it (only the
// min-scale spelling, absent → 1). Annotations are numeric strings.
func TestKnativeService(t *testing.T) {
	cases := map[string]planWant{
		// Legacy camelCase annotations minScale "50", maxScale "100": Knative runs 50 pods; the
		// gang follows KAI's Knative plugin, which reads only min-scale (absent: 1).
		// minScaleAnnotations "either" requires 50: TestKAIParityKnativeService.
		"knativeservice-minscale50-maxscale100-annotations.yaml": {
			podGroups: []podGroupWant{{name: "pg-activator-with-cc-service", minMember: 1, pods: 50}},
			roles:     []roleWant{{"revision", 50, 1, 50, 1, 0}}, // max(initial 1, minScale 50) = 50 pods; gang min-scale absent → 1
		},
		// No annotations, two containers and no resources.
		"knativeservice-multicontainer-sidecar.yaml": {
			// no min-scale: KAI's plugin requires 1
			podGroups: []podGroupWant{{name: "pg-multi-container-test-service", minMember: 1, pods: 1}},
			roles:     []roleWant{{"revision", 1, 1, 1, 1, 0}}, // initial-scale default 1; min-scale absent → 1 (KAI's Knative plugin)
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// InferenceService: each component runs minReplicas pods (default 1); a multi-node predictor
// adds pipelineParallelSize − 1 worker pods per replica, head and workers each with
// tensorParallelSize GPUs unless the spec sets them (KServe multi-node docs).
func TestInferenceService(t *testing.T) {
	absent := []roleWant{{"worker", 0, 0, 0, 0, 0}, {"transformer", 0, 0, 0, 0, 0}, {"explainer", 0, 0, 0, 0, 0}}
	cases := map[string]planWant{
		// Predictor only, a tensorflow model with nvidia.com/gpu 1 in limits.
		"inferenceservice-autoscale-gpu-tf.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-flowers-sample-gpu-inferenceservice", minSubGroup: 1, pods: 1,
				subGroups: []subGroupWant{{"predictor", 1, 1}},
			}},
			roles:     append([]roleWant{{"predictor", 1, 1, 1, 1, 1}}, absent...), // minReplicas default 1
			totalGPUs: 1,
		},
		// Transformer collocated as a second container of the predictor pod: one role, one pod.
		"inferenceservice-collocation-two-containers.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-custom-transformer-collocation-inferenceservice", minSubGroup: 1, pods: 1,
				subGroups: []subGroupWant{{"predictor", 1, 1}},
			}},
			roles: append([]roleWant{{"predictor", 1, 1, 1, 1, 0}}, absent...),
		},
		// Multi-node: pipelineParallelSize 2 → 1 head + 1 worker; tensorParallelSize 1 → 1 GPU
		// each (the spec sets no resources).
		"inferenceservice-multinode-workerspec-pp2-tp1.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-huggingface-llama3-inferenceservice", minSubGroup: 2, pods: 2,
				subGroups: []subGroupWant{{"predictor", 1, 1}, {"worker", 1, 1}},
			}},
			roles: []roleWant{
				{"predictor", 1, 1, 1, 1, 1}, // head: 1 replica, GPUs = tensorParallelSize 1
				{"worker", 1, 1, 1, 1, 1},    // 1 replica × (pipelineParallelSize 2 − 1) workers
				{"transformer", 0, 0, 0, 0, 0},
				{"explainer", 0, 0, 0, 0, 0},
			},
			totalGPUs: 2,
		},
		// Two components: transformer and predictor (triton, CPU only).
		"inferenceservice-transformer-predictor-two-components.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-bert-v2-inferenceservice", minSubGroup: 2, pods: 2,
				subGroups: []subGroupWant{{"predictor", 1, 1}, {"transformer", 1, 1}},
			}},
			roles: []roleWant{
				{"predictor", 1, 1, 1, 1, 0},
				{"worker", 0, 0, 0, 0, 0},
				{"transformer", 1, 1, 1, 1, 0},
				{"explainer", 0, 0, 0, 0, 0},
			},
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// LLMInferenceService: main and prefill run replicas (default 1) replicas; with a worker spec a
// replica is an LWS group of size = data / dataLocal (data parallelism) pods: a leader and
// size − 1 workers. The router's scheduler template is not in these objects.
func TestLLMInferenceService(t *testing.T) {
	routerUnknown := []string{"role router-scheduler: no pod template resolved"}
	cases := map[string]planWant{
		// DP/EP with workers: data 16 / dataLocal 8 = 2 pods per group, 8 GPUs each. KServe's
		// multi-node LWS uses startupPolicy LeaderCreated in every release (v0.16+,
		// workload_multi_node.go): workers are created with their leader, so all four roles
		// are required (LeaderReady: TestLLMInferenceServiceStartupPolicy).
		"llminferenceservice-v1alpha2-dp-ep-deepseek-pd-worker.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-deepseek-r1-0528-pd-llminferenceservice", minSubGroup: 4, pods: 4,
				subGroups: []subGroupWant{{"main", 1, 1}, {"main-worker", 1, 1}, {"prefill", 1, 1}, {"prefill-worker", 1, 1}},
			}},
			roles: []roleWant{
				{"main", 1, 1, 1, 1, 8},           // 1 replica, one leader per group
				{"main-worker", 1, 1, 1, 1, 8},    // 1 replica × (size 2 − 1)
				{"prefill", 1, 1, 1, 1, 8},        // prefill.replicas 1
				{"prefill-worker", 1, 1, 1, 1, 8}, // prefill.parallelism data 16 / dataLocal 8 = 2 → 1 worker
				{"router-scheduler", 1, 1, 0, 0, 0},
			},
			totalGPUs: 32, // 4 pods × 8
			notes:     routerUnknown,
		},
		// P/D without workers: main 1 + prefill 2 pods, 1 GPU each (rdma next to the GPU).
		"llminferenceservice-v1alpha2-pd-qwen-gpu.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-qwen2-7b-instruct-pd-llminferenceservice", minSubGroup: 2, pods: 3,
				subGroups: []subGroupWant{{"main", 1, 1}, {"prefill", 2, 2}},
			}},
			roles: []roleWant{
				{"main", 1, 1, 1, 1, 1},
				{"main-worker", 0, 0, 0, 0, 0},
				{"prefill", 2, 2, 2, 2, 1},
				{"prefill-worker", 0, 0, 0, 0, 0},
				{"router-scheduler", 1, 1, 0, 0, 0}, // one scheduler pod whose template the object does not hold
			},
			totalGPUs: 3,
			notes:     routerUnknown,
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// NIMService: spec.replicas pods of one container whose resources sit at spec's root; the gang
// minimum is the HPA's minReplicas when scaling is enabled.
func TestNIMService(t *testing.T) {
	cases := map[string]planWant{
		"nimservice-hpa-min1-max2.yaml": {
			podGroups: []podGroupWant{{name: "pg-meta-llama-3-2-1b-instruct-nimservice", minMember: 1, pods: 1}},
			roles:     []roleWant{{"nimservice", 1, 1, 1, 1, 1}}, // replicas 1; HPA min 1 (max 2 is a ceiling); GPU limit 1
			totalGPUs: 1,
		},
		// inferencePlatform kserve: the operator makes an InferenceService; Knative min-scale "1".
		"nimservice-kserve-knative-platform.yaml": {
			podGroups: []podGroupWant{{name: "pg-meta-llama-3-2-1b-instruct-nimservice", minMember: 1, pods: 1}},
			roles:     []roleWant{{"nimservice", 1, 1, 1, 1, 1}}, // GPU 1 in requests and limits, counted once
			totalGPUs: 1,
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// Grove PodCliqueSet: one gang per PodCliqueSet replica; a clique's pods = replicas × (its
// scaling group's replicas), required = minAvailable (default replicas) × (the scaling group's
// minAvailable, default 1).
func TestPodCliqueSet(t *testing.T) {
	cases := map[string]planWant{
		// Scaling group sga over pcb and pcc (replicas default 1); pca autoscaled (maxReplicas 5
		// is a ceiling, not pods).
		"podcliqueset-autoscale-pcsg-simple1.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-simple1-podcliqueset-0", minSubGroup: 4, pods: 9, // one PodGroup per PodCliqueSet replica (1)
				subGroups: []subGroupWant{{"pca", 3, 3}, {"pcb", 2, 2}, {"pcc", 2, 2}, {"pcd", 2, 2}},
			}},
			roles: []roleWant{{"pca", 3, 3, 3, 3, 0}, {"pcb", 2, 2, 2, 2, 0}, {"pcc", 2, 2, 2, 2, 0}, {"pcd", 2, 2, 2, 2, 0}},
		},
		// Two scaling groups: prefill (replicas 2) over pleader 1 + pworker 4, decode (replicas 1)
		// over dleader 1 + dworker 2.
		"podcliqueset-multinode-disagg-pcsg.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-multinode-disaggregated-podcliqueset-0", minSubGroup: 4, pods: 13,
				subGroups: []subGroupWant{
					{"pleader", 1, 2}, // 1 × 2 prefill replicas; required 1 × minAvailable 1
					{"pworker", 4, 8}, // 4 × 2; required 4 × 1
					{"dleader", 1, 1},
					{"dworker", 2, 2},
				},
			}},
			roles: []roleWant{{"pleader", 2, 1, 2, 1, 0}, {"pworker", 8, 4, 8, 4, 0}, {"dleader", 1, 1, 1, 1, 0}, {"dworker", 2, 2, 2, 2, 0}},
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// DynamoGraphDeployment v1alpha1: one role per entry of the services MAP; pods = replicas ×
// multinode.nodeCount; GPUs from resources.{requests,limits}.gpu.
func TestDynamoGraphDeployment(t *testing.T) {
	cases := map[string]planWant{
		"dynamographdeployment-v1alpha1-sglang-disagg-multinode-services-map.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-sglang-disagg-multinode-dynamographdeployment", minSubGroup: 3, pods: 5,
				subGroups: []subGroupWant{{"frontend", 1, 1}, {"decode", 2, 2}, {"prefill", 2, 2}},
			}},
			roles: []roleWant{
				{"frontend", 1, 1, 1, 1, 0}, // map keys in order: "Frontend" sorts before lower case
				{"decode", 1, 1, 2, 2, 4},   // replicas 1 × nodeCount 2; limits.gpu "4" (not nvidia.com/gpu in the object)
				{"prefill", 1, 1, 2, 2, 4},
			},
			totalGPUs: 16, // (2 + 2) pods × 4
		},
		"dynamographdeployment-v1alpha1-trtllm-disagg-planner-4services.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-trtllm-disagg-planner-dynamographdeployment", minSubGroup: 4, pods: 4,
				subGroups: []subGroupWant{{"frontend", 1, 1}, {"planner", 1, 1}, {"trtllmdecodeworker", 1, 1}, {"trtllmprefillworker", 1, 1}},
			}},
			roles: []roleWant{
				{"frontend", 1, 1, 1, 1, 0},
				{"planner", 1, 1, 1, 1, 0},
				{"trtllmdecodeworker", 1, 1, 1, 1, 1}, // only the workers ask for GPUs
				{"trtllmprefillworker", 1, 1, 1, 1, 1},
			},
			totalGPUs: 2,
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// DynamoGraphDeployment v1beta1: the components LIST; pods = replicas × multinode.nodeCount;
// the gang requires minAvailable (default 1) replicas of each component. The manifest is the
// v1beta1 counterpart of the v1alpha1 sglang multinode example, and plans the same.
func TestDynamoGraphDeploymentV1beta1(t *testing.T) {
	checkPlan(t, "dynamographdeployment-v1beta1-sglang-disagg-multinode-components-list.yaml", planWant{
		podGroups: []podGroupWant{{
			name: "pg-sglang-disagg-multinode-dynamographdeployment", minSubGroup: 3, pods: 5,
			subGroups: []subGroupWant{{"frontend", 1, 1}, {"decode", 2, 2}, {"prefill", 2, 2}},
		}},
		roles: []roleWant{
			{"frontend", 1, 1, 1, 1, 0}, // list order; name "Frontend" in lower case
			{"decode", 1, 1, 2, 2, 4},   // replicas 1 × nodeCount 2; minAvailable default 1 replica = 2 pods; nvidia.com/gpu 4 in main
			{"prefill", 1, 1, 2, 2, 4},
		},
		totalGPUs: 16,
	})
}

// TrainJob: numNodes node pods with resourcesPerNode; the runtime (not the TrainJob) holds the
// rest.
func TestTrainJob(t *testing.T) {
	checkPlan(t, "trainjob-flux-resourcespernode-gpu.yaml", planWant{
		podGroups: []podGroupWant{{name: "pg-lammps-flux-trainjob", minMember: 2, pods: 2}}, // every node
		roles: []roleWant{
			{"node", 2, 2, 2, 2, 1},        // numNodes 2; resourcesPerNode nvidia.com/gpu 1 (requests and limits)
			{"initializer", 0, 0, 0, 0, 0}, // initializer jobs live in the runtime: not sized here
		},
		totalGPUs: 2,
	})
}

// The runtime manifests are ClusterTrainingRuntimes, not workloads: no definition plans them
// (their pods belong to TrainJobs). They show what a TrainJob plan cannot see: the torchtune
// runtime's initializer jobs and 2-GPU node, the DeepSpeed launcher run as a node.
func TestTrainingRuntimesAreNotWorkloads(t *testing.T) {
	for _, file := range []string{"trainjob-runtime-deepspeed-launcher-as-node.yaml", "trainjob-runtime-torchtune-3-rjobs-gpu2.yaml"} {
		objs, err := manifest.ReadFile(filepath.Join("testdata", file))
		require.NoError(t, err)
		require.Len(t, objs, 1)
		assert.Equal(t, "ClusterTrainingRuntime", objs[0].GetKind(), file)
		assert.Nil(t, catalogRegistry(t).Lookup(objs[0].GroupVersionKind()), file)
	}
}

// AppWrapper: one role per pod set, declared (podSets) or inferred for known kinds; the gang is
// every pod of every pod set (AppWrapper's expected pod count).
func TestAppWrapper(t *testing.T) {
	cases := map[string]planWant{
		// No podSets: inferred for the wrapped batch/v1 Job, 1 pod (parallelism default 1).
		"appwrapper-wrapped-gpu-job-req-and-limit.yaml": {
			podGroups: []podGroupWant{{name: "pg-sample-gpu-job-appwrapper", minMember: 1, pods: 1}},
			roles:     []roleWant{{"0-0", 1, 1, 1, 1, 4}}, // nvidia.com/gpu 4 in requests and limits: 4, not 8
			totalGPUs: 4,
		},
		// Declared podSets win: leader 2 + worker 3 = 5 pods, although the wrapped LWS makes
		// replicas 2 × (size 3 − 1) = 4 workers (6 pods). The gang follows AppWrapper's own
		// expected count (5); the sixth pod joins the PodGroup without being required.
		"appwrapper-wrapped-lws-explicit-podsets.yaml": {
			podGroups: []podGroupWant{{name: "pg-sample-lws-appwrapper", minMember: 5, pods: 5}},
			roles: []roleWant{
				{"0-0", 2, 2, 2, 2, 0}, // podSets[0] leaderTemplate replicas 2
				{"0-1", 3, 3, 3, 3, 0}, // podSets[1] workerTemplate replicas 3 (declared, not derived)
			},
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// Volcano Job: flat gang of spec.minAvailable pods (default: every pod), spread over the tasks
// in start order and clamped to the pods that exist.
func TestVolcanoJob(t *testing.T) {
	cases := map[string]planWant{
		// minAvailable 3 of 10 pods (9 workers + 1 master).
		"volcanojob-elastic-minavailable3-of-10.yaml": {
			podGroups: []podGroupWant{{name: "pg-elastic-job-job", minMember: 3, pods: 10}},
			roles: []roleWant{
				{"worker", 9, 3, 9, 3, 0}, // the first task takes the 3 (any 3 pods count for Volcano)
				{"master", 1, 0, 1, 0, 0},
			},
		},
		// INVALID: minAvailable 5 > 4 replicas (Volcano's webhook rejects it). The plan clamps to
		// the 4 pods and says so: KAI never gets a minimum its pods cannot meet.
		"volcanojob-invalid-minavailable-gt-replicas.yaml": {
			podGroups: []podGroupWant{{name: "pg-test-job-webhook-disallow-job", minMember: 4, pods: 4}},
			roles: []roleWant{
				{"task-1", 2, 2, 2, 2, 0},
				{"task-2", 2, 2, 2, 2, 0}, // asked 3 (5 − 2), clamped to its 2 replicas
			},
			notes: []string{"role task[task-2]: min replicas 3 above replicas 2; the gang uses 2"},
		},
		// minAvailable 1; job-nginx2 depends on job-nginx1, job-nginx3 on job-nginx2.
		"volcanojob-task-start-dependency-min1.yaml": {
			podGroups: []podGroupWant{{name: "pg-job-job", minMember: 1, pods: 11}},
			roles: []roleWant{
				{"job-nginx1", 1, 1, 1, 1, 0}, // starts first: takes the minimum
				{"job-nginx2", 5, 0, 5, 0, 0}, // created after job-nginx1 runs
				{"job-nginx3", 5, 0, 5, 0, 0},
			},
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// SparkApplication: 1 driver + executors (instances; with dynamic allocation
// max(initialExecutors, minExecutors, instances), floor minExecutors); the driver creates the
// executors, so only the driver is required.
func TestSparkApplication(t *testing.T) {
	executorsLater := []string{"role executor is kept out of the gang minimum (its pods are created only after those of driver start)"}
	cases := map[string]planWant{
		// GPU as {name, quantity}: the driver asks amd.com/gpu (not an NVIDIA GPU), the executor
		// nvidia.com/gpu 1.
		"sparkapplication-docs-gpu-struct-fragment.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-docs-gpu-fragment-sparkapplication", minSubGroup: 1, pods: 2,
				subGroups: []subGroupWant{{"driver", 1, 1}, {"executor", 1, 1}}, // executor keeps its own minimum
			}},
			roles: []roleWant{
				{"driver", 1, 1, 1, 1, 0},   // amd.com/gpu counts no NVIDIA GPU
				{"executor", 1, 1, 1, 0, 1}, // instances 1; not required (created by the driver)
			},
			totalGPUs: 1,
			notes:     executorsLater,
		},
		// Dynamic allocation: initialExecutors 2, minExecutors 1, maxExecutors 5, instances 1.
		"sparkapplication-dynamic-allocation-min1-max5.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-spark-pi-dynamic-allocation-sparkapplication", minSubGroup: 1, pods: 3,
				subGroups: []subGroupWant{{"driver", 1, 1}, {"executor", 1, 2}}, // minExecutors 1
			}},
			roles: []roleWant{
				{"driver", 1, 1, 1, 1, 0},
				{"executor", 2, 1, 2, 0, 0}, // max(2, 1, 1) = 2 to start; floor minExecutors 1
			},
			notes: executorsLater,
		},
		// batchScheduler volcano changes nothing here: 2 executors.
		"sparkapplication-volcano-batchscheduler.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-spark-pi-volcano-sparkapplication", minSubGroup: 1, pods: 3,
				subGroups: []subGroupWant{{"driver", 1, 1}, {"executor", 2, 2}},
			}},
			roles: []roleWant{
				{"driver", 1, 1, 1, 1, 0},
				{"executor", 2, 2, 2, 0, 0},
			},
			notes: executorsLater,
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// JobSet: a replicated job's pods = replicas (default 1) × min(parallelism (1), completions);
// one PodGroup, one sub-group per replicated job.
func TestJobSet(t *testing.T) {
	cases := map[string]planWant{
		"jobset-group-names.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-group-example-jobset", minSubGroup: 2, pods: 4,
				subGroups: []subGroupWant{{"rj-1", 2, 2}, {"rj-2", 2, 2}},
			}},
			roles: []roleWant{{"rj-1", 1, 1, 2, 2, 0}, {"rj-2", 1, 1, 2, 2, 0}}, // replicas 1 × parallelism 2
		},
		// replicas omitted: 1 each.
		"jobset-paralleljobs-two-rjobs.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-paralleljobs-jobset", minSubGroup: 2, pods: 5,
				subGroups: []subGroupWant{{"workers", 4, 4}, {"driver", 1, 1}},
			}},
			roles: []roleWant{{"workers", 1, 1, 4, 4, 0}, {"driver", 1, 1, 1, 1, 0}},
		},
		// suspend: true (the plan still describes the pods it will run); parallelism and
		// completions omitted (1 each); GPU in requests only.
		"jobset-suspended-gpu-defaults-parallelism.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-training-job-jobset", minSubGroup: 1, pods: 4,
				subGroups: []subGroupWant{{"workers", 4, 4}},
			}},
			roles:     []roleWant{{"workers", 4, 4, 4, 4, 1}},
			totalGPUs: 4,
		},
		// TPU multislice: replicas 2 × parallelism 4; google.com/tpu is no GPU.
		"jobset-tpu-multislice-replicas2.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-v6e-multislice-jobset", minSubGroup: 1, pods: 8,
				// 2 Jobs (slices) of 4 pods each: a parent requiring both Jobs, a leaf per Job
				// (JobSet labels each pod with its jobset.sigs.k8s.io/job-index).
				subGroups: []subGroupWant{{"slice (parent)", 2, 8}, {"slice/slice-0", 4, 4}, {"slice/slice-1", 4, 4}},
			}},
			roles: []roleWant{{"slice", 2, 2, 8, 8, 0}},
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// LeaderWorkerSet: replicas groups of size pods (1 leader + size − 1 workers); one PodGroup per
// group; without a leaderTemplate the leader uses the worker template.
func TestLeaderWorkerSet(t *testing.T) {
	groups := func(name string, n int, workers int32, pods int64) []podGroupWant {
		var out []podGroupWant
		for i := 0; i < n; i++ {
			out = append(out, podGroupWant{
				name: name + "-group-" + string(rune('0'+i)), minSubGroup: 2, pods: pods,
				subGroups: []subGroupWant{{"leader", 1, 1}, {"worker", workers, int64(workers)}},
			})
		}
		return out
	}
	cases := map[string]planWant{
		// size 2, replicas 2; GPU 1 in limits only on leader and worker.
		"lws-sglang-gpu-limits-only.yaml": {
			podGroups: groups("pg-sglang", 2, 1, 2),
			roles:     []roleWant{{"leader", 2, 2, 2, 2, 1}, {"worker", 2, 2, 2, 2, 1}}, // 2 groups × (2 − 1) workers
			totalGPUs: 4,
		},
		// No leaderTemplate, size 4, replicas 3, TPU.
		"lws-tpu-worker-template-only.yaml": {
			podGroups: groups("pg-leaderworkerset-sample", 3, 3, 4),
			roles:     []roleWant{{"leader", 3, 3, 3, 3, 0}, {"worker", 3, 3, 9, 9, 0}}, // 3 × (4 − 1)
		},
		// No leaderTemplate, size 4, replicas 2, schedulerName volcano in the template.
		"lws-volcano-worker-only-size4.yaml": {
			podGroups: groups("pg-lws-sample-volcano", 2, 3, 4),
			roles:     []roleWant{{"leader", 2, 2, 2, 2, 0}, {"worker", 2, 2, 6, 6, 0}},
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// TestPodsLandInTheirSubGroups places pods carrying the labels each framework's controller puts
// on its pods in the plan of a real manifest: the pod selectors must find the role, and the role
// its PodGroup and sub-group.
func TestPodsLandInTheirSubGroups(t *testing.T) {
	type podCase struct {
		file     string
		labels   map[string]string
		podGroup string
		subGroup string // "" when the PodGroup has no sub-groups
	}
	cases := map[string]podCase{
		"ray head": {"raycluster-kai-gpu-fraction-annotation.yaml",
			map[string]string{"ray.io/node-type": "head", "ray.io/group": "headgroup", "ray.io/cluster": "raycluster-half-gpu"},
			"pg-raycluster-half-gpu-raycluster", "headgroup"},
		"ray worker": {"raycluster-kai-gpu-fraction-annotation.yaml",
			map[string]string{"ray.io/node-type": "worker", "ray.io/group": "shared-gpu", "ray.io/cluster": "raycluster-half-gpu"},
			"pg-raycluster-half-gpu-raycluster", "shared-gpu"},
		"rayservice worker": {"rayservice-deepseek-2x8gpu.yaml",
			map[string]string{"ray.io/node-type": "worker", "ray.io/group": "gpu-group"},
			"pg-deepseek-r1-rayservice", "gpu-group"},
		"pytorch worker": {"pytorchjob-kai-elastic-min1-max3.yaml",
			map[string]string{"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "1"},
			"pg-elastic-example-imagenet-pytorchjob", "worker"},
		"mpi launcher": {"mpijob-tf-benchmarks-worker-gpu-limits.yaml",
			map[string]string{"training.kubeflow.org/job-role": "launcher"},
			"pg-tensorflow-benchmarks-mpijob", ""},
		"knative revision": {"knativeservice-multicontainer-sidecar.yaml",
			map[string]string{"serving.knative.dev/revision": "multi-container-test-00001"},
			"pg-multi-container-test-service", ""},
		"kserve multi-node head": {"inferenceservice-multinode-workerspec-pp2-tp1.yaml",
			map[string]string{"component": "predictor", "app": "isvc.huggingface-llama3-predictor"},
			"pg-huggingface-llama3-inferenceservice", "predictor"},
		"kserve multi-node worker": {"inferenceservice-multinode-workerspec-pp2-tp1.yaml",
			map[string]string{"component": "predictor", "app": "isvc.huggingface-llama3-predictor-worker"},
			"pg-huggingface-llama3-inferenceservice", "worker"},
		"kserve transformer": {"inferenceservice-transformer-predictor-two-components.yaml",
			map[string]string{"component": "transformer"},
			"pg-bert-v2-inferenceservice", "transformer"},
		"llm-d decode leader": {"llminferenceservice-v1alpha2-dp-ep-deepseek-pd-worker.yaml",
			map[string]string{"app.kubernetes.io/component": "llminferenceservice-workload-worker", "leaderworkerset.sigs.k8s.io/worker-index": "0"},
			"pg-deepseek-r1-0528-pd-llminferenceservice", "main"},
		"llm-d decode worker": {"llminferenceservice-v1alpha2-dp-ep-deepseek-pd-worker.yaml",
			map[string]string{"app.kubernetes.io/component": "llminferenceservice-workload-worker", "leaderworkerset.sigs.k8s.io/worker-index": "1"},
			"pg-deepseek-r1-0528-pd-llminferenceservice", "main-worker"},
		"llm-d prefill worker": {"llminferenceservice-v1alpha2-dp-ep-deepseek-pd-worker.yaml",
			map[string]string{"app.kubernetes.io/component": "llminferenceservice-workload-worker-prefill", "leaderworkerset.sigs.k8s.io/worker-index": "1"},
			"pg-deepseek-r1-0528-pd-llminferenceservice", "prefill-worker"},
		"llm-d prefill": {"llminferenceservice-v1alpha2-pd-qwen-gpu.yaml",
			map[string]string{"app.kubernetes.io/component": "llminferenceservice-workload-prefill"},
			"pg-qwen2-7b-instruct-pd-llminferenceservice", "prefill"},
		"nim": {"nimservice-hpa-min1-max2.yaml",
			map[string]string{"app.kubernetes.io/name": "meta-llama-3-2-1b-instruct"},
			"pg-meta-llama-3-2-1b-instruct-nimservice", ""},
		"milvus querynode": {"milvus-deployment-groups.yaml",
			map[string]string{"app.kubernetes.io/component": "querynode", "app.kubernetes.io/instance": "my-release"},
			"pg-my-release-milvus", "querynode"},
		"grove standalone clique": {"podcliqueset-autoscale-pcsg-simple1.yaml",
			map[string]string{"app.kubernetes.io/part-of": "simple1", "grove.io/podcliqueset-replica-index": "0", "grove.io/podclique": "simple1-0-pca"},
			"pg-simple1-podcliqueset-0", "pca"},
		"grove scaling-group clique": {"podcliqueset-multinode-disagg-pcsg.yaml",
			map[string]string{
				"app.kubernetes.io/part-of": "multinode-disaggregated", "grove.io/podcliqueset-replica-index": "0",
				"grove.io/podcliquescalinggroup": "multinode-disaggregated-0-prefill", "grove.io/podcliquescalinggroup-replica-index": "1",
				"grove.io/podclique": "multinode-disaggregated-0-prefill-1-pworker",
			},
			"pg-multinode-disaggregated-podcliqueset-0", "pworker"},
		"dynamo decode": {"dynamographdeployment-v1alpha1-sglang-disagg-multinode-services-map.yaml",
			map[string]string{"nvidia.com/dynamo-component": "decode"},
			"pg-sglang-disagg-multinode-dynamographdeployment", "decode"},
		"dynamo v1beta1 decode": {"dynamographdeployment-v1beta1-sglang-disagg-multinode-components-list.yaml",
			map[string]string{"nvidia.com/dynamo-component": "decode"},
			"pg-sglang-disagg-multinode-dynamographdeployment", "decode"},
		"dynamo v1beta1 frontend": {"dynamographdeployment-v1beta1-sglang-disagg-multinode-components-list.yaml",
			map[string]string{"nvidia.com/dynamo-component": "Frontend"},
			"pg-sglang-disagg-multinode-dynamographdeployment", "frontend"},
		"trainjob node": {"trainjob-flux-resourcespernode-gpu.yaml",
			map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "node", "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"},
			"pg-lammps-flux-trainjob", ""},
		"appwrapper lws worker": {"appwrapper-wrapped-lws-explicit-podsets.yaml",
			map[string]string{"workload.codeflare.dev/appwrapper": "sample-lws", "leaderworkerset.sigs.k8s.io/worker-index": "2"},
			"pg-sample-lws-appwrapper", ""},
		"volcano master": {"volcanojob-elastic-minavailable3-of-10.yaml",
			map[string]string{"volcano.sh/job-name": "elastic-job", "volcano.sh/task-spec": "master"},
			"pg-elastic-job-job", ""},
		"spark executor": {"sparkapplication-dynamic-allocation-min1-max5.yaml",
			map[string]string{"spark-role": "executor", "sparkoperator.k8s.io/app-name": "spark-pi-dynamic-allocation"},
			"pg-spark-pi-dynamic-allocation-sparkapplication", "executor"},
		"jobset rjob": {"jobset-paralleljobs-two-rjobs.yaml",
			map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "driver"},
			"pg-paralleljobs-jobset", "driver"},
		"lws worker of group 1": {"lws-sglang-gpu-limits-only.yaml",
			map[string]string{"leaderworkerset.sigs.k8s.io/group-index": "1", "leaderworkerset.sigs.k8s.io/worker-index": "1"},
			"pg-sglang-group-1", "worker"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := assignPod(t, tc.file, tc.labels)
			require.NoError(t, err)
			assert.Equal(t, tc.podGroup, a.PodGroup.Name)
			if tc.subGroup == "" {
				assert.Nil(t, a.SubGroup)
			} else if assert.NotNil(t, a.SubGroup) {
				assert.Equal(t, tc.subGroup, a.SubGroup.Name)
			}
		})
	}
}

// A TrainJob's initializer pods run before its nodes and are never placed in the nodes' gang.
func TestTrainJobInitializerPodsStayOutOfTheNodeGang(t *testing.T) {
	_, err := assignPod(t, "trainjob-flux-resourcespernode-gpu.yaml", map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "dataset-initializer"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "role initializer has 0 pods in the plan")
}

// assignPod places a pod with the given labels in the plan of a testdata workload.
func assignPod(t *testing.T, file string, labels map[string]string) (*gang.Assignment, error) {
	t.Helper()
	obj := workloadOf(t, file)
	c := catalogRegistry(t).Lookup(obj.GroupVersionKind())
	p, err := gang.Build(context.Background(), c, obj)
	require.NoError(t, err)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "default", Labels: labels}}
	podMap, err := expr.FromObject(pod)
	require.NoError(t, err)
	pl, err := c.PlacePod(context.Background(), podMap)
	if err != nil {
		return nil, err
	}
	return p.Assign(pl)
}

// TestAppWrapperInfersPodSetsLikeTheWrappedKind wraps real manifests of other kinds in an
// AppWrapper without podSets: AppWrapper infers the pod sets (InferPodSets), and the plan counts
// the pods AppWrapper expects.
func TestAppWrapperInfersPodSetsLikeTheWrappedKind(t *testing.T) {
	cases := []struct {
		file      string
		roles     []roleWant
		minMember int32
		totalGPUs float64
	}{
		{"jobset-paralleljobs-two-rjobs.yaml", []roleWant{
			{"0-0", 4, 4, 4, 4, 0}, // replicatedJobs[0]: replicas 1 × min(parallelism 4, completions 4)
			{"0-1", 1, 1, 1, 1, 0}, // replicatedJobs[1]: 1 × 1
		}, 5, 0},
		{"pytorchjob-elastic-echo-no-resources.yaml", []roleWant{
			{"0-0", 2, 2, 2, 2, 0}, // Worker replicas 2 (no Master); elasticPolicy is not AppWrapper's concern
		}, 2, 0},
		{"raycluster-kai-gpu-fraction-annotation.yaml", []roleWant{
			{"0-0", 1, 1, 1, 1, 0},   // head: 1
			{"0-1", 2, 2, 2, 2, 0.5}, // workerGroupSpecs[0].replicas 2, gpu-fraction 0.5
		}, 3, 1},
		{"rayjob-kueue-generatename.yaml", []roleWant{
			{"0-0", 1, 1, 1, 1, 0}, // rayClusterSpec head
			{"0-1", 1, 1, 1, 1, 0}, // small-group replicas 1
		}, 2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			objs, err := manifest.ReadFile(filepath.Join("testdata", tc.file))
			require.NoError(t, err)
			require.Len(t, objs, 1)
			aw := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
				"metadata": map[string]any{"name": "wrapped"},
				"spec":     map[string]any{"components": []any{map[string]any{"template": objs[0].Object}}},
			}}
			c := catalogRegistry(t).Lookup(aw.GroupVersionKind())
			require.NotNil(t, c)
			p, err := gang.Build(context.Background(), c, aw)
			require.NoError(t, err)
			got := make([]roleWant, 0, len(p.Roles))
			for _, r := range p.Roles {
				got = append(got, roleWant{r.Name, r.Replicas, r.MinReplicas, r.Pods, r.GangPods, r.GPUsPerPod.Devices()})
			}
			assert.Equal(t, tc.roles, got)
			require.Len(t, p.PodGroups, 1)
			require.NotNil(t, p.PodGroups[0].MinMember)
			assert.Equal(t, tc.minMember, *p.PodGroups[0].MinMember) // AppWrapper's expected pod count
			assert.InDelta(t, tc.totalGPUs, p.TotalGPUs.Devices(), 1e-9)
		})
	}
}
