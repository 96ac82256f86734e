package compat_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
)

// compile loads one definition file strictly (an upstream file must be the published format
// exactly) and compiles it.
func compile(t *testing.T, path string) *definitions.Compiled {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	loaded, err := definitions.Decode(f, path, definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	require.NoError(t, err, path)
	require.Len(t, loaded, 1, path)
	compiler, err := expr.NewCompiler(expr.Limits{Timeout: time.Minute}) // semantics, not the 1 s bound: see catalog_test.go semanticLimits
	require.NoError(t, err)
	c, err := definitions.Compile(loaded[0], compiler)
	require.NoError(t, err, path)
	return c
}

func workload(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	objs, err := manifest.ReadFile(path)
	require.NoError(t, err, path)
	require.Len(t, objs, 1, path)
	return objs[0]
}

func plan(t *testing.T, c *definitions.Compiled, obj *unstructured.Unstructured) *gang.Plan {
	t.Helper()
	p, err := gang.Build(context.Background(), c, obj)
	require.NoError(t, err, "%s on %s", c.Name(), obj.GetName())
	return p
}

// upstreamFor names the upstream catalog definition of each manifest, by file-name prefix.
var upstreamFor = []struct{ prefix, def string }{
	{"lws-", "leaderworkerset-x-k8s-io-leaderworkerset-v1"},
	{"podcliqueset-", "grove-io-podcliqueset-v1alpha1"},
	{"dynamographdeployment-v1alpha1-", "nvidia-com-dynamographdeployment-v1alpha1"},
	{"dynamographdeployment-v1beta1-", "nvidia-com-dynamographdeployment-v1beta1"},
	{"jobset-", "jobset-x-k8s-io-jobset-v1alpha2"},
	{"pytorchjob-", "kubeflow-org-pytorchjob-v1"},
	{"mpijob-", "kubeflow-org-mpijob-v2beta1"},
	{"raycluster-", "ray-io-raycluster-v1"},
	{"rayjob-", "ray-io-rayjob-v1"},
	{"rayservice-", "ray-io-rayservice-v1"},
	{"knativeservice-", "serving-knative-dev-service-v1"},
	{"inferenceservice-", "serving-kserve-io-inferenceservice-v1beta1"},
	{"llminferenceservice-", "serving-kserve-io-llminferenceservice-v1alpha2"},
	{"nimservice-", "apps-nvidia-com-nimservice-v1alpha1"},
	{"milvus-", "milvus-io-milvus-v1beta1"},
}

// TestUpstreamCatalogPlansEveryManifest: every upstream catalog definition loads strictly,
// compiles, and plans every real manifest of its kind without an error; every PodGroup has a
// gang (1 <= minMember <= pods, or minSubGroup), and a plan without a PodGroup says why.
func TestUpstreamCatalogPlansEveryManifest(t *testing.T) {
	files, err := filepath.Glob("testdata/manifests/*.yaml")
	require.NoError(t, err)
	require.Len(t, files, 36)
	used := map[string]bool{}
	for _, f := range files {
		base := filepath.Base(f)
		def := ""
		for _, u := range upstreamFor {
			if strings.HasPrefix(base, u.prefix) {
				def = u.def
				break
			}
		}
		require.NotEmpty(t, def, base)
		used[def] = true
		t.Run(base, func(t *testing.T) {
			c := compile(t, "testdata/upstream/"+def+".yaml")
			obj := workload(t, f)
			require.Equal(t, c.RootGVK().GVK(), obj.GroupVersionKind())
			p := plan(t, c, obj)
			for _, pg := range p.PodGroups {
				if pg.MinSubGroup == nil {
					require.NotNil(t, pg.MinMember, pg.Name)
					assert.GreaterOrEqual(t, *pg.MinMember, int32(1), pg.Name)
					assert.LessOrEqual(t, int64(*pg.MinMember), pg.Pods, pg.Name)
				}
			}
			if len(p.PodGroups) == 0 {
				assert.True(t, hasNote(p, "no PodGroup: "), "a plan without a PodGroup says why: %v", p.Notes)
			}
		})
	}
	all, err := filepath.Glob("testdata/upstream/*.yaml")
	require.NoError(t, err)
	for _, f := range all {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		c := compile(t, f) // every upstream file loads and compiles, with or without a manifest
		assert.Equal(t, name, c.Name())
		if !used[name] {
			assert.Equal(t, "agents-x-k8s-io-sandbox-v1beta1", name, "only the Sandbox has no real manifest in the project")
		}
	}
}

func hasNote(p *gang.Plan, sub string) bool {
	for _, n := range p.Notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

type wantPG struct {
	pods, minMember int64 // minMember 0: the PodGroup has sub-groups
}

func gangs(p *gang.Plan) []wantPG {
	out := []wantPG{}
	for _, pg := range p.PodGroups {
		w := wantPG{pods: pg.Pods}
		if pg.MinMember != nil {
			w.minMember = int64(*pg.MinMember)
		}
		out = append(out, w)
	}
	return out
}

// TestUpstreamGangs checks the gang of each upstream definition the issue names against the
// framework's semantics (each case says the rule), and the note where the upstream definition
// under- or overcounts.
func TestUpstreamGangs(t *testing.T) {
	cases := []struct {
		name, def, manifest string
		want                []wantPG
		notes               []string
	}{{
		// LWS API: replicas groups of size pods (1 leader + size-1 workers), each group
		// all-or-nothing. replicas 2, size 2: two gangs of 2. The upstream "group" counts the
		// group size (2), which happens to equal replicas here.
		name: "LWS 2 groups of 2", def: "leaderworkerset-x-k8s-io-leaderworkerset-v1", manifest: "lws-sglang-gpu-limits-only",
		want: []wantPG{{2, 2}, {2, 2}},
	}, {
		// replicas 2, size 4, no leaderTemplate (the leader uses the worker template): 2 gangs
		// of 4. Upstream's group counts 4 (the size), its leader 2 and its worker 6: the
		// replicas do not divide by 4, so gangmap takes their common divisor 2. Its leader path
		// reads only leaderTemplate, so the leader is uncounted (a note): gangs of 3.
		name: "LWS replicas 2 size 4 (upstream shape)", def: "leaderworkerset-x-k8s-io-leaderworkerset-v1", manifest: "lws-volcano-worker-only-size4",
		want:  []wantPG{{3, 3}, {3, 3}},
		notes: []string{"gangmap plans 2 per-replica gangs, their greatest common divisor", "role leader: no pod template resolved"},
	}, {
		name: "LWS replicas 3 size 4", def: "leaderworkerset-x-k8s-io-leaderworkerset-v1", manifest: "lws-tpu-worker-template-only",
		want:  []wantPG{{3, 3}, {3, 3}, {3, 3}},
		notes: []string{"gangmap plans 3 per-replica gangs"},
	}, {
		// Grove: each PodCliqueSet replica is a gang. Upstream groups by the replica index its
		// clique component selects replicas by, but the clique has several instances, so the
		// replicas cannot be counted: one gang of all replicas (spec.replicas 1 here: the same
		// gang). Cliques pca 3 + pcd 2 pods; the scaling group sga has no specDefinition and
		// counts its 1 replica (its cliques' pods are more: a note).
		name: "Grove several clique instances", def: "grove-io-podcliqueset-v1alpha1", manifest: "podcliqueset-autoscale-pcsg-simple1",
		want:  []wantPG{{6, 6}},
		notes: []string{`which has 2 instances, so its replicas cannot be counted`, `component "scalinggroup" has a scaleDefinition but no specDefinition`},
	}, {
		name: "Grove only scaling groups", def: "grove-io-podcliqueset-v1alpha1", manifest: "podcliqueset-multinode-disagg-pcsg",
		want:  []wantPG{{3, 3}},
		notes: []string{`which has 0 instances`, `counts its 2 replicas as pods`},
	}, {
		// Dynamo (Grove backend): the keys read the component label (nvidia.com/dynamo-component,
		// the service's instance id), not the replica label: no per-replica split, and KAI's
		// fallback makes one PodGroup per component (calcPodGroupName of the pod's key value), so
		// gangmap does too: Frontend 1, decode 1 × nodeCount 2, prefill 1 × nodeCount 2, each a
		// gang of its own (noted). "Frontend" is not a DNS-1123 name: KAI groups those pods
		// nowhere (validatePodGroupNameFromGroupingKeys), gangmap fits the name (noted).
		name: "Dynamo v1alpha1 multinode", def: "nvidia-com-dynamographdeployment-v1alpha1", manifest: "dynamographdeployment-v1alpha1-sglang-disagg-multinode-services-map",
		want:  []wantPG{{1, 1}, {2, 2}, {2, 2}},
		notes: []string{`alpha pod group "service" is 3 PodGroups`, `give "pg-sglang-disagg-multinode-Frontend", not a DNS-1123 subdomain`},
	}, {
		name: "Dynamo v1alpha1 4 services", def: "nvidia-com-dynamographdeployment-v1alpha1", manifest: "dynamographdeployment-v1alpha1-trtllm-disagg-planner-4services",
		want:  []wantPG{{1, 1}, {1, 1}, {1, 1}, {1, 1}},
		notes: []string{`alpha pod group "service" is 4 PodGroups`},
	}, {
		// v1beta1 upstream counts replicas only (multinode.nodeCount ignored): one PodGroup per
		// component (its key is the lower-cased component label), 1 each.
		name: "Dynamo v1beta1", def: "nvidia-com-dynamographdeployment-v1beta1", manifest: "dynamographdeployment-v1beta1-sglang-disagg-multinode-components-list",
		want:  []wantPG{{1, 1}, {1, 1}, {1, 1}},
		notes: []string{`alpha pod group "component" is 3 PodGroups`},
	}, {
		// JobSet: replicas default 1 (omitted here); workers parallelism 4, driver 1. Upstream
		// groups by jobset.sigs.k8s.io/replicatedjob-name, the replicated job's instance id, so
		// KAI's fallback makes one PodGroup per replicated job, and gangmap too (noted).
		// Upstream's replicas * parallelism meets null: read null-safe, with a note.
		name: "JobSet without replicas", def: "jobset-x-k8s-io-jobset-v1alpha2", manifest: "jobset-paralleljobs-two-rjobs",
		want:  []wantPG{{4, 4}, {1, 1}},
		notes: []string{"met null", "an absent count is 1 in a product", `alpha pod group "job" is 2 PodGroups (pg-paralleljobs-workers, pg-paralleljobs-driver)`},
	}, {
		// JobSet multislice: replicas 2 × parallelism 4 = 8.
		name: "JobSet multislice", def: "jobset-x-k8s-io-jobset-v1alpha2", manifest: "jobset-tpu-multislice-replicas2",
		want: []wantPG{{8, 8}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(t, compile(t, "testdata/upstream/"+tc.def+".yaml"), workload(t, "testdata/manifests/"+tc.manifest+".yaml"))
			assert.Equal(t, tc.want, gangs(p))
			for _, n := range tc.notes {
				assert.True(t, hasNote(p, n), "note %q in %v", n, p.Notes)
			}
		})
	}
}

// TestNullMeetsDefaults: expressions that meet null count 0 or the framework's default.
func TestNullMeetsDefaults(t *testing.T) {
	// A RayCluster without worker groups is its head alone (KubeRay): one gang of 1.
	rc := workload(t, "testdata/manifests/raycluster-kai-gpu-fraction-annotation.yaml")
	unstructured.RemoveNestedField(rc.Object, "spec", "workerGroupSpecs")
	p := plan(t, compile(t, "testdata/upstream/ray-io-raycluster-v1.yaml"), rc)
	assert.Equal(t, []wantPG{{1, 1}}, gangs(p))
	assert.True(t, hasNote(p, "an absent list has no entries"), "%v", p.Notes)

	// Milvus replicas -1 (HPA-managed) counts 0, as KAI's fallback counts it, with a note.
	m := workload(t, "testdata/manifests/milvus-cluster-components-map-resources.yaml")
	require.NoError(t, unstructured.SetNestedField(m.Object, int64(-1), "spec", "components", "queryNode", "replicas"))
	require.NoError(t, unstructured.SetNestedField(m.Object, int64(2), "spec", "components", "dataNode", "replicas"))
	p = plan(t, compile(t, "testdata/upstream/milvus-io-milvus-v1beta1.yaml"), m)
	assert.Equal(t, []wantPG{{2, 2}}, gangs(p), "querynode 0 + datanode 2")
	assert.True(t, hasNote(p, "role querynode: replicasPath gave -1; counted 0"), "%v", p.Notes)
}

// TestKAIFallbackDefinitions plans KAI's own fallback test definitions (grouper_test.go,
// rewritten as YAML) and checks KAI's expected values, and where gangmap differs.
func TestKAIFallbackDefinitions(t *testing.T) {
	withTemplates := workload(t, "testdata/kai/pyflow-with-templates.yaml")

	// TestGetPodGroupMetadata_PodGroupV2: minSubGroup 2, master 1, worker 2, topologies.
	p := plan(t, compile(t, "testdata/kai/kai-pyflow-podgroup-v2.yaml"), withTemplates)
	require.Len(t, p.PodGroups, 1)
	pg := p.PodGroups[0]
	assert.Equal(t, "pg-a1b2c3d4-e5f6-7890-abcd-ef1234567890-training", pg.Name)
	assert.Nil(t, pg.MinMember)
	assert.Equal(t, int32(2), *pg.MinSubGroup)
	require.Len(t, pg.SubGroups, 2)
	assert.Equal(t, "master", pg.SubGroups[0].Name)
	assert.Equal(t, int32(1), *pg.SubGroups[0].MinMember)
	assert.Equal(t, "worker", pg.SubGroups[1].Name)
	assert.Equal(t, int32(2), *pg.SubGroups[1].MinMember)
	require.NotNil(t, pg.Topology)
	assert.Equal(t, "rack-topology", pg.Topology.TopologyName)
	require.NotNil(t, pg.SubGroups[1].Topology)
	assert.Equal(t, "gpu-topology", pg.SubGroups[1].Topology.TopologyName)

	// TestGetPodGroupMetadata_PodGroupV2DoesNotRequireSpecDefinition, on KAI's object as it is
	// (no templates): the components are scaled roles, master 1 and worker 2.
	p = plan(t, compile(t, "testdata/kai/kai-pyflow-podgroup-v2-no-spec.yaml"), workload(t, "testdata/kai/pyflow-object.yaml"))
	require.Len(t, p.PodGroups, 1)
	assert.Equal(t, int32(2), *p.PodGroups[0].MinSubGroup)
	assert.Equal(t, int32(1), *p.PodGroups[0].SubGroups[0].MinMember)
	assert.Equal(t, int32(2), *p.PodGroups[0].SubGroups[1].MinMember)
	c := compile(t, "testdata/kai/kai-pyflow-podgroup-v2-no-spec.yaml")
	pl, err := c.PlacePod(context.Background(), map[string]any{"metadata": map[string]any{"labels": map[string]any{"role": "worker", "job-name": "pyflow-example"}}})
	require.NoError(t, err)
	a, err := p.Assign(pl)
	require.NoError(t, err)
	assert.Equal(t, "worker", a.SubGroup.Name, "a pod of a component without specDefinition lands in its sub-group, as KAI's PodsReferences")

	// TestGetPodGroupMetadata_PodGroupV2TakesPrecedenceOverAlphaPodGroups: the v2 gang. KAI
	// lists only the worker sub-group (minSubGroup 1), so a master pod lands in none and KAI
	// never schedules it; gangmap adds the master's sub-group (minSubGroup 2).
	p = plan(t, compile(t, "testdata/kai/kai-pyflow-v2-over-alpha.yaml"), withTemplates)
	require.Len(t, p.PodGroups, 1)
	assert.Equal(t, "pg-a1b2c3d4-e5f6-7890-abcd-ef1234567890-v2", p.PodGroups[0].Name)
	assert.Equal(t, int32(2), *p.PodGroups[0].MinSubGroup)

	// TestGetPodGroupMetadata_AlphaPodGroups: minMember 3, no sub-groups.
	p = plan(t, compile(t, "testdata/kai/kai-pyflow-alpha.yaml"), withTemplates)
	assert.Equal(t, []wantPG{{3, 3}}, gangs(p))
	assert.Empty(t, p.PodGroups[0].SubGroups)
	// On KAI's object without templates, gangmap counts no made-up pods and says why.
	p = plan(t, compile(t, "testdata/kai/kai-pyflow-alpha.yaml"), workload(t, "testdata/kai/pyflow-object.yaml"))
	assert.Empty(t, p.PodGroups)
	assert.True(t, hasNote(p, "no PodGroup: "), "%v", p.Notes)

	// hub_test's createTestKarta: podGroup without sub-groups: minMember = replicas (3).
	p = plan(t, compile(t, "testdata/kai/kai-hub-testresource.yaml"), workload(t, "testdata/kai/testresource.yaml"))
	assert.Equal(t, []wantPG{{3, 3}}, gangs(p))
}

// TestAlphaFiltersJudgedOnThePod: an alpha member's filter on a label the operator sets (the
// template lacks it) keeps the role in the gang, and each pod is judged on itself, as KAI's
// fallback judges filters (pod_querier PassesFilters on the pod).
func TestAlphaFiltersJudgedOnThePod(t *testing.T) {
	src, err := os.ReadFile("testdata/kai/kai-pyflow-alpha.yaml")
	require.NoError(t, err)
	doc := strings.Replace(string(src), `            - componentName: pyflow
              groupByKeyPaths: [".metadata.labels[\"job-name\"]"]`, `            - componentName: pyflow
              groupByKeyPaths: [".metadata.labels[\"job-name\"]"]
              filters: ['.metadata.labels["pyflow.example.com/rank"] != null']`, 1)
	require.NotEqual(t, string(src), doc)
	loaded, err := definitions.Decode(strings.NewReader(doc), "filtered", definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	require.NoError(t, err)
	compiler, err := expr.NewCompiler(expr.Limits{Timeout: time.Minute}) // semantics, not the 1 s bound: see catalog_test.go semanticLimits
	require.NoError(t, err)
	c, err := definitions.Compile(loaded[0], compiler)
	require.NoError(t, err)

	p := plan(t, c, workload(t, "testdata/kai/pyflow-with-templates.yaml"))
	assert.Equal(t, []wantPG{{3, 3}}, gangs(p), "the template lacks the operator's label: the roles stay in the gang")
	assert.True(t, hasNote(p, "each pod joins it only if the filters hold on the pod itself"), "%v", p.Notes)

	pod := func(labels map[string]any) map[string]any {
		return map[string]any{"metadata": map[string]any{"labels": labels}}
	}
	pl, err := c.PlacePod(context.Background(), pod(map[string]any{"role": "worker", "job-name": "pyflow-example", "pyflow.example.com/rank": "1"}))
	require.NoError(t, err)
	a, err := p.Assign(pl)
	require.NoError(t, err, "the operator's label is on the pod: the filter passes")
	assert.Equal(t, p.PodGroups[0], a.PodGroup)

	pl, err = c.PlacePod(context.Background(), pod(map[string]any{"role": "worker", "job-name": "pyflow-example"}))
	require.NoError(t, err)
	_, err = p.Assign(pl)
	assert.ErrorIs(t, err, gang.ErrNotGrouped, "a pod the filter rejects is left to KAI")
}

// TestMinimumWithoutReplicas: a component with only a minReplicasPath (upstream Knative
// min-scale) runs at least that many pods, and the gang requires them, as KAI's
// CalculateSubtreeScale takes the minimum first. The real manifest writes the older minScale
// spelling, which upstream's path does not read (gang of 1, the default); with min-scale 3 the
// gang is 3.
func TestMinimumWithoutReplicas(t *testing.T) {
	c := compile(t, "testdata/upstream/serving-knative-dev-service-v1.yaml")
	ks := workload(t, "testdata/manifests/knativeservice-minscale50-maxscale100-annotations.yaml")
	assert.Equal(t, []wantPG{{1, 1}}, gangs(plan(t, c, ks)))
	require.NoError(t, unstructured.SetNestedField(ks.Object, "3", "spec", "template", "metadata", "annotations", "autoscaling.knative.dev/min-scale"))
	assert.Equal(t, []wantPG{{3, 3}}, gangs(plan(t, c, ks)))
}

// TestUpperCaseComponentNames: upstream accepts any component name; gangmap accepts upper case
// and derives sub-group names in lower case (gang.SanitizeLabel), as KAI's PodGroup CRD needs
// DNS labels there.
func TestUpperCaseComponentNames(t *testing.T) {
	src, err := os.ReadFile("testdata/kai/kai-pyflow-podgroup-v2.yaml")
	require.NoError(t, err)
	doc := strings.NewReplacer("name: master", "name: Master", "componentName: master", "componentName: Master",
		"name: worker", "name: Worker_Group", "componentName: worker", "componentName: Worker_Group").Replace(string(src))
	loaded, err := definitions.Decode(strings.NewReader(doc), "upper", definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	require.NoError(t, err)
	compiler, err := expr.NewCompiler(expr.Limits{Timeout: time.Minute}) // semantics, not the 1 s bound: see catalog_test.go semanticLimits
	require.NoError(t, err)
	c, err := definitions.Compile(loaded[0], compiler)
	require.NoError(t, err)
	p := plan(t, c, workload(t, "testdata/kai/pyflow-with-templates.yaml"))
	require.Len(t, p.PodGroups, 1)
	var names []string
	for _, sg := range p.PodGroups[0].SubGroups {
		names = append(names, sg.Name)
	}
	assert.Equal(t, []string{"master", "worker-group"}, names)
}

// TestKnownUndercountsAreNoted: where an upstream definition is known to undercount on a real
// manifest (definitions/advisories.yaml, matched on the upstream expression), the plan says so.
func TestKnownUndercountsAreNoted(t *testing.T) {
	for _, tc := range []struct{ manifest, def, note string }{
		{"raycluster-tpu-numofhosts4-min0", "ray-io-raycluster-v1", "not numOfHosts pods per replica"},
		{"dynamographdeployment-v1beta1-sglang-disagg-multinode-components-list", "nvidia-com-dynamographdeployment-v1beta1", "not its multinode.nodeCount pods per replica"},
		{"inferenceservice-multinode-workerspec-pp2-tp1", "serving-kserve-io-inferenceservice-v1beta1", "multi-node workerSpec pods"},
		{"llminferenceservice-v1alpha2-dp-ep-deepseek-pd-worker", "serving-kserve-io-llminferenceservice-v1alpha2", "not the group's size"},
		{"knativeservice-minscale50-maxscale100-annotations", "serving-knative-dev-service-v1", "writes minScale"},
	} {
		t.Run(tc.manifest, func(t *testing.T) {
			p := plan(t, compile(t, "testdata/upstream/"+tc.def+".yaml"), workload(t, "testdata/manifests/"+tc.manifest+".yaml"))
			assert.True(t, hasNote(p, tc.note), "%v", p.Notes)
		})
	}
	// A manifest without the feature gets no such note.
	p := plan(t, compile(t, "testdata/upstream/ray-io-raycluster-v1.yaml"), workload(t, "testdata/manifests/raycluster-kai-gpu-fraction-annotation.yaml"))
	assert.False(t, hasNote(p, "numOfHosts"), "%v", p.Notes)
}

// TestRefusalsSayWhatKAIDoes: a definition KAI's hub accepts but gangmap refuses names the field
// path, what KAI's fallback would do with it and how to write it for gangmap; an upper-case
// podGroup name, which KAI would write as it is, is accepted and lower-cased.
func TestRefusalsSayWhatKAIDoes(t *testing.T) {
	src, err := os.ReadFile("testdata/kai/kai-pyflow-podgroup-v2.yaml")
	require.NoError(t, err)
	compiler, err := expr.NewCompiler(expr.Limits{Timeout: time.Minute}) // semantics, not the 1 s bound: see catalog_test.go semanticLimits
	require.NoError(t, err)
	load := func(doc string) (*definitions.Compiled, error) {
		loaded, err := definitions.Decode(strings.NewReader(doc), "variant", definitions.SourceFile, definitions.DecodeOptions{Strict: true})
		require.NoError(t, err)
		return definitions.Compile(loaded[0], compiler)
	}
	_, err = load(strings.Replace(string(src), "- componentName: master", "- componentName: chief", 1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.optimizationInstructions.gangScheduling.podGroup.subGroups[0].componentName")
	assert.Contains(t, err.Error(), `KAI's fallback accepts the definition but fails every pod's grouping with "component not found"`)
	assert.Contains(t, err.Error(), "for gangmap, name one of the definition's components")

	c, err := load(strings.Replace(string(src), "name: training", "name: Training_Run", 1))
	require.NoError(t, err)
	p := plan(t, c, workload(t, "testdata/kai/pyflow-with-templates.yaml"))
	require.Len(t, p.PodGroups, 1)
	assert.Equal(t, "pg-a1b2c3d4-e5f6-7890-abcd-ef1234567890-training-run", p.PodGroups[0].Name)
}
