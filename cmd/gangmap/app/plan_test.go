package app

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// planDoc mirrors the -o json contract of "gangmap plan".
type planDoc struct {
	Plans []struct {
		Workload struct {
			APIVersion, Kind, Namespace, Name string
		} `json:"workload"`
		Definition struct {
			Name, Source string
		} `json:"definition"`
		PodGroups []struct {
			Name        string `json:"name"`
			MinMember   *int   `json:"minMember"`
			MinSubGroup *int   `json:"minSubGroup"`
			SubGroups   []struct {
				Name       string  `json:"name"`
				Parent     *string `json:"parent"`
				MinMember  *int    `json:"minMember"`
				GPUsPerPod float64 `json:"gpusPerPod"`
				GPUs       float64 `json:"gpus"`
			} `json:"subGroups"`
			Pods int     `json:"pods"`
			GPUs float64 `json:"gpus"`
		} `json:"podGroups"`
		Roles []struct {
			Component   string  `json:"component"`
			Instance    string  `json:"instance"`
			Replicas    int     `json:"replicas"`
			MinReplicas int     `json:"minReplicas"`
			Pods        int     `json:"pods"`
			GangPods    int     `json:"gangPods"`
			GPUsPerPod  float64 `json:"gpusPerPod"`
			GPUs        float64 `json:"gpus"`
		} `json:"roles"`
		TotalGPUs   float64 `json:"totalGPUs"`
		Error       string  `json:"error"`
		NativeInKAI bool    `json:"nativeInKAI"`
		Note        string  `json:"note"`
	} `json:"plans"`
}

const seed = "testdata/manifests/jobset-leader-workers.yaml"

func planJSON(t *testing.T, wantCode int, args ...string) (planDoc, result) {
	t.Helper()
	r := gangmap(t, append([]string{"plan", "-o", "json"}, args...)...)
	require.Equal(t, wantCode, r.code, "stderr: %s", r.stderr)
	var doc planDoc
	decodeOne(t, r.stdout, &doc)
	return doc, r
}

func TestPlanSeedJobSetJSON(t *testing.T) {
	doc, r := planJSON(t, ExitOK, "-f", seed)
	assert.Empty(t, r.stderr)
	require.Len(t, doc.Plans, 1)
	p := doc.Plans[0]
	assert.Equal(t, "jobset.x-k8s.io/v1alpha2", p.Workload.APIVersion)
	assert.Equal(t, "JobSet", p.Workload.Kind)
	assert.Equal(t, "default", p.Workload.Namespace)
	assert.Equal(t, "train-llm", p.Workload.Name)
	assert.Equal(t, "jobset-x-k8s-io-jobset-v1alpha2", p.Definition.Name)
	assert.Equal(t, "catalog", p.Definition.Source)
	assert.Empty(t, p.Error)

	// JobSet semantics: each replicatedJob runs replicas × min(parallelism, completions) pods:
	// leader 1 × 1 = 1 pod, workers 2 × 1 = 2 pods; every pod has 4 nvidia.com/gpu in limits (a
	// limit without a request counts as the request), so leader 4 GPUs, workers 8, total 12. The
	// whole JobSet is one gang with one sub-group per replicatedJob, so the PodGroup counts its
	// sub-groups (minSubGroup 2: both require pods) and has no minMember (KAI rejects both).
	require.Len(t, p.PodGroups, 1)
	pg := p.PodGroups[0]
	assert.Equal(t, "pg-train-llm-jobset", pg.Name)
	assert.Nil(t, pg.MinMember)
	require.NotNil(t, pg.MinSubGroup)
	assert.Equal(t, 2, *pg.MinSubGroup)
	assert.Equal(t, 3, pg.Pods)
	assert.Equal(t, 12.0, pg.GPUs)
	require.Len(t, pg.SubGroups, 2)
	for i, want := range []struct {
		name      string
		min       int
		gpusPer   float64
		gpus      float64
		parentNil bool
	}{{"leader", 1, 4, 4, true}, {"workers", 2, 4, 8, true}} {
		sg := pg.SubGroups[i]
		assert.Equal(t, want.name, sg.Name)
		require.NotNil(t, sg.MinMember)
		assert.Equal(t, want.min, *sg.MinMember, sg.Name)
		assert.Equal(t, want.gpusPer, sg.GPUsPerPod, sg.Name)
		assert.Equal(t, want.gpus, sg.GPUs, sg.Name)
		assert.Nil(t, sg.Parent, sg.Name)
	}

	require.Len(t, p.Roles, 2)
	leader, workers := p.Roles[0], p.Roles[1]
	assert.Equal(t, "replicatedjob", leader.Component)
	assert.Equal(t, "leader", leader.Instance)
	assert.Equal(t, []int{1, 1, 1, 1}, []int{leader.Replicas, leader.MinReplicas, leader.Pods, leader.GangPods})
	assert.Equal(t, []float64{4, 4}, []float64{leader.GPUsPerPod, leader.GPUs})
	assert.Equal(t, "workers", workers.Instance)
	assert.Equal(t, []int{2, 2, 2, 2}, []int{workers.Replicas, workers.MinReplicas, workers.Pods, workers.GangPods})
	assert.Equal(t, []float64{4, 8}, []float64{workers.GPUsPerPod, workers.GPUs})
	assert.Equal(t, 12.0, p.TotalGPUs)
}

