package app

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// catalogTests is the built-in catalog's definition test suite.
const catalogTests = "../../../definitions/catalog/tests"

// TestCatalogSuitePasses runs the catalog's definition test suite as CI does: every case must
// pass, and the cases the catalog promises are there.
func TestCatalogSuitePasses(t *testing.T) {
	r := gangmap(t, "test", catalogTests)
	require.Equal(t, ExitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	for _, c := range []string{"jobset-seed", "jobset-paralleljobs", "lws-sglang", "raycluster-kai-gpu-fraction"} {
		assert.Contains(t, r.stdout, "ok  \t"+c+"\n")
	}
	assert.Regexp(t, `ok  \t\d+ cases? passed\n$`, r.stdout)
}

// TestBrokenDefinitionFailsNamingThePath: the catalog JobSet definition with a misspelt
// instanceIdPath (.spec.replicatedJob, testdata/tests-broken/*/definition.yaml), tested with the
// seed's expectations. With "[]?" the path resolves to nothing (a miss); with "[]" jq fails on
// null and gangmap reads it null-safe (an absent list has no entries, as for a RayCluster without
// worker groups), so it is a miss too. Either way the case fails and the output names the
// definition path and the expression.
func TestBrokenDefinitionFailsNamingThePath(t *testing.T) {
	r := gangmap(t, "test", "testdata/tests-broken")
	assert.Equal(t, ExitProblems, r.code)
	assert.Contains(t, r.stdout, "--- FAIL: misspelt-optional\n")
	assert.Contains(t, r.stdout, "path resolved to nothing on the workload: spec.structureDefinition.childComponents[0].instanceIdPath (.spec.replicatedJob[]?.name)")
	// The expected gang is gone: the diff shows it.
	assert.Contains(t, r.stdout, "podGroups (-want +got):")
	assert.Contains(t, r.stdout, "      -  name: pg-train-llm-jobset\n", "the diff is YAML, as expect.yaml is")
	assert.Contains(t, r.stdout, "--- FAIL: misspelt-strict\n")
	assert.Contains(t, r.stdout, "path resolved to nothing on the workload: spec.structureDefinition.childComponents[0].instanceIdPath (.spec.replicatedJob[].name)")
	assert.Contains(t, r.stdout, "FAIL\t2 of 2 cases failed\n")
}

func TestTestCaseDefinitionMustBeTheOneUsed(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/manifest.yaml", readFile(t, catalogTests+"/jobset-paralleljobs/manifest.yaml"))
	writeFile(t, dir+"/expect.yaml", "totalGPUs: 0\n")
	// Invalid jq: the registry skips it and the catalog would answer in its place.
	writeFile(t, dir+"/definition.yaml", readFile(t, "testdata/definitions/bad-jq.yaml"))
	r := gangmap(t, "test", dir)
	assert.Equal(t, ExitProblems, r.code, r.stdout)
	assert.Contains(t, r.stdout, "definition.yaml is not the definition used for JobSet")
	assert.Contains(t, r.stdout, "spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath")
}

func TestTestExpectedMissesAndErrors(t *testing.T) {
	dir := t.TempDir()
	// A JobSet with no replicatedJobs: instanceIdPath resolves to nothing; expected, it passes.
	writeFile(t, dir+"/manifest.yaml", "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: empty}\nspec: {replicatedJobs: []}\n")
	writeFile(t, dir+"/expect.yaml", "misses: ['spec.structureDefinition.childComponents[0].instanceIdPath']\npodGroups: []\nroles: []\ntotalGPUs: 0\n")
	r := gangmap(t, "test", dir)
	assert.Equal(t, ExitOK, r.code, r.stdout)

	// A listed miss that does not happen fails.
	writeFile(t, dir+"/manifest.yaml", readFile(t, catalogTests+"/jobset-paralleljobs/manifest.yaml"))
	r = gangmap(t, "test", dir)
	assert.Equal(t, ExitProblems, r.code)
	assert.Contains(t, r.stdout, "expected path spec.structureDefinition.childComponents[0].instanceIdPath to resolve to nothing")

	// An unknown key in expect.yaml is an error, not silently ignored.
	writeFile(t, dir+"/expect.yaml", "podGroup: []\n")
	r = gangmap(t, "test", dir)
	assert.Equal(t, ExitProblems, r.code)
	assert.Contains(t, r.stdout, `unknown field "podGroup"`)
}

func TestTestUsageErrors(t *testing.T) {
	assert.Equal(t, ExitUnusable, gangmap(t, "test").code)
	assert.Equal(t, ExitUnusable, gangmap(t, "test", t.TempDir()).code, "no case")
	assert.Equal(t, ExitUnusable, gangmap(t, "test", "nope").code)
	assert.Equal(t, ExitUnusable, gangmap(t, "test", catalogTests, "--run", "(").code)
	r0 := gangmap(t, "test", catalogTests, "--run", "nomatch")
	assert.Equal(t, ExitUnusable, r0.code)
	assert.Regexp(t, `^error: --run "nomatch" matches none of the \d+ test cases in `, r0.stderr, "the filter, not the directory, is blamed")
	r := gangmap(t, "test", catalogTests, "--run", "^lws")
	assert.Equal(t, ExitOK, r.code)
	assert.Equal(t, "ok  \tlws-sglang\nok  \t1 case passed\n", r.stdout)
}
