package gang_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
)

// badDef is one gang with a sub-group per role: a coordinator and workers.
const badDef = `apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: badjob}
spec:
  structureDefinition:
    rootComponent:
      name: badjob
      kind: {group: bad.example.com, version: v1, kind: BadJob}
      statusDefinition:
        phaseDefinition: {path: .status.phase}
        statusMappings:
          running: [{byPhase: Running}]
    childComponents:
      - name: coordinator
        ownerRef: badjob
        specDefinition: {podTemplateSpecPath: .spec.coordinator.template}
        scaleDefinition: {replicasPath: .spec.coordinator.replicas}
      - name: worker
        ownerRef: badjob
        specDefinition: {podTemplateSpecPath: .spec.worker.template}
        scaleDefinition: {replicasPath: .spec.worker.replicas}
  optimizationInstructions:
    gangScheduling:
      podGroup:
        name: badjob
        subGroups: [{componentName: coordinator}, {componentName: worker}]
`

const badReplicasPath = "spec.structureDefinition.childComponents[1].scaleDefinition.replicasPath"

func badCompiled(t testing.TB, doc string) *definitions.Compiled {
	t.Helper()
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	ls, err := definitions.Decode(strings.NewReader(doc), "bad.yaml", definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	require.NoError(t, err)
	require.Len(t, ls, 1)
	compiled, err := definitions.Compile(ls[0], c)
	require.NoError(t, err)
	return compiled
}

// badWorkload is a BadJob with 1 coordinator and the given worker replicas (any JSON value; nil
// leaves the field out).
func badWorkload(name string, uid types.UID, workers any) *unstructured.Unstructured {
	tpl := func() map[string]any {
		return map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "image": "x"}}}}
	}
	worker := map[string]any{"template": tpl()}
	if workers != nil {
		worker["replicas"] = workers
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bad.example.com/v1", "kind": "BadJob",
		"metadata": map[string]any{"name": name, "namespace": "ns"},
		"spec":     map[string]any{"coordinator": map[string]any{"replicas": int64(1), "template": tpl()}, "worker": worker},
	}}
	u.SetUID(uid)
	return u
}