// The JSON contract is about keys and nulls too: check them on the raw document.
func TestPlanJSONContractKeys(t *testing.T) {
	r := gangmap(t, "plan", "-o", "json", "-f", seed)
	require.Equal(t, ExitOK, r.code)
	var raw map[string][]map[string]any
	decodeOne(t, r.stdout, &raw)
	require.Len(t, raw["plans"], 1)
	p := raw["plans"][0]
	for _, k := range []string{"workload", "definition", "podGroups", "roles", "totalGPUs"} {
		assert.Contains(t, p, k)
	}
	assert.Equal(t, map[string]any{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "namespace": "default", "name": "train-llm"}, p["workload"])
	pg := p["podGroups"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "minMember", "minSubGroup", "subGroups", "gpus"} {
		assert.Contains(t, pg, k)
	}
	assert.Nil(t, pg["minMember"], "minMember is a JSON null, not absent")
	sg := pg["subGroups"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "parent", "minMember", "gpusPerPod", "gpus"} {
		assert.Contains(t, sg, k)
	}
	role := p["roles"].([]any)[0].(map[string]any)
	for _, k := range []string{"component", "instance", "replicas", "minReplicas", "pods", "gangPods", "gpusPerPod", "gpus"} {
		assert.Contains(t, role, k)
	}
}

func TestPlanYAMLIsTheSameDocument(t *testing.T) {
	j := gangmap(t, "plan", "-o", "json", "-f", seed)
	y := gangmap(t, "plan", "-o", "yaml", "-f", seed)
	require.Equal(t, ExitOK, y.code)
	fromYAML, err := yaml.YAMLToJSON([]byte(y.stdout))
	require.NoError(t, err)
	assert.JSONEq(t, j.stdout, string(fromYAML))
	assert.True(t, strings.HasPrefix(y.stdout, "plans:\n"), y.stdout)
}

