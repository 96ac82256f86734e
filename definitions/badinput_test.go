package definitions_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/podgrouper/core/hub"
	"github.com/gangmap/gangmap/podgrouper/core/native"
)

// badBase is a valid definition the bad-input tests break one field at a time: a coordinator and
// workers, each with a pod template and replicas.
const badBase = `apiVersion: run.ai/v1alpha1
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
`

// Field paths of the worker component, as errors name them.
const (
	workerPath   = "spec.structureDefinition.childComponents[1]"
	replicasPath = workerPath + ".scaleDefinition.replicasPath"
	templatePath = workerPath + ".specDefinition.podTemplateSpecPath"
)

// badObject is a BadJob workload: 1 coordinator, 2 workers.
func badObject() map[string]any {
	tpl := func() map[string]any {
		return map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "image": "x"}}}}
	}
	return map[string]any{
		"apiVersion": "bad.example.com/v1", "kind": "BadJob", "metadata": map[string]any{"name": "bj", "namespace": "ns"},
		"spec": map[string]any{
			"coordinator": map[string]any{"replicas": int64(1), "template": tpl()},
			"worker":      map[string]any{"replicas": int64(2), "template": tpl()},
		},
	}
}

// badCompiler has short limits so that the loop and cost tests stay fast.
func badCompiler(t testing.TB, l expr.Limits) *expr.Compiler {
	t.Helper()
	c, err := expr.NewCompiler(l)
	require.NoError(t, err)
	return c
}

func badDecode(t testing.TB, doc string, strict bool) (*definitions.Loaded, error) {
	t.Helper()
	ls, err := definitions.Decode(strings.NewReader(doc), "bad.yaml", definitions.SourceFile, definitions.DecodeOptions{Strict: strict})
	if err != nil {
		return nil, err
	}
	require.Len(t, ls, 1)
	return ls[0], nil
}

// badCompile decodes doc (strict) and compiles it with l.
func badCompile(t testing.TB, doc string, l expr.Limits) (*definitions.Compiled, error) {
	t.Helper()
	ld, err := badDecode(t, doc, true)
	require.NoError(t, err)
	return definitions.Compile(ld, badCompiler(t, l))
}

// withWorker replaces the worker's `old` line with `new`.
func withWorker(t testing.TB, old, new string) string {
	t.Helper()
	require.Contains(t, badBase, old)
	return strings.Replace(badBase, old, new, 1)
}

func TestBadInputInvalidYAML(t *testing.T) {
	_, err := badDecode(t, badBase+"      - name: [unclosed\n", true)
	require.Error(t, err)
	assert.Equal(t, "bad.yaml#0: invalid YAML: yaml: line 22: did not find expected ',' or ']'", err.Error())

	// A later document's error names its index; the documents before it do not hide it.
	_, err = badDecode(t, badBase+"---\nkind: [\n", true)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "bad.yaml#1: invalid YAML: "), err.Error())

	// Valid YAML that is not an object, and an object that is not a Karta.
	_, err = badDecode(t, "- a\n- b\n", true)
	assert.EqualError(t, err, "bad.yaml#0: expected a YAML object: json: cannot unmarshal array into Go value of type map[string]interface {}")
	_, err = badDecode(t, strings.Replace(badBase, "kind: Karta", "kind: Carta", 1), true)
	assert.EqualError(t, err, `bad.yaml#0: expected apiVersion run.ai/v1alpha1 and kind Karta, got apiVersion "run.ai/v1alpha1" kind "Carta"`)
}

func TestBadInputUnknownFields(t *testing.T) {
	doc := withWorker(t, "        scaleDefinition: {replicasPath: .spec.worker.replicas}\n",
		"        scaleDefinition: {replicasPath: .spec.worker.replicas, replicaz: 3}\n")
	_, err := badDecode(t, doc, true)
	assert.EqualError(t, err, `bad.yaml#0: definition "badjob": `+workerPath+`.scaleDefinition.replicaz: unknown field (strict mode)`)

	// Lenient (cluster Kartas, files without --strict-definitions): a warning naming the path,
	// and the definition is used.
	ld, err := badDecode(t, doc, false)
	require.NoError(t, err)
	require.Len(t, ld.Warnings, 1)
	assert.Equal(t, workerPath+`.scaleDefinition.replicaz: Invalid value: "<unknown field>": unknown field: not part of the Workload Map format`, ld.Warnings[0].Error())
	_, err = definitions.Compile(ld, badCompiler(t, expr.Limits{}))
	assert.NoError(t, err)
}

