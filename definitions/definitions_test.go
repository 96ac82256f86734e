package definitions_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
)

const customJob = `apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: customjob}
spec:
  structureDefinition:
    rootComponent:
      name: customjob
      kind: {group: e2e.example.com, version: v1, kind: CustomJob}
      statusDefinition:
        phaseDefinition: {path: .status.phase}
        statusMappings:
          running: [{byPhase: Running}]
    childComponents:
      - name: worker
        ownerRef: customjob
        specDefinition: {podTemplateSpecPath: .spec.worker.template}
        scaleDefinition: {replicasPath: .spec.worker.replicas}
`

func compiler(t *testing.T) *expr.Compiler {
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	return c
}

func decodeOne(t *testing.T, doc string, strict bool) (*definitions.Loaded, error) {
	ls, err := definitions.Decode(strings.NewReader(doc), "test.yaml", definitions.SourceFile, definitions.DecodeOptions{Strict: strict})
	if err != nil {
		return nil, err
	}
	require.Len(t, ls, 1)
	return ls[0], nil
}

func TestDecodeMultiDocumentAndComments(t *testing.T) {
	ls, err := definitions.Decode(strings.NewReader("# header\n---\n"+customJob+"---\n# only a comment\n---\n"+strings.Replace(customJob, "name: customjob}", "name: second}", 1)),
		"multi.yaml", definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	require.NoError(t, err)
	require.Len(t, ls, 2)
	assert.Equal(t, []string{"customjob", "second"}, []string{ls[0].Name(), ls[1].Name()})
	assert.Equal(t, "multi.yaml#1", ls[0].Origin)
}

func TestUnknownFieldsStrictAndLenient(t *testing.T) {
	doc := strings.Replace(customJob, "        ownerRef: customjob\n", "        ownerRef: customjob\n        replicaz: 3\n", 1)
	_, err := decodeOne(t, doc, true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.structureDefinition.childComponents[0].replicaz")
	l, err := decodeOne(t, doc, false)
	require.NoError(t, err)
	require.Len(t, l.Warnings, 1)
	assert.Contains(t, l.Warnings[0].Error(), "replicaz")
}

func TestNotAKarta(t *testing.T) {
	_, err := decodeOne(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", false)
	assert.ErrorContains(t, err, "expected apiVersion run.ai/v1alpha1 and kind Karta")
	_, err = decodeOne(t, "a: [", false)
	assert.ErrorContains(t, err, "invalid YAML")
}

// Every problem is reported at once, each with its field path.
func TestValidationNamesEveryFieldPath(t *testing.T) {
	doc := `apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: bad}
spec:
  structureDefinition:
    rootComponent:
      name: Root_Component
      kind: {group: x.io, version: v1, kind: Thing}
    childComponents:
      - name: a
        ownerRef: missing
        instanceIdPath: .spec.items[].name
      - name: b
        ownerRef: c
      - name: c
        ownerRef: b
        scaleDefinition: {replicasPath: ".spec.replicas |||"}
  optimizationInstructions:
    gangScheduling:
      podGroup:
        name: g
        subGroups: [{componentName: nope}]
        topology: {topologyName: t}
`
	l, err := decodeOne(t, doc, true)
	require.NoError(t, err)
	errs := definitions.ValidateStructure(l.Karta)
	var paths []string
	for _, e := range errs {
		paths = append(paths, e.Field)
	}
	for _, want := range []string{
		"spec.structureDefinition.rootComponent.statusDefinition", // required upstream
		"spec.structureDefinition.childComponents[0].ownerRef",    // names no component
		"spec.structureDefinition.childComponents[0].instanceIdPath",
		"spec.structureDefinition.childComponents[1].ownerRef", // cycle b -> c -> b
		"spec.optimizationInstructions.gangScheduling.podGroup.subGroups[0].componentName",
		"spec.optimizationInstructions.gangScheduling.podGroup.topology.requiredTopologyLevel",
	} {
		assert.Contains(t, paths, want)
	}
	// Upper case and "_" in a component name are accepted as upstream accepts them: sub-group
	// names are derived from them in lower case (gang.SanitizeLabel).
	assert.NotContains(t, paths, "spec.structureDefinition.rootComponent.name")
	_, err = definitions.Compile(l, compiler(t))
	var de *definitions.DefinitionError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "bad", de.Name)
	assert.Contains(t, err.Error(), `definition "bad" (test.yaml#0) is invalid`)
}

func TestCompileErrorNamesThePath(t *testing.T) {
	l, err := decodeOne(t, strings.Replace(customJob, "replicasPath: .spec.worker.replicas", `replicasPath: ".spec.worker.replicas |||"`, 1), true)
	require.NoError(t, err)
	_, err = definitions.Compile(l, compiler(t))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath")
}

// The forward CEL shape: accessor objects in place of *Path strings, spec.variables.
func TestForwardCELShapeMatchesJQ(t *testing.T) {
	cel := `apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: customjob-cel}
spec:
  variables:
    - {name: workers, expression: "object.?spec.?worker.?replicas.orValue(0)"}
  structureDefinition:
    rootComponent:
      name: customjob
      kind: {group: e2e.example.com, version: v1, kind: CustomJob}
      statusDefinition:
        phaseDefinition: {path: {expression: "object.?status.?phase.orValue('')"}}
        statusMappings:
          running: [{byExpression: {expression: "object.?status.?phase.orValue('') == 'Running'"}}]
    childComponents:
      - name: worker
        ownerRef: customjob
        specDefinition: {podTemplateSpec: {expression: "object.spec.worker.template"}}
        scaleDefinition: {replicas: {expression: "variables.workers"}}
`
	obj := map[string]any{"apiVersion": "e2e.example.com/v1", "kind": "CustomJob",
		"spec":   map[string]any{"worker": map[string]any{"replicas": 3, "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c"}}}}}},
		"status": map[string]any{"phase": "Running"}}
	comp := compiler(t)
	var results []*definitions.Workload
	var statuses [][]definitions.Status
	for _, doc := range []string{customJob, cel} {
		l, err := decodeOne(t, doc, true)
		require.NoError(t, err)
		c, err := definitions.Compile(l, comp)
		require.NoError(t, err)
		w, err := c.Resolve(context.Background(), obj)
		require.NoError(t, err)
		results = append(results, w)
		st, err := c.EvaluateStatus(context.Background(), obj, w.Variables)
		require.NoError(t, err)
		statuses = append(statuses, st)
	}
	for _, w := range results {
		inst := w.Component("worker").Instances[0]
		assert.Equal(t, int64(3), *inst.Replicas)
		assert.Equal(t, "c", inst.Template.Spec.Containers[0].Name)
	}
	assert.Equal(t, []definitions.Status{definitions.StatusRunning}, statuses[0])
	assert.Equal(t, statuses[0], statuses[1])
}