func TestPlanSeedJobSetTable(t *testing.T) {
	r := gangmap(t, "plan", "-f", seed) // table is the default
	require.Equal(t, ExitOK, r.code, r.stderr)
	lines := strings.Split(r.stdout, "\n")
	assert.Equal(t, "JobSet/train-llm (namespace default)   definition: jobset-x-k8s-io-jobset-v1alpha2 (catalog)", lines[0])
	assert.Contains(t, r.stdout, "TOTAL GPUs: 12\n")
	assert.Regexp(t, `(?m)^  NAME +MIN-MEMBER +MIN-SUBGROUP +SUB-GROUPS +PODS +GPUS$`, r.stdout)
	assert.Regexp(t, `(?m)^  pg-train-llm-jobset +- +2 +leader:1,workers:2 +3 +12$`, r.stdout)
	assert.Regexp(t, `(?m)^  ROLE +COMPONENT +INSTANCE +REPLICAS +MIN +PODS +GANG-PODS +GPUS/POD +GPUS$`, r.stdout)
	assert.Regexp(t, `(?m)^  leader +replicatedjob +leader +1 +1 +1 +1 +4 +4$`, r.stdout)
	assert.Regexp(t, `(?m)^  workers +replicatedjob +workers +2 +2 +2 +2 +4 +8$`, r.stdout)
	// JobSet is in KAI v0.17's native table: the plan says gangmap would not group it in a cluster.
	assert.Contains(t, r.stdout, "KAI groups JobSet natively")
}

func TestPlanLWSReplicas2Size4(t *testing.T) {
	doc, _ := planJSON(t, ExitOK, "-f", "testdata/manifests/lws-replicas2-size4-8gpu-limits.yaml")
	require.Len(t, doc.Plans, 1)
	p := doc.Plans[0]
	// LeaderWorkerSet semantics: replicas 2 groups, each of size 4 pods = 1 leader + 3 workers;
	// a group is LWS's all-or-nothing unit, so one PodGroup per group. Every pod has 8
	// nvidia.com/gpu in limits: 4 × 8 = 32 GPUs per group, 2 × 32 = 64 in total.
	require.Len(t, p.PodGroups, 2)
	for i, pg := range p.PodGroups {
		assert.Equal(t, []string{"pg-sglang-large-group-0", "pg-sglang-large-group-1"}[i], pg.Name)
		assert.Nil(t, pg.MinMember)
		require.NotNil(t, pg.MinSubGroup)
		assert.Equal(t, 2, *pg.MinSubGroup, pg.Name)
		assert.Equal(t, 4, pg.Pods, pg.Name)
		assert.Equal(t, 32.0, pg.GPUs, pg.Name)
		require.Len(t, pg.SubGroups, 2)
		assert.Equal(t, "leader", pg.SubGroups[0].Name)
		assert.Equal(t, 1, *pg.SubGroups[0].MinMember)
		assert.Equal(t, 8.0, pg.SubGroups[0].GPUs)
		assert.Equal(t, "worker", pg.SubGroups[1].Name)
		assert.Equal(t, 3, *pg.SubGroups[1].MinMember)
		assert.Equal(t, 24.0, pg.SubGroups[1].GPUs)
	}
	// Roles count across the whole LWS: 2 leaders (16 GPUs) and 2 × 3 = 6 workers (48 GPUs).
	require.Len(t, p.Roles, 2)
	assert.Equal(t, []int{2, 16}, []int{p.Roles[0].Pods, int(p.Roles[0].GPUs)})
	assert.Equal(t, []int{6, 48}, []int{p.Roles[1].Pods, int(p.Roles[1].GPUs)})
	assert.Equal(t, 64.0, p.TotalGPUs)
}