func TestBadWorkloadReplicas(t *testing.T) {
	c := badCompiled(t, badDef)
	cases := []struct {
		name    string
		workers any
		want    string
	}{
		{"a string that is not a number", "three", badReplicasPath + `: expected a number or a numeric string, got "three" (string)`},
		{"beyond int32", int64(3_000_000_000), badReplicasPath + ": expected a count that fits a PodGroup's int32, got 3000000000"},
		{"beyond int64", "99999999999999999999", badReplicasPath + `: number "99999999999999999999" is out of the int64 range`},
		{"a fraction", 2.5, badReplicasPath + ": expected a whole number, got 2.5"},
		{"a boolean", true, badReplicasPath + ": expected a number or a numeric string, got true (boolean)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gang.Build(context.Background(), c, badWorkload("bj", "uid-1", tc.workers))
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}

	// A negative count (Milvus -1: HPA-managed) is 0, as KAI's fallback counts a scale not above
	// 0, and the plan says so.
	p, err := gang.Build(context.Background(), c, badWorkload("bj", "uid-1", int64(-1)))
	require.NoError(t, err)
	assert.Contains(t, p.Notes, "role worker: replicasPath gave -1; counted 0, as KAI's fallback counts a scale that is not above 0 (a framework's \"managed elsewhere\" value such as Milvus -1 for an HPA)")

	// A numeric string is a number (as Kubernetes quantities and many CRDs write them).
	p, err = gang.Build(context.Background(), c, badWorkload("bj", "uid-1", "3"))
	require.NoError(t, err)
	assert.Equal(t, int64(4), p.PodGroups[0].Pods)
}

func TestBadWorkloadMissingSpec(t *testing.T) {
	c := badCompiled(t, badDef)
	obj := badWorkload("bj", "uid-1", int64(2))
	delete(obj.Object, "spec")
	p, err := gang.Build(context.Background(), c, obj)
	require.NoError(t, err, "a workload without spec plans to nothing, it is not an error")
	assert.Empty(t, p.PodGroups, "no PodGroup for a workload with no pods")
	assert.Contains(t, p.Notes, "spec.structureDefinition.childComponents[1].scaleDefinition.replicasPath (.spec.worker.replicas) resolved to nothing on this workload")
	// With no replicas there is no pod template to find: that path is not reported as drift.
	assert.NotContains(t, p.Notes, "spec.structureDefinition.childComponents[1].specDefinition.podTemplateSpecPath (.spec.worker.template) resolved to nothing on this workload")

	// The spec is not an object.
	obj.Object["spec"] = "oops"
	_, err = gang.Build(context.Background(), c, obj)
	t.Logf("spec is a string: %v", err)
}

func TestBadWorkloadNamesAtLengthLimits(t *testing.T) {
	// A gang name at the 63-character limit: with a 36-character UID the PodGroup name is cut and
	// ends in a hash; the same inputs always give the same name.
	long := strings.Repeat("g", validation.DNS1123LabelMaxLength)
	c := badCompiled(t, strings.Replace(badDef, "        name: badjob\n", "        name: "+long+"\n", 1))
	uid := types.UID("0f3c6f2e-3d35-4c5e-9b43-1d2a7d1e5b6a")
	p1, err := gang.Build(context.Background(), c, badWorkload("bj", uid, int64(2)))
	require.NoError(t, err)
	p2, err := gang.Build(context.Background(), c, badWorkload("bj", uid, int64(2)))
	require.NoError(t, err)
	name := p1.PodGroups[0].Name
	assert.Len(t, name, gang.MaxNameLength)
	assert.Empty(t, validation.IsDNS1123Label(name))
	assert.Equal(t, name, p2.PodGroups[0].Name, "deterministic")
	assert.True(t, strings.HasPrefix(name, "pg-"+string(uid)+"-ggg"), name)
	assert.Equal(t, gang.PodGroupName(string(uid), long, ""), name)

	// A 253-character workload name (the API limit) stands in for a missing UID offline: the
	// name still fits, is deterministic, and two names differing only in their last character
	// give two PodGroup names.
	wl := strings.Repeat("w", validation.DNS1123SubdomainMaxLength)
	c = badCompiled(t, badDef)
	a, err := gang.Build(context.Background(), c, badWorkload(wl, "", int64(2)))
	require.NoError(t, err)
	again, err := gang.Build(context.Background(), c, badWorkload(wl, "", int64(2)))
	require.NoError(t, err)
	b, err := gang.Build(context.Background(), c, badWorkload(wl[:252]+"x", "", int64(2)))
	require.NoError(t, err)
	for _, p := range []*gang.Plan{a, b} {
		assert.LessOrEqual(t, len(p.PodGroups[0].Name), gang.MaxNameLength)
		assert.Empty(t, validation.IsDNS1123Label(p.PodGroups[0].Name))
	}
	assert.Equal(t, a.PodGroups[0].Name, again.PodGroups[0].Name)
	assert.NotEqual(t, a.PodGroups[0].Name, b.PodGroups[0].Name)
}

func TestBadWorkloadNonASCIIInstanceIDs(t *testing.T) {
	// JobSet replicated-job names become sub-group names: whatever the workload says, each
	// sub-group name is a DNS label, distinct from the others, and the pods of each instance
	// are placed by the original id.
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	r := definitions.NewRegistry(c)
	require.NoError(t, catalog.Register(r))
	ids := []string{"Wörker_Ünïcode", "ワーカー", "ドライバー", "UPPER.case", strings.Repeat("é", 70) + "-long"}
	var rjs []any
	for _, id := range ids {
		rjs = append(rjs, map[string]any{"name": id, "replicas": int64(1), "template": map[string]any{"spec": map[string]any{"template": map[string]any{
			"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "image": "x"}}}}}}})
	}
	js := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": "unicode", "namespace": "ns", "uid": "uid-u"},
		"spec":     map[string]any{"replicatedJobs": rjs},
	}}
	compiled := r.Lookup(js.GroupVersionKind())
	require.NotNil(t, compiled)
	p, err := gang.Build(context.Background(), compiled, js)
	require.NoError(t, err)
	require.Len(t, p.PodGroups, 1)
	seen := map[string]bool{}
	for _, sg := range p.PodGroups[0].SubGroups {
		assert.Empty(t, validation.IsDNS1123Label(sg.Name), "sub-group %q is a DNS label", sg.Name)
		assert.False(t, seen[sg.Name], "sub-group %q is unique", sg.Name)
		seen[sg.Name] = true
	}
	assert.Len(t, seen, len(ids))
	assert.True(t, seen["w-rker-n-code"], "%v", seen)
	assert.True(t, seen["upper-case"], "%v", seen)
	for _, id := range ids {
		pod := map[string]any{"metadata": map[string]any{"name": "p", "namespace": "ns", "labels": map[string]any{"jobset.sigs.k8s.io/replicatedjob-name": id}}}
		pl, err := compiled.PlacePod(context.Background(), pod)
		require.NoError(t, err, id)
		a, err := p.Assign(pl)
		require.NoError(t, err, id)
		require.NotNil(t, a.SubGroup, id)
		assert.Empty(t, validation.IsDNS1123Label(a.SubGroup.Name), id)
	}
	// The two all-non-ASCII ids sanitize to "x" + a hash of the original: still distinct.
	assert.NotEqual(t, gang.SanitizeLabel("ワーカー"), gang.SanitizeLabel("ドライバー"))
	assert.Equal(t, gang.SanitizeLabel("ワーカー"), gang.SanitizeLabel("ワーカー"))
}

// hugeDefinition is a definition with n components (one sub-group each) and a workload of it
// with 2 replicas per component.
func hugeDefinition(n int) (string, *unstructured.Unstructured) {
	var b strings.Builder
	b.WriteString(`apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: hugejob}
spec:
  structureDefinition:
    rootComponent:
      name: hugejob
      kind: {group: huge.example.com, version: v1, kind: HugeJob}
      statusDefinition:
        phaseDefinition: {path: .status.phase}
        statusMappings:
          running: [{byPhase: Running}]
    childComponents:
`)
	spec := map[string]any{}
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "      - name: c%d\n        ownerRef: hugejob\n        specDefinition: {podTemplateSpecPath: .spec.c%d.template}\n        scaleDefinition: {replicasPath: .spec.c%d.replicas}\n", i, i, i)
		fmt.Fprintf(&b, "        podSelector:\n          componentTypeSelector: {keyPath: '.metadata.labels[\"role\"]', value: c%d}\n", i)
		spec[fmt.Sprintf("c%d", i)] = map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "image": "x",
			"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "1"}}}}}}}
	}
	b.WriteString("  optimizationInstructions:\n    gangScheduling:\n      podGroup:\n        name: huge\n        subGroups:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "          - componentName: c%d\n", i)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "huge.example.com/v1", "kind": "HugeJob",
		"metadata": map[string]any{"name": "huge", "namespace": "ns", "uid": "uid-huge"},
		"spec":     spec,
	}}
	return b.String(), obj
}

const hugeComponents = 500

func TestHugeDefinitionLoadsAndPlans(t *testing.T) {
	doc, obj := hugeDefinition(hugeComponents)
	c := badCompiled(t, doc)
	p, err := gang.Build(context.Background(), c, obj)
	require.NoError(t, err)
	require.Len(t, p.PodGroups, 1)
	pg := p.PodGroups[0]
	assert.Len(t, pg.SubGroups, hugeComponents)
	assert.Equal(t, int32(hugeComponents), *pg.MinSubGroup)
	assert.Equal(t, int64(2*hugeComponents), pg.Pods)
	assert.Equal(t, gang.WholeGPUs(2*hugeComponents), p.TotalGPUs)
	pl, err := c.PlacePod(context.Background(), map[string]any{"metadata": map[string]any{"name": "p", "labels": map[string]any{"role": "c499"}}})
	require.NoError(t, err)
	a, err := p.Assign(pl)
	require.NoError(t, err)
	assert.Equal(t, "c499", a.SubGroup.Name)
}

// hugeBound is the most one load+compile, or one plan, of the 500-component definition may take
// on a CI machine (2 cores, -race off); measured: see docs/reliability.md.
const hugeBound = 2 * time.Second

// BenchmarkHugeDefinitionLoad decodes and compiles the 500-component definition; it fails when
// one iteration takes longer than hugeBound.
func BenchmarkHugeDefinitionLoad(b *testing.B) {
	doc, _ := hugeDefinition(hugeComponents)
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		ls, err := definitions.Decode(strings.NewReader(doc), "huge.yaml", definitions.SourceFile, definitions.DecodeOptions{Strict: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := definitions.Compile(ls[0], c); err != nil {
			b.Fatal(err)
		}
	}
	if per := b.Elapsed() / time.Duration(b.N); per > hugeBound {
		b.Fatalf("loading a %d-component definition took %v, over %v", hugeComponents, per, hugeBound)
	}
}

// BenchmarkHugeDefinitionPlan plans a workload of the 500-component definition (1000 pods);
// it fails when one plan takes longer than hugeBound.
func BenchmarkHugeDefinitionPlan(b *testing.B) {
	doc, obj := hugeDefinition(hugeComponents)
	c := badCompiled(b, doc)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gang.Build(context.Background(), c, obj); err != nil {
			b.Fatal(err)
		}
	}
	if per := b.Elapsed() / time.Duration(b.N); per > hugeBound {
		b.Fatalf("planning a %d-component workload took %v, over %v", hugeComponents, per, hugeBound)
	}
}

// TestUnknownCountFailsThePlan: a role whose pod template is in the workload but whose count
// resolves to nothing (the field left out with no default in the expression, or a misspelt path)
// fails the plan, naming the field and the fix, instead of planning the role as 0 pods: the gang
// would then be written without the role and KAI would admit the other roles alone (found by a
// new user's TrainRun: its worker count missing, the launcher's PodGroup admitted alone). A
// default in the expression (// 1) is a count, and is noted as a default.
func TestUnknownCountFailsThePlan(t *testing.T) {
	c := badCompiled(t, badDef)
	_, err := gang.Build(context.Background(), c, badWorkload("bj", "uid-1", nil))
	var unknown *definitions.UnknownCountError
	require.ErrorAs(t, err, &unknown)
	assert.Equal(t, badReplicasPath, unknown.Path)
	assert.Equal(t, ".spec.worker.replicas", unknown.Expression)
	assert.Contains(t, err.Error(), "set it on the workload; only if its operator always defaults it to one number N, write that default into the expression, '.spec.worker.replicas // N'")

	misspelt := badCompiled(t, strings.Replace(badDef, "replicasPath: .spec.worker.replicas}", "replicasPath: .spec.worker.replica}", 1))
	_, err = gang.Build(context.Background(), misspelt, badWorkload("bj", "uid-1", int64(4)))
	require.ErrorAs(t, err, &unknown)
	assert.Equal(t, ".spec.worker.replica", unknown.Expression)

	defaulted := badCompiled(t, strings.Replace(badDef, "replicasPath: .spec.worker.replicas}", "replicasPath: '.spec.worker.replicas // 1'}", 1))
	p, err := gang.Build(context.Background(), defaulted, badWorkload("bj", "uid-1", nil))
	require.NoError(t, err)
	require.Len(t, p.PodGroups, 1)
	assert.Equal(t, int64(2), p.PodGroups[0].Pods, "the coordinator and the default's one worker")

	// gangmap's podsPerReplicaPath is a count too.
	perReplica := badCompiled(t, strings.Replace(badDef, "  optimizationInstructions:", "  gangmap:\n    components:\n      - {name: worker, podsPerReplicaPath: .spec.worker.size}\n  optimizationInstructions:", 1))
	_, err = gang.Build(context.Background(), perReplica, badWorkload("bj", "uid-1", int64(2)))
	require.ErrorAs(t, err, &unknown)
	assert.Equal(t, "spec.gangmap.components[worker].podsPerReplicaPath", unknown.Path)
}

// TestReleaseKeys: roles startup.holds gives one reason text share a release key (released
// together, gang.Role.ReleaseKey); a hold given as true names no condition, so each such role
// keeps its own.
func TestReleaseKeys(t *testing.T) {
	withHolds := func(holds string) map[string]string {
		def := strings.Replace(badDef, "  optimizationInstructions:", "  gangmap:\n    gang:\n      startup:\n        holds: '"+holds+"'\n  optimizationInstructions:", 1)
		p, err := gang.Build(context.Background(), badCompiled(t, def), badWorkload("bj", "uid-1", int64(2)))
		require.NoError(t, err)
		keys := map[string]string{}
		for _, r := range p.Roles {
			keys[r.Name] = r.ReleaseKey()
		}
		return keys
	}
	shared := withHolds(`{"coordinator": "waits for the dataset", "worker": "waits for the dataset"}`)
	assert.Equal(t, map[string]string{"coordinator": "waits for the dataset", "worker": "waits for the dataset"}, shared)
	generic := withHolds(`{"coordinator": true, "worker": true}`)
	assert.Equal(t, map[string]string{"coordinator": "coordinator", "worker": "worker"}, generic)
}
