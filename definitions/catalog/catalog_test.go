package catalog_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// catalogRegistry is a registry holding only the built-in catalog.
func catalogRegistry(t *testing.T) *definitions.Registry {
	t.Helper()
	registryOnce.Do(func() {
		var compiler *expr.Compiler
		compiler, registryErr = expr.NewCompiler(expr.Limits{})
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
	objs, err := manifest.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	require.Len(t, objs, 1, "%s holds one workload", file)
	c := catalogRegistry(t).Lookup(objs[0].GroupVersionKind())
	require.NotNil(t, c, "%s: no catalog definition for %s", file, objs[0].GroupVersionKind())
	p, err := gang.Build(context.Background(), c, objs[0])
	require.NoError(t, err, file)
	return p
}

// checkPlan compares a plan with what the framework's semantics say, and checks that every
// PodGroup is one KAI's PodGroup webhook accepts.
func checkPlan(t *testing.T, file string, want planWant) {
	t.Helper()
	p := buildPlan(t, file)
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
			require.NotNil(t, sg.MinMember, "%s: leaf sub-group %s needs minMember", file, sg.Name)
			got = append(got, subGroupWant{name: sg.Name, minMember: *sg.MinMember, pods: sg.Pods})
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
			assert.LessOrEqual(t, int(*pg.MinSubGroup), len(pg.SubGroups), "%s: minSubGroup within the sub-groups", file)
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
				name: "pg-raycluster-autoscaler-raycluster", // pg-<name, offline for the UID>-<podGroup.name>
				minSubGroup: 1, // only headgroup requires pods
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
		// clusterSelector only: no rayClusterSpec, so no head and no worker roles, no PodGroup.
		"rayjob-existing-cluster-selector.yaml": {
			podGroups: nil,
			roles:     nil,
			notes:     []string{`if .spec.rayClusterSpec.headGroupSpec then "headgroup" else empty end) resolved to nothing`},
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

// The old kubeflow.org/v1 MPIJob (training-operator) is another kind with other defaults: the
// v2beta1 definition must not be used for it, and the catalog has none for v1.
func TestMPIJobV1IsNotTheV2beta1Kind(t *testing.T) {
	objs, err := manifest.ReadFile(filepath.Join("testdata", "mpijob-v1-elastic-tf-mnist.yaml"))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	assert.Equal(t, schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "MPIJob"}, objs[0].GroupVersionKind())
	assert.Nil(t, catalogRegistry(t).Lookup(objs[0].GroupVersionKind()))
}

// Knative Service: a revision starts with max(initial-scale (1), min-scale (0)) pods; the gang
// minimum is min-scale (Knative autoscaling docs). Annotations are numeric strings.
func TestKnativeService(t *testing.T) {
	cases := map[string]planWant{
		// Legacy camelCase annotations minScale "50", maxScale "100".
		"knativeservice-minscale50-maxscale100-annotations.yaml": {
			podGroups: []podGroupWant{{name: "pg-activator-with-cc-service", minMember: 50, pods: 50}},
			roles:     []roleWant{{"revision", 50, 50, 50, 50, 0}}, // max(initial 1, min 50) = 50; gang min-scale 50
		},
		// No annotations, two containers and no resources.
		"knativeservice-multicontainer-sidecar.yaml": {
			// min-scale 0: no pod is required, but a PodGroup with pods gets minMember 1
			podGroups: []podGroupWant{{name: "pg-multi-container-test-service", minMember: 1, pods: 1}},
			roles:     []roleWant{{"revision", 1, 0, 1, 0, 0}}, // initial-scale default 1; min-scale default 0
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}