// Real manifests from the frameworks' repositories (first line of each file names its source).
func TestPlanRealManifests(t *testing.T) {
	t.Run("jobset paralleljobs", func(t *testing.T) {
		doc, _ := planJSON(t, ExitOK, "-f", "testdata/manifests/jobset-paralleljobs-two-rjobs.yaml")
		p := doc.Plans[0]
		// replicas omitted = 1 (JobSet default); workers parallelism 4 and completions 4 → 4 pods
		// at once; driver 1 → 1 pod. No resources → 0 GPUs. One gang, sub-groups in spec order.
		require.Len(t, p.PodGroups, 1)
		pg := p.PodGroups[0]
		assert.Equal(t, 2, *pg.MinSubGroup)
		assert.Equal(t, 5, pg.Pods)
		assert.Equal(t, []string{"workers", "driver"}, []string{pg.SubGroups[0].Name, pg.SubGroups[1].Name})
		assert.Equal(t, []int{4, 1}, []int{*pg.SubGroups[0].MinMember, *pg.SubGroups[1].MinMember})
		assert.Equal(t, 0.0, p.TotalGPUs)
	})
	t.Run("lws sglang", func(t *testing.T) {
		doc, _ := planJSON(t, ExitOK, "-f", "testdata/manifests/lws-sglang-gpu-limits-only.yaml")
		p := doc.Plans[0]
		// replicas 2, size 2: per group 1 leader + 1 worker, 1 GPU (limits only) each → 2 GPUs
		// per group, 4 in total.
		require.Len(t, p.PodGroups, 2)
		for _, pg := range p.PodGroups {
			assert.Equal(t, 2, *pg.MinSubGroup)
			assert.Equal(t, []int{1, 1}, []int{*pg.SubGroups[0].MinMember, *pg.SubGroups[1].MinMember})
			assert.Equal(t, 2.0, pg.GPUs)
		}
		assert.Equal(t, 4.0, p.TotalGPUs)
	})
	t.Run("paddlejob simple-gpu", func(t *testing.T) {
		doc, _ := planJSON(t, ExitOK, "-f", "../../../definitions/catalog/testdata/paddlejob-simple-gpu-collective-2workers-2gpu.yaml")
		p := doc.Plans[0]
		// training-operator v1.9.4 examples/paddlepaddle/simple-gpu.yaml: Worker only, replicas 2,
		// limits nvidia.com/gpu 2; no minAvailable, so every pod (common/job.go ReconcileJobs);
		// no Master spec, so only the worker sub-group has pods.
		require.Len(t, p.PodGroups, 1)
		pg := p.PodGroups[0]
		assert.Equal(t, "pg-paddle-simple-gpu-paddlejob", pg.Name)
		assert.Equal(t, 1, *pg.MinSubGroup)
		require.Len(t, pg.SubGroups, 1)
		assert.Equal(t, "worker", pg.SubGroups[0].Name)
		assert.Equal(t, 2, *pg.SubGroups[0].MinMember)
		assert.Equal(t, 4.0, p.TotalGPUs)
	})
}

func TestPlanUnknownKindIsAnEntryAndExit1(t *testing.T) {
	doc, r := planJSON(t, ExitProblems, "-f", "testdata/manifests/unknown-kind-and-jobset.yaml")
	require.Len(t, doc.Plans, 2)
	foo, js := doc.Plans[0], doc.Plans[1]
	assert.Equal(t, "Foo", foo.Workload.Kind)
	assert.Equal(t, "bar", foo.Workload.Name)
	assert.Equal(t, "team-a", foo.Workload.Namespace)
	assert.Equal(t, "example.com/v1", foo.Workload.APIVersion)
	assert.Equal(t, "Foo/bar (namespace team-a): no usable Workload Map definition for kind Foo.example.com/v1; add one with --definitions"+
		" (without one, gangmap leaves the kind to KAI's default grouper: one PodGroup pg-<name>-<uid> of minMember 1 for the workload's pods, no gang)", foo.Error)
	assert.Empty(t, foo.PodGroups)
	// The other workload is still planned in the same document.
	assert.Empty(t, js.Error)
	assert.Equal(t, 12.0, js.TotalGPUs)
	assert.Empty(t, r.stderr)

	table := gangmap(t, "plan", "-f", "testdata/manifests/unknown-kind-and-jobset.yaml")
	assert.Equal(t, ExitProblems, table.code)
	assert.Contains(t, table.stdout, "error: Foo/bar (namespace team-a): no usable Workload Map definition")
	assert.Contains(t, table.stdout, "TOTAL GPUs: 12\n")
}