// The catalog JobSet's running status, evaluated on a real JobSet status object (the JobSet
// controller's replicatedJobsStatus counts per replicated job).
func TestJobSetStatus(t *testing.T) {
	r := definitions.NewRegistry(compiler(t))
	require.NoError(t, catalog.Register(r))
	c := r.Lookup(schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"})
	require.NotNil(t, c)
	cases := map[string]struct {
		status string
		want   []definitions.Status
		// suspend is spec.suspend (a JobSet is suspended only while it asks to be).
		suspend bool
	}{
		"running": {status: `{replicatedJobsStatus: [{name: leader, ready: 1, active: 1, failed: 0, succeeded: 0}, {name: workers, ready: 2, active: 2, failed: 0, succeeded: 0}]}`,
			want: []definitions.Status{definitions.StatusRunning}},
		"completed": {status: `{conditions: [{type: Completed, status: "True", reason: AllJobsCompleted}], replicatedJobsStatus: [{name: leader, succeeded: 1}]}`,
			want: []definitions.Status{definitions.StatusCompleted}},
		"failed": {status: `{conditions: [{type: Failed, status: "True"}], replicatedJobsStatus: [{name: leader, failed: 1}]}`,
			want: []definitions.Status{definitions.StatusFailed}},
		"initializing": {status: `{replicatedJobsStatus: [{name: leader, ready: 0, active: 0}]}`, want: []definitions.Status{definitions.StatusInitializing}},
		"no status":    {status: `{}`, want: []definitions.Status{definitions.StatusInitializing}},
		// Several statuses come in upstream's evaluation order (resuming, suspending, suspended,
		// running, failed, completed, initializing, degraded), whatever the definition's order,
		// as docs/definitions.md ("Status") and cmd/gangmap/README.md say.
		"suspended and completed": {status: `{conditions: [{type: Completed, status: "True"}, {type: Suspended, status: "True"}]}`,
			want: []definitions.Status{definitions.StatusSuspended, definitions.StatusCompleted}, suspend: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var st map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(tc.status), &st))
			spec := map[string]any{}
			if tc.suspend {
				spec["suspend"] = true
			}
			obj := expr.Normalize(map[string]any{"spec": spec, "status": st}).(map[string]any)
			got, err := c.EvaluateStatus(context.Background(), obj, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestRegistryPrecedenceAndConflicts(t *testing.T) {
	r := definitions.NewRegistry(compiler(t))
	gvk := schema.GroupVersionKind{Group: "e2e.example.com", Version: "v1", Kind: "CustomJob"}
	assert.True(t, r.Lookup(gvk) == nil, "literal nil when nothing is loaded")
	file, err := decodeOne(t, customJob, true)
	require.NoError(t, err)
	r.SetSource(definitions.SourceFile, []*definitions.Loaded{file})
	require.NotNil(t, r.Lookup(gvk))
	assert.Equal(t, definitions.SourceFile, r.Lookup(gvk).Loaded.Source)

	cl := func(name string) *definitions.Loaded {
		l, err := decodeOne(t, strings.Replace(customJob, "name: customjob}", "name: "+name+"}", 1), true)
		require.NoError(t, err)
		l.Source, l.Origin = definitions.SourceCluster, "cluster:"+name
		return l
	}
	r.SetSource(definitions.SourceCluster, []*definitions.Loaded{cl("one")})
	assert.Equal(t, "one", r.Lookup(gvk).Name(), "cluster wins over file")

	r.SetSource(definitions.SourceCluster, []*definitions.Loaded{cl("one"), cl("two")})
	assert.True(t, r.Lookup(gvk) == nil, "two cluster definitions for one kind: neither is used")
	probs := r.Problems()
	require.Len(t, probs, 2, "each definition in conflict is told")
	for i, name := range []string{"one", "two"} {
		assert.Equal(t, "Conflict", probs[i].Reason)
		assert.Equal(t, name, probs[i].Definition)
		assert.Equal(t, "cluster:"+name, probs[i].Origin)
		assert.Contains(t, probs[i].Message, `"one"`)
		assert.Contains(t, probs[i].Message, `"two"`)
	}

	bad := cl("bad")
	bad.Karta.Spec.StructureDefinition.ChildComponents[0].OwnerRef = nil
	r.SetSource(definitions.SourceCluster, []*definitions.Loaded{bad})
	assert.Equal(t, definitions.SourceFile, r.Lookup(gvk).Loaded.Source, "an invalid cluster definition is skipped")
	assert.Equal(t, "Invalid", r.Problems()[0].Reason)
}

// gangmap's additions survive storage through the upstream CRD in an annotation, and the loader
// says when the applied definition had fields the stored object lost.
func TestFromUnstructuredExtensionsAndLostFields(t *testing.T) {
	stored := map[string]any{}
	require.NoError(t, yaml.Unmarshal([]byte(customJob), &stored))
	u := &unstructured.Unstructured{Object: stored}
	u.SetAnnotations(map[string]string{
		definitions.ExtensionsAnnotation:                   `{"components":[{"name":"worker","podsPerReplicaPath":".spec.worker.size"}]}`,
		"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"run.ai/v1alpha1","kind":"Karta","spec":{"structureDefinition":{},"gangmap":{"gang":{}},"futureField":1}}`,
	})
	l, err := definitions.FromUnstructured(u)
	require.NoError(t, err)
	require.NotNil(t, l.Karta.Spec.Gangmap)
	assert.Equal(t, ".spec.worker.size", l.Karta.Spec.Gangmap.Components[0].PodsPerReplicaPath.JQ)
	require.Len(t, l.Warnings, 1, "spec.gangmap came back through the annotation; spec.futureField was lost")
	assert.Equal(t, "spec.futureField", l.Warnings[0].Field)
}

// Sibling pod-bearing components with the same selector would claim the same pods.
func TestDuplicateSelectorsAreInvalid(t *testing.T) {
	doc := strings.Replace(customJob, `        scaleDefinition: {replicasPath: .spec.worker.replicas}
`, `        scaleDefinition: {replicasPath: .spec.worker.replicas}
        podSelector: {componentTypeSelector: {keyPath: '.metadata.labels["role"]', value: w}}
      - name: other
        ownerRef: customjob
        specDefinition: {podTemplateSpecPath: .spec.other.template}
        podSelector: {componentTypeSelector: {keyPath: '.metadata.labels["role"]', value: w}}
`, 1)
	l, err := decodeOne(t, doc, true)
	require.NoError(t, err)
	errs := definitions.ValidateStructure(l.Karta)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.structureDefinition.childComponents[1].podSelector.componentTypeSelector", errs[0].Field)
	assert.Contains(t, errs[0].Detail, `the same selector as component "worker"`)
}

// An unchanged definition reloaded by its source stays the active one in listings.
func TestEntriesActiveAfterReload(t *testing.T) {
	r := definitions.NewRegistry(compiler(t))
	for i := 0; i < 2; i++ {
		l, err := decodeOne(t, customJob, true)
		require.NoError(t, err)
		r.SetSource(definitions.SourceFile, []*definitions.Loaded{l})
		entries := r.Entries()
		require.Len(t, entries, 1)
		assert.True(t, entries[0].Active, "load %d", i+1)
	}
}

// A file named twice, directly and through its directory, is loaded once: it must not conflict
// with itself.
func TestLoadPathsLoadsEachFileOnce(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cj.yaml"), []byte(customJob), 0o600))
	ls, err := definitions.LoadPaths([]string{dir, filepath.Join(dir, "cj.yaml"), dir + "/./cj.yaml"}, definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	require.NoError(t, err)
	assert.Len(t, ls, 1)
}

// Two definitions of one kind from one source conflict: each entry lists the conflict once.
func TestEntriesListConflictOnce(t *testing.T) {
	r := definitions.NewRegistry(compiler(t))
	a, err := decodeOne(t, customJob, true)
	require.NoError(t, err)
	a.Origin = "a.yaml#0"
	b, err := decodeOne(t, strings.Replace(customJob, "metadata: {name: customjob}", "metadata: {name: customjob-copy}", 1), true)
	require.NoError(t, err)
	b.Origin = "b.yaml#0"
	r.SetSource(definitions.SourceFile, []*definitions.Loaded{a, b})
	entries := r.Entries()
	require.Len(t, entries, 2)
	want := `2 file definitions for CustomJob.e2e.example.com/v1: ["customjob" (a.yaml#0) "customjob-copy" (b.yaml#0)]; none is used until one is removed`
	for _, e := range entries {
		assert.False(t, e.Active, e.Name)
		assert.Equal(t, []string{want}, e.Problems, e.Name)
	}
}

// TestSameNameDefinitionsListedInOneOrder: two definitions of one name in one file (a copy
// pasted twice) tie on the name; their problems and entries are ordered by origin, the same on
// every load (the CLI's "has problems" hints listed them in either order before).
func TestSameNameDefinitionsListedInOneOrder(t *testing.T) {
	for range 20 {
		r := definitions.NewRegistry(compiler(t))
		var loaded []*definitions.Loaded
		for _, origin := range []string{"dup.yaml#1", "dup.yaml#0"} {
			l, err := decodeOne(t, customJob, true)
			require.NoError(t, err)
			l.Origin = origin
			loaded = append(loaded, l)
		}
		r.SetSource(definitions.SourceFile, loaded)
		probs := r.Problems()
		require.Len(t, probs, 2)
		assert.Equal(t, []string{"dup.yaml#0", "dup.yaml#1"}, []string{probs[0].Origin, probs[1].Origin})
		entries := r.Entries()
		require.Len(t, entries, 2)
		assert.Equal(t, []string{"dup.yaml#0", "dup.yaml#1"}, []string{entries[0].Origin, entries[1].Origin})
	}
}