func TestBadInputJQDoesNotCompile(t *testing.T) {
	_, err := badCompile(t, withWorker(t, "replicasPath: .spec.worker.replicas}", `replicasPath: ".spec.worker.replicas |||"}`), expr.Limits{})
	var de *definitions.DefinitionError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "definition \"badjob\" (bad.yaml#0) is invalid: "+replicasPath+
		`: Invalid value: ".spec.worker.replicas |||": expected a valid jq expression: parse error at offset 24 (after "c.worker.replicas ||"): unexpected token "|"`,
		err.Error())

	// A forbidden function is named.
	_, err = badCompile(t, withWorker(t, "replicasPath: .spec.worker.replicas}", `replicasPath: "[paths] | length"}`), expr.Limits{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), replicasPath+`: Invalid value: "[paths] | length": expected a valid jq expression: function paths/0 is not allowed`)
}

// TestBadInputJQTooLarge: an expression of 100,000 chained additions (200 KB, which compiled
// for minutes and held 500 MB) and one nested 5,000 levels deep (10 KB) make the definition
// invalid at once, naming the field and the bound; the error quotes the expression's first 200
// characters only, not the whole text at every Event and log line.
func TestBadInputJQTooLarge(t *testing.T) {
	long := "1" + strings.Repeat("+1", 100_000)
	_, err := badCompile(t, withWorker(t, "replicasPath: .spec.worker.replicas}", `replicasPath: "`+long+`"}`), expr.Limits{})
	var de *definitions.DefinitionError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "definition \"badjob\" (bad.yaml#0) is invalid: "+replicasPath+
		`: Invalid value: "`+long[:200]+`... (200001 bytes)": expected a valid jq expression: the expression is 200001 bytes long; at most 16384 are compiled (expr.MaxJQSourceBytes)`,
		err.Error())

	deep := strings.Repeat("(", 5000) + ".spec.worker.replicas" + strings.Repeat(")", 5000)
	_, err = badCompile(t, withWorker(t, "replicasPath: .spec.worker.replicas}", `replicasPath: "`+deep+`"}`), expr.Limits{})
	require.ErrorAs(t, err, &de)
	assert.Contains(t, err.Error(), replicasPath+`: Invalid value: "`+deep[:200]+`... (10021 bytes)": expected a valid jq expression: the expression nests deeper than 256 levels`)
}

// resolveErr compiles doc and resolves it on obj, returning the error.
func resolveErr(t *testing.T, doc string, l expr.Limits, obj map[string]any) error {
	t.Helper()
	c, err := badCompile(t, doc, l)
	require.NoError(t, err)
	_, err = c.Resolve(context.Background(), obj)
	return err
}

func TestBadInputJQExplodes(t *testing.T) {
	// An expression that generates results without end stops at the result bound.
	doc := withWorker(t, "replicasPath: .spec.worker.replicas}", `replicasPath: "def f: (., f); f"}`)
	err := resolveErr(t, doc, expr.Limits{MaxResults: 100}, badObject())
	var le *expr.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, expr.LimitResults, le.Kind)
	assert.EqualError(t, err, replicasPath+`: jq expression "def f: (., f); f": limit exceeded: more than 100 results`)
}

func TestBadInputJQLoops(t *testing.T) {
	// until/2 is not forbidden and compiles; with a condition that never holds it loops until the
	// evaluation timeout.
	for _, src := range []string{"until(false; .)", "0 | until(false; . + 0)", "[until(false; [.])]"} {
		doc := withWorker(t, "replicasPath: .spec.worker.replicas}", `replicasPath: "`+src+`"}`)
		start := time.Now()
		err := resolveErr(t, doc, expr.Limits{Timeout: 50 * time.Millisecond}, badObject())
		took := time.Since(start)
		var le *expr.LimitError
		require.ErrorAs(t, err, &le, src)
		assert.Equal(t, expr.LimitTimeout, le.Kind, src)
		assert.True(t, errors.Is(err, context.DeadlineExceeded), src)
		assert.EqualError(t, err, replicasPath+`: jq expression "`+src+`": limit exceeded: deadline exceeded (timeout 50ms)`)
		assert.Less(t, took, 5*time.Second, "%s stopped at its timeout", src)
	}
	// Unbounded recursion holds a frame per level: the evaluation budget ends it first.
	doc := withWorker(t, "replicasPath: .spec.worker.replicas}", `replicasPath: "def f: f; f"}`)
	err := resolveErr(t, doc, expr.Limits{Timeout: time.Minute}, badObject())
	var le *expr.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, expr.LimitBudget, le.Kind)
	assert.Contains(t, err.Error(), replicasPath+`: jq expression "def f: f; f": limit exceeded: function call refused`)
}