func TestPlanOtherVersionHint(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/v1alpha1.yaml", strings.Replace(readFile(t, seed), "jobset.x-k8s.io/v1alpha2", "jobset.x-k8s.io/v1alpha1", 1))
	doc, _ := planJSON(t, ExitProblems, "-f", dir+"/v1alpha1.yaml")
	assert.Contains(t, doc.Plans[0].Error, "definitions exist for version v1alpha2 only")
}

func TestPlanUnreadableInputExit2(t *testing.T) {
	r := gangmap(t, "plan", "-o", "json", "-f", "testdata/manifests/does-not-exist.yaml")
	assert.Equal(t, ExitUnusable, r.code)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "testdata/manifests/does-not-exist.yaml: no such file or directory")

	r = gangmap(t, "plan", "-o", "json", "-f", seed, "-f", "testdata/manifests/invalid.yaml")
	assert.Equal(t, ExitUnusable, r.code)
	assert.Empty(t, r.stdout, "no partial document when an input is unusable")
	assert.Contains(t, r.stderr, "testdata/manifests/invalid.yaml: document 0: invalid YAML")

	empty := t.TempDir() + "/empty.yaml"
	writeFile(t, empty, "# nothing here\n")
	r = gangmap(t, "plan", "-f", empty)
	assert.Equal(t, ExitUnusable, r.code)
	assert.Contains(t, r.stderr, "no Kubernetes objects in "+empty)
}

func TestPlanDirectoryInput(t *testing.T) {
	// Files of a directory are read in name order; README.txt is not a manifest and is skipped.
	doc, _ := planJSON(t, ExitOK, "-f", "testdata/manifests-dir")
	require.Len(t, doc.Plans, 2)
	assert.Equal(t, "paralleljobs", doc.Plans[0].Workload.Name)
	assert.Equal(t, "sglang", doc.Plans[1].Workload.Name)
}

func TestPlanFileDefinitionWinsOverCatalog(t *testing.T) {
	doc, r := planJSON(t, ExitOK, "-f", seed, "--definitions", "testdata/definitions/override")
	assert.Empty(t, r.stderr)
	p := doc.Plans[0]
	assert.Equal(t, "team-jobset", p.Definition.Name)
	assert.Equal(t, "file", p.Definition.Source)
	// The file definition names its pod group "team": PodGroup pg-<workload>-<pod group>.
	assert.Equal(t, "pg-train-llm-team", p.PodGroups[0].Name)
	assert.Equal(t, 12.0, p.TotalGPUs)
}

func TestPlanDefinitionProblemsAreWarnings(t *testing.T) {
	// With --allow-unknown-fields: the unknown field is a warning and the definition is still used.
	doc, r := planJSON(t, ExitOK, "-f", seed, "--definitions", "testdata/definitions/unknown-field.yaml", "--allow-unknown-fields")
	assert.Equal(t, "unknown-field", doc.Plans[0].Definition.Name)
	assert.Contains(t, r.stderr, "warning: definition \"unknown-field\" (testdata/definitions/unknown-field.yaml#0): spec.optimizationInstructions.gangScheduling.podGroup.minMember")

	// An invalid file definition is skipped with a warning and the catalog one plans the
	// workload, but the exit code says a --definitions file could not be used.
	doc, r = planJSON(t, ExitProblems, "-f", seed, "--definitions", "testdata/definitions/bad-jq.yaml")
	assert.Equal(t, "catalog", doc.Plans[0].Definition.Source)
	assert.Contains(t, r.stderr, "warning: definition \"bad-jq\"")
	assert.Contains(t, r.stderr, "spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath")

	r = gangmap(t, "plan", "-f", seed, "--definitions", "testdata/definitions/nope")
	assert.Equal(t, ExitUnusable, r.code)
	assert.Contains(t, r.stderr, "reading --definitions")
}

