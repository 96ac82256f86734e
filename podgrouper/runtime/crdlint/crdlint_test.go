package crdlint

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
)

var customJob = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "CustomJob"}

// linterFor is a Linter over a registry holding the file definition karta, with the CustomJob CRD
// of examples/crds served by a fake reader (the linter only gets CRDs by name).
func linterFor(t *testing.T, karta string) (*Linter, *definitions.Registry, *record.FakeRecorder) {
	t.Helper()
	b, err := os.ReadFile("../../../examples/crds/example.com_customjobs.yaml")
	require.NoError(t, err)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(b, crd))
	scheme := runtime.NewScheme()
	require.NoError(t, apiextensionsv1.AddToScheme(scheme))
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(customJob, meta.RESTScopeNamespace)
	compiler, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	reg := definitions.NewRegistry(compiler)
	setFile(t, reg, karta)
	rec := record.NewFakeRecorder(10)
	return &Linter{Registry: reg, Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(crd).Build(), Mapper: mapper, Recorder: rec}, reg, rec
}

func setFile(t *testing.T, reg *definitions.Registry, karta string) {
	t.Helper()
	l, err := definitions.DecodeDocument([]byte(karta), "file:customjob.yaml", definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	require.NoError(t, err)
	reg.SetSource(definitions.SourceFile, []*definitions.Loaded{l})
}

// TestMisspeltPathRefusesTheDefinition: the example CustomJob definition with the worker's
// replicasPath misspelt (.spec.workr.replicas // 1, the `//` default the catalog recommends,
// which would plan 1 worker where the job runs 3: issue 31 point 1) is refused by the in-cluster
// lint: no definition for CustomJob, a PathCannotResolve problem naming the field, the path and
// the nearest field; the fixed definition is used again at the next lint.
func TestMisspeltPathRefusesTheDefinition(t *testing.T) {
	b, err := os.ReadFile("../../../examples/definitions/customjob-karta.yaml")
	require.NoError(t, err)
	good := string(b)
	typo := strings.Replace(good, "replicasPath: .spec.worker.replicas}", "replicasPath: .spec.workr.replicas // 1}", 1)
	require.NotEqual(t, good, typo)
	l, reg, _ := linterFor(t, typo)
	require.NotNil(t, reg.Lookup(customJob), "compiled and active before the lint")
	changes := 0
	reg.OnChange(func() { changes++ })

	l.LintAll(context.Background())
	assert.Nil(t, reg.Lookup(customJob), "the definition with a path the CRD cannot hold is still used")
	problems := pathProblems(reg)
	require.Len(t, problems, 1)
	assert.Equal(t, "example-com-v1-customjob", problems[0].Definition)
	assert.Contains(t, problems[0].Message, "spec.structureDefinition.childComponents[1].scaleDefinition.replicasPath: .spec.workr")
	assert.Contains(t, problems[0].Message, `did you mean "worker"?`)
	assert.Contains(t, problems[0].Message, "CRD customjobs.example.com")
	assert.Equal(t, 1, changes)

	l.LintAll(context.Background())
	assert.Equal(t, 1, changes, "an unchanged verdict recomputes nothing (no new generation: cached plans stay)")

	setFile(t, reg, good)
	l.LintAll(context.Background())
	assert.NotNil(t, reg.Lookup(customJob), "the fixed definition is used")
	for _, p := range reg.Problems() {
		assert.NotEqual(t, definitions.ReasonPathCannotResolve, p.Reason, p.Message)
	}
}

// TestCatalogDefinitionOnlyReported: a catalog definition whose path the CRD cannot hold stays in
// use (the catalog reads fields across operator versions), and a non-leader replica refuses a
// file definition too (its webhook decides with the same registry) but sends no Event.
func TestCatalogDefinitionOnlyReported(t *testing.T) {
	b, err := os.ReadFile("../../../examples/definitions/customjob-karta.yaml")
	require.NoError(t, err)
	typo := strings.Replace(string(b), "replicasPath: .spec.worker.replicas}", "replicasPath: .spec.workr.replicas}", 1)
	l, reg, rec := linterFor(t, typo)
	cat, err := definitions.DecodeDocument([]byte(typo), "catalog:customjob.yaml", definitions.SourceCatalog, definitions.DecodeOptions{Strict: true})
	require.NoError(t, err)
	reg.SetSource(definitions.SourceCatalog, []*definitions.Loaded{cat})
	notYet := make(chan struct{})
	l.Elected = notYet

	l.LintAll(context.Background())
	c := reg.Lookup(customJob)
	require.NotNil(t, c, "the file definition is refused, the catalog's takes its place")
	assert.Equal(t, definitions.SourceCatalog, c.Loaded.Source)
	assert.Empty(t, rec.Events, "a replica that does not lead sends no Event")
}

// TestVetRefusesBeforeUse: with the linter as the registry's Vetter (as the grouper wires it), a
// definition with a path its CRD cannot hold is refused as it loads, never used, not even until
// the next LintAll: in between, the grouper regroups live workloads with the winner (a worker
// replicasPath misspelt without a default planned 0 workers and rewrote a live gang's PodGroup to
// its launcher alone). Its fix is used as it loads.
func TestVetRefusesBeforeUse(t *testing.T) {
	b, err := os.ReadFile("../../../examples/definitions/customjob-karta.yaml")
	require.NoError(t, err)
	good := string(b)
	typo := strings.Replace(good, "replicasPath: .spec.worker.replicas}", "replicasPath: .spec.worker.replica}", 1)
	require.NotEqual(t, good, typo)
	l, reg, _ := linterFor(t, good)
	reg.SetVetter(l.Vet)
	require.NotNil(t, reg.Lookup(customJob))

	setFile(t, reg, typo)
	assert.Nil(t, reg.Lookup(customJob), "a definition its CRD refuses is used until the next lint")
	problems := pathProblems(reg)
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0].Message, "spec.structureDefinition.childComponents[1].scaleDefinition.replicasPath: .spec.worker.replica")
	assert.Contains(t, reg.Unusable(customJob), "PathCannotResolve")

	l.LintAll(context.Background())
	assert.Nil(t, reg.Lookup(customJob), "the lint keeps it refused")

	setFile(t, reg, good)
	assert.NotNil(t, reg.Lookup(customJob), "the fixed definition is used as it loads")
}

// pathProblems are reg's problems of reason ReasonPathCannotResolve (refused by the CRD lint).
func pathProblems(reg *definitions.Registry) []definitions.Problem {
	var out []definitions.Problem
	for _, p := range reg.Problems() {
		if p.Reason == definitions.ReasonPathCannotResolve {
			out = append(out, p)
		}
	}
	return out
}