func TestBadInputWrongTypes(t *testing.T) {
	cases := []struct {
		name, old, new string
		mutate         func(obj map[string]any)
		want           string
	}{{
		name: "a string where a template is expected",
		mutate: func(obj map[string]any) {
			obj["spec"].(map[string]any)["worker"].(map[string]any)["template"] = "not a template"
		},
		want: templatePath + ": expected a pod template (metadata, spec): got string",
	}, {
		name: "an object where a number is expected",
		mutate: func(obj map[string]any) {
			obj["spec"].(map[string]any)["worker"].(map[string]any)["replicas"] = map[string]any{"min": int64(1)}
		},
		want: replicasPath + `: expected a number or a numeric string, got {"min":1} (object)`,
	}, {
		name: "a string that is not a number",
		mutate: func(obj map[string]any) {
			obj["spec"].(map[string]any)["worker"].(map[string]any)["replicas"] = "two"
		},
		want: replicasPath + `: expected a number or a numeric string, got "two" (string)`,
	}, {
		name: "a list where one value is expected",
		old:  "replicasPath: .spec.worker.replicas}", new: `replicasPath: ".spec.worker.replicas, .spec.worker.replicas"}`,
		want: replicasPath + ": expected a single value, got 2 (add instanceIdPath for a list of instances)",
	}, {
		name: "a template whose fields have the wrong types",
		mutate: func(obj map[string]any) {
			obj["spec"].(map[string]any)["worker"].(map[string]any)["template"] = map[string]any{"spec": map[string]any{"containers": "main"}}
		},
		want: templatePath + ": expected a pod template (metadata, spec): ",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := badBase
			if tc.old != "" {
				doc = withWorker(t, tc.old, tc.new)
			}
			obj := badObject()
			if tc.mutate != nil {
				tc.mutate(obj)
			}
			err := resolveErr(t, doc, expr.Limits{}, obj)
			require.Error(t, err)
			if strings.HasSuffix(tc.want, ": ") {
				assert.True(t, strings.HasPrefix(err.Error(), tc.want), "%q starts with %q", err.Error(), tc.want)
				return
			}
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestBadInputCELOverCostLimit(t *testing.T) {
	// A CEL replicas accessor whose cost grows with the square of a list in the workload.
	doc := withWorker(t, "replicasPath: .spec.worker.replicas}",
		`replicas: {expression: "object.spec.items.map(x, object.spec.items.filter(y, y == x).size()).size()"}}`)
	obj := badObject()
	items := make([]any, 300)
	for i := range items {
		items[i] = int64(i)
	}
	obj["spec"].(map[string]any)["items"] = items
	// A generous timeout: the cost limit, not the clock, must stop it (under -race on a loaded
	// machine the default 1 s timeout could fire first).
	limits := expr.Limits{CELCostLimit: 10_000, Timeout: time.Minute}
	err := resolveErr(t, doc, limits, obj)
	var le *expr.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, expr.LimitCost, le.Kind)
	assert.EqualError(t, err, replicasPath+`: cel expression "object.spec.items.map(x, object.spec.items.filter(y, y == x).size()).size()": limit exceeded: cost limit 10000 exceeded`)

	// The same expression on a short list is within the limit.
	obj["spec"].(map[string]any)["items"] = items[:3]
	assert.NoError(t, resolveErr(t, doc, limits, obj))
}

func TestBadInputDefinitionForNativeKind(t *testing.T) {
	// A definition for batch/v1 Job loads and is the registry's winner for the kind, but the
	// hub never hands Job pods to gangmap: KAI groups Jobs natively.
	doc := strings.Replace(strings.Replace(badBase, "group: bad.example.com, version: v1, kind: BadJob", "group: batch, version: v1, kind: Job", 1), "name: badjob}", "name: batch-v1-job}", 1)
	ld, err := badDecode(t, doc, true)
	require.NoError(t, err)
	r := definitions.NewRegistry(badCompiler(t, expr.Limits{}))
	r.SetSource(definitions.SourceCluster, []*definitions.Loaded{ld})
	assert.Empty(t, r.Problems())
	job := schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	require.NotNil(t, r.Lookup(job), "the definition loads")
	table, err := native.ForRelease(native.DefaultRelease)
	require.NoError(t, err)
	h := &hub.Hub{Native: table, Registry: r, Grouper: nil}
	assert.Equal(t, hub.Native, h.Decide(job))
	assert.Nil(t, h.GetPodGrouperPlugin(job))
}

func TestBadInputTwoDefinitionsForOneKind(t *testing.T) {
	a, err := badDecode(t, badBase, true)
	require.NoError(t, err)
	b, err := badDecode(t, strings.Replace(badBase, "name: badjob}", "name: badjob-copy}", 1), true)
	require.NoError(t, err)
	b.Origin = "other.yaml#0"
	r := definitions.NewRegistry(badCompiler(t, expr.Limits{}))
	r.SetSource(definitions.SourceFile, []*definitions.Loaded{a, b})
	gvk := schema.GroupVersionKind{Group: "bad.example.com", Version: "v1", Kind: "BadJob"}
	assert.Nil(t, r.Lookup(gvk), "neither definition is used")
	require.Len(t, r.Problems(), 2, "each definition in conflict is told")
	assert.Equal(t, "badjob-copy", r.Problems()[1].Definition)
	assert.Equal(t, "other.yaml#0", r.Problems()[1].Origin)
	p := r.Problems()[0]
	assert.Equal(t, "badjob", p.Definition)
	assert.Equal(t, "Conflict", p.Reason)
	assert.Equal(t, "BadJob.bad.example.com/v1", p.Kind)
	assert.Equal(t, `2 file definitions for BadJob.bad.example.com/v1: ["badjob" (bad.yaml#0) "badjob-copy" (other.yaml#0)]; none is used until one is removed`, p.Message)

	// A definition of a higher-precedence source for the kind settles it.
	c, err := badDecode(t, strings.Replace(badBase, "name: badjob}", "name: badjob-cluster}", 1), true)
	require.NoError(t, err)
	r.SetSource(definitions.SourceCluster, []*definitions.Loaded{c})
	require.NotNil(t, r.Lookup(gvk))
	assert.Equal(t, "badjob-cluster", r.Lookup(gvk).Name())
}

// TestOwnsNoPods: spec.gangmap.ownsNoPods needs both its condition and its reason (each missing
// one is named by path); when the condition holds on the workload, the workload resolves to no
// component instance and no path miss, with the reason; when it does not, as without it.
func TestOwnsNoPods(t *testing.T) {
	_, err := badCompile(t, badBase+"  gangmap:\n    ownsNoPods: {}\n", expr.Limits{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.gangmap.ownsNoPods.when: Required value")
	assert.Contains(t, err.Error(), "spec.gangmap.ownsNoPods.reason: Required value")

	c, err := badCompile(t, badBase+"  gangmap:\n    ownsNoPods: {when: '.spec.external != null', reason: the job runs on an external pool}\n", expr.Limits{})
	require.NoError(t, err)
	obj := badObject()
	w, err := c.Resolve(context.Background(), obj)
	require.NoError(t, err)
	assert.Empty(t, w.OwnsNoPods)
	require.Len(t, w.Components, 3)
	assert.Len(t, w.Components[2].Instances, 1, "the workers as usual")

	obj["spec"].(map[string]any)["external"] = "pool-a"
	delete(obj["spec"].(map[string]any), "worker")
	w, err = c.Resolve(context.Background(), obj)
	require.NoError(t, err)
	assert.Equal(t, "the job runs on an external pool", w.OwnsNoPods)
	assert.Empty(t, w.Misses, "nothing was expected to resolve")
	require.Len(t, w.Components, 3)
	for _, rc := range w.Components {
		assert.Empty(t, rc.Instances, rc.Component.Name)
	}
}