func TestPlanBuildErrorIsAnEntry(t *testing.T) {
	// LWS size 4 with replicas "two": the replicasPath yields a string that is not a count.
	dir := t.TempDir()
	writeFile(t, dir+"/lws.yaml", strings.Replace(readFile(t, "testdata/manifests/lws-replicas2-size4-8gpu-limits.yaml"), "replicas: 2", "replicas: two", 1))
	r := gangmap(t, "plan", "-o", "json", "-f", dir+"/lws.yaml")
	assert.Equal(t, ExitProblems, r.code)
	var raw struct {
		Plans []map[string]json.RawMessage `json:"plans"`
	}
	decodeOne(t, r.stdout, &raw)
	require.Len(t, raw.Plans, 1)
	assert.JSONEq(t, `{"name":"leaderworkerset-x-k8s-io-leaderworkerset-v1","source":"catalog"}`, string(raw.Plans[0]["definition"]))
	var msg string
	require.NoError(t, json.Unmarshal(raw.Plans[0]["error"], &msg))
	assert.Contains(t, msg, "LeaderWorkerSet/sglang-large: definition \"leaderworkerset-x-k8s-io-leaderworkerset-v1\"")
	assert.Contains(t, msg, "spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath")
}

func TestPlanTableNotesAndOverrides(t *testing.T) {
	// The LWS test manifest with startupPolicy LeaderReady and a min-member override annotation.
	dir := t.TempDir()
	lws := readFile(t, "testdata/manifests/lws-replicas2-size4-8gpu-limits.yaml")
	lws = strings.Replace(lws, "\n  replicas: 2\n", "\n  replicas: 2\n  startupPolicy: LeaderReady\n", 1)
	lws = strings.Replace(lws, "\n  name: sglang-large\n", "\n  name: sglang-large\n  annotations:\n    gangmap.io/min-member: \"2\"\n", 1)
	writeFile(t, dir+"/lws.yaml", lws)
	r := gangmap(t, "plan", "-f", dir+"/lws.yaml")
	require.Equal(t, ExitOK, r.code, r.stderr)
	// gangmap.io/min-member counts pods: on a PodGroup with sub-groups it becomes a flat
	// minMember of 2 pods, the sub-groups kept for placement with no minimum of their own (KAI
	// accepts minMember at the root when minSubGroup is unset).
	assert.Regexp(t, `(?m)^  pg-sglang-large-group-0 +2 +- +leader:0,worker:0 +4 +32$`, r.stdout)
	// LWS LeaderReady: the workers are created only after the leader is ready, so the start rule
	// keeps them out of the gang minimum, and says so.
	assert.Regexp(t, `(?m)^  worker +worker +- +2 +2 +6 +0 +8 +48$`, r.stdout)
	assert.Contains(t, r.stdout, "  note: start order: role worker is kept out of the gang minimum (its pods are created only after those of leader start)")
	assert.Contains(t, r.stdout, `  override: gangmap.io/min-member="2" applied: flat minMember 2 pods; sub-groups kept for placement with no minimum of their own`)
	assert.True(t, strings.HasSuffix(r.stdout, "TOTAL GPUs: 64\n"), r.stdout)
}

// withStdin makes content the standard input of the rest of the test, through a pipe.
func withStdin(t *testing.T, content string) {
	rd, wr, err := os.Pipe()
	require.NoError(t, err)
	old := os.Stdin
	os.Stdin = rd
	t.Cleanup(func() { os.Stdin = old })
	go func() {
		_, _ = wr.WriteString(content)
		_ = wr.Close()
	}()
}

func TestPlanFromStdin(t *testing.T) {
	withStdin(t, readFile(t, seed))
	doc, _ := planJSON(t, ExitOK, "-f", "-")
	require.Len(t, doc.Plans, 1)
	assert.Equal(t, 12.0, doc.Plans[0].TotalGPUs)
}

func TestPlanWorkloadWithoutRoles(t *testing.T) {
	// A JobSet with no replicatedJobs runs no pods: no roles, no PodGroup (never one with a
	// made-up size), and a note that the instance ids resolved to nothing.
	path := t.TempDir() + "/empty.yaml"
	writeFile(t, path, "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {generateName: empty-}\nspec:\n  replicatedJobs: []\n")
	r := gangmap(t, "plan", "-o", "json", "-f", path)
	require.Equal(t, ExitOK, r.code, r.stderr)
	var raw map[string][]map[string]any
	decodeOne(t, r.stdout, &raw)
	p := raw["plans"][0]
	assert.Equal(t, []any{}, p["podGroups"])
	assert.Equal(t, []any{}, p["roles"], "roles is a list, never null")
	assert.Equal(t, 0.0, p["totalGPUs"])
	assert.Equal(t, []any{"spec.structureDefinition.childComponents[0].instanceIdPath (.spec.replicatedJobs[]?.name) resolved to nothing on this workload",
		"no PodGroup: the definition's components have no instances on this workload (their instanceIdPath yielded none)"}, p["notes"], "a plan without a PodGroup says why")

	table := gangmap(t, "plan", "-f", path)
	assert.True(t, strings.HasPrefix(table.stdout, "JobSet/empty-*   definition: jobset-x-k8s-io-jobset-v1alpha2 (catalog)\n"), table.stdout)
	assert.Contains(t, table.stdout, "  (none: the definition's components have no instances on this workload (their instanceIdPath yielded none))\n  A path of the definition resolved to nothing (see the notes)")
	assert.Contains(t, table.stdout, "gangmap validate --crd")
	assert.Contains(t, table.stdout, "TOTAL GPUs: 0\n")
}

// Manifest bundles carry pods, owned objects and supporting kinds beside their workloads: plan
// skips them (saying so), as describe -f does, and plans the workloads.
func TestPlanSkipsWhatIsNotAWorkload(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/bundle.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n---\n"+
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n---\n"+
		"apiVersion: v1\nkind: Pod\nmetadata: {name: loose}\nspec: {containers: [{name: c, image: x}]}\n---\n"+
		readFile(t, seed))
	doc, r := planJSON(t, ExitOK, "-f", dir+"/bundle.yaml")
	require.Len(t, doc.Plans, 1)
	assert.Equal(t, "JobSet", doc.Plans[0].Workload.Kind)
	assert.Contains(t, r.stderr, "note: skipping Namespace/team-a: not a workload")
	assert.Contains(t, r.stderr, "note: skipping Pod/loose: not a workload")

	writeFile(t, dir+"/only.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n")
	r = gangmap(t, "plan", "-f", dir+"/only.yaml")
	assert.Equal(t, ExitUnusable, r.code)
	assert.Contains(t, r.stderr, "no workload objects")
}

// Supporting kinds are told apart by group as well as kind: a Knative Service
// (serving.knative.dev/v1, a catalog workload) is planned, a core v1 Service beside it is skipped.
func TestPlanKnativeServiceIsAWorkload(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/bundle.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n---\n"+
		readFile(t, "testdata/manifests/knativeservice-multicontainer-sidecar.yaml"))
	doc, r := planJSON(t, ExitOK, "-f", dir+"/bundle.yaml")
	require.Len(t, doc.Plans, 1, r.stderr)
	p := doc.Plans[0]
	assert.Equal(t, "serving.knative.dev/v1", p.Workload.APIVersion)
	assert.Equal(t, "multi-container-test", p.Workload.Name)
	assert.Equal(t, "serving-knative-dev-service-v1", p.Definition.Name)
	assert.Empty(t, p.Error)
	assert.NotEmpty(t, p.PodGroups, "the Knative Service is planned")
	assert.Contains(t, r.stderr, "note: skipping Service/web: not a workload")
	assert.NotContains(t, r.stderr, "multi-container-test")
}

// A workload of a kind KAI groups natively (KAI v0.17's table: apps/v1 Deployment, batch/v1 Job,
// kubeflow.org/v1 MPIJob, ...) with no definition is not a failure: KAI's own plugin groups it,
// and a definition would be ignored in a cluster, so plan says so and exits 0.
func TestPlanNativeKindWithoutDefinition(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\n"+
		"spec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n"+
		"    spec: {containers: [{name: c, image: x}]}\n")
	doc, _ := planJSON(t, ExitOK, "-f", dir+"/deploy.yaml")
	require.Len(t, doc.Plans, 1)
	p := doc.Plans[0]
	assert.True(t, p.NativeInKAI)
	assert.Empty(t, p.Error)
	assert.Equal(t, "KAI groups Deployment (apps/v1) natively: in a cluster, gangmap leaves its pods and PodGroups to KAI's plugin; gangmap has no definition for it, so no plan", p.Note)

	table := gangmap(t, "plan", "-f", dir+"/deploy.yaml")
	require.Equal(t, ExitOK, table.code, table.stderr)
	assert.Equal(t, "Deployment/web (namespace default)\n  "+p.Note+"\n", table.stdout)

	// A kind that is neither defined nor native stays a failure (exit 1) with the hint.
	writeFile(t, dir+"/foo.yaml", "apiVersion: example.com/v1\nkind: Foo\nmetadata: {name: f}\n")
	doc, _ = planJSON(t, ExitProblems, "-f", dir+"/foo.yaml")
	assert.False(t, doc.Plans[0].NativeInKAI)
	assert.Contains(t, doc.Plans[0].Error, "no usable Workload Map definition")
}

// Two --definitions files for one kind conflict: the warning is said once (not once per
// definition), and the workload of that kind fails to plan even though KAI groups JobSet
// natively: a definition was given and cannot be used, which the user must hear about.
func TestPlanConflictSaidOnceAndNotHiddenByNative(t *testing.T) {
	dir := t.TempDir()
	def := readFile(t, "../../../definitions/catalog/jobset-x-k8s-io-jobset-v1alpha2.yaml")
	writeFile(t, dir+"/a.yaml", def)
	writeFile(t, dir+"/b.yaml", def)
	doc, r := planJSON(t, ExitProblems, "-f", seed, "--definitions", dir)
	require.Len(t, doc.Plans, 1)
	assert.False(t, doc.Plans[0].NativeInKAI)
	assert.Contains(t, doc.Plans[0].Error, "has problems (see the warnings)")
	assert.Equal(t, 1, strings.Count(r.stderr, "file definitions for JobSet.jobset.x-k8s.io/v1alpha2"), r.stderr)
}

// A manifest named twice (directly, or again through its directory) is read once.
func TestPlanFileNamedTwiceReadOnce(t *testing.T) {
	doc, _ := planJSON(t, ExitOK, "-f", seed, "-f", seed, "-f", "testdata/manifests/../manifests/jobset-leader-workers.yaml")
	assert.Len(t, doc.Plans, 1)
}

// A misspelt top-level field (optimisationInstructions) refuses the file by default, naming
// file, definition and field; with --allow-unknown-fields it is a warning and the field is left
// out, so the gang changes.
func TestPlanStrictRefusesUnknownFields(t *testing.T) {
	dir := t.TempDir()
	def := readFile(t, "../../../definitions/catalog/jobset-x-k8s-io-jobset-v1alpha2.yaml")
	require.Contains(t, def, "optimizationInstructions")
	writeFile(t, dir+"/js.yaml", strings.Replace(def, "optimizationInstructions", "optimisationInstructions", 1))

	_, r := planJSON(t, ExitOK, "-f", seed, "--definitions", dir, "--allow-unknown-fields")
	assert.Contains(t, r.stderr, "spec.optimisationInstructions")

	for _, args := range [][]string{nil, {"--strict"}} {
		r = gangmap(t, append([]string{"plan", "-f", seed, "--definitions", dir}, args...)...)
		assert.Equal(t, ExitUnusable, r.code)
		assert.Equal(t, "error: reading --definitions: "+dir+`/js.yaml#0: definition "jobset-x-k8s-io-jobset-v1alpha2": spec.optimisationInstructions: unknown field (strict mode)`+"\n", r.stderr)
	}
}
