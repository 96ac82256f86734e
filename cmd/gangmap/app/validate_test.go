package app

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validateDoc mirrors the -o json output of "gangmap validate".
type validateDoc struct {
	Results []struct {
		File       string `json:"file"`
		Definition string `json:"definition"`
		Kind       *struct {
			Group, Version, Kind string
		} `json:"kind"`
		Valid    bool           `json:"valid"`
		Errors   []fieldMessage `json:"errors"`
		Warnings []fieldMessage `json:"warnings"`
	} `json:"results"`
}

func validateJSON(t *testing.T, wantCode int, args ...string) validateDoc {
	t.Helper()
	r := gangmap(t, append([]string{"validate", "-o", "json"}, args...)...)
	require.Equal(t, wantCode, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	var doc validateDoc
	decodeOne(t, r.stdout, &doc)
	return doc
}

func TestValidateCatalogIsValidInStrictMode(t *testing.T) {
	files, err := filepath.Glob("../../../definitions/catalog/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	doc := validateJSON(t, ExitOK, append([]string{"--strict"}, files...)...)
	require.Len(t, doc.Results, len(files))
	kinds := map[string]bool{}
	for _, res := range doc.Results {
		assert.True(t, res.Valid, res.File)
		assert.Empty(t, res.Errors, res.File)
		assert.Empty(t, res.Warnings, res.File)
		require.NotNil(t, res.Kind, res.File)
		kinds[res.Kind.Kind] = true
	}
	assert.True(t, kinds["JobSet"] && kinds["LeaderWorkerSet"], "catalog kinds: %v", kinds)

	text := gangmap(t, append([]string{"validate", "--strict"}, files...)...)
	assert.Equal(t, ExitOK, text.code)
	assert.Regexp(t, `(?m)^OK +\S+jobset-x-k8s-io-jobset-v1alpha2.yaml#0  definition "jobset-x-k8s-io-jobset-v1alpha2" for JobSet.jobset.x-k8s.io/v1alpha2$`, text.stdout)
}

func TestValidateBadJQ(t *testing.T) {
	const path = "spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath"
	r := gangmap(t, "validate", "testdata/definitions/bad-jq.yaml")
	assert.Equal(t, ExitProblems, r.code)
	assert.Contains(t, r.stdout, "INVALID     testdata/definitions/bad-jq.yaml#0  definition \"bad-jq\"")
	assert.Contains(t, r.stdout, "  error: "+path+`: Invalid value: ".spec.replicas |||": expected a valid jq expression`)
	assert.Contains(t, r.stdout, "0 valid, 1 invalid, 0 unreadable\n")

	doc := validateJSON(t, ExitProblems, "testdata/definitions/bad-jq.yaml")
	require.Len(t, doc.Results, 1)
	res := doc.Results[0]
	assert.Equal(t, "bad-jq", res.Definition)
	assert.Equal(t, "testdata/definitions/bad-jq.yaml", res.File)
	assert.False(t, res.Valid)
	require.Len(t, res.Errors, 1)
	assert.Equal(t, path, res.Errors[0].Field)
	assert.Contains(t, res.Errors[0].Message, "parse error")
}

func TestValidateReportsEveryError(t *testing.T) {
	doc := validateJSON(t, ExitProblems, "testdata/definitions/two-errors.yaml")
	require.Len(t, doc.Results, 1)
	errs := doc.Results[0].Errors
	require.Len(t, errs, 2)
	assert.Equal(t, "spec.structureDefinition.childComponents[0].instanceIdPath", errs[0].Field)
	assert.Contains(t, errs[0].Message, "recursive descent (..) is not allowed")
	assert.Equal(t, "spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath", errs[1].Field)
}

func TestValidateUnknownField(t *testing.T) {
	const path = "spec.optimizationInstructions.gangScheduling.podGroup.minMember"
	lenient := validateJSON(t, ExitOK, "--allow-unknown-fields", "testdata/definitions/unknown-field.yaml")
	res := lenient.Results[0]
	assert.True(t, res.Valid)
	assert.Empty(t, res.Errors)
	require.Len(t, res.Warnings, 1)
	assert.Equal(t, path, res.Warnings[0].Field)
	assert.Contains(t, res.Warnings[0].Message, "unknown field")

	// By default (and with --strict) an unknown field is an error.
	for _, args := range [][]string{nil, {"--strict"}, {"--strict", "--allow-unknown-fields"}} {
		strict := validateJSON(t, ExitProblems, append(args, "testdata/definitions/unknown-field.yaml")...)
		res = strict.Results[0]
		assert.False(t, res.Valid, args)
		assert.Empty(t, res.Warnings, args)
		require.Len(t, res.Errors, 1, args)
		assert.Equal(t, path, res.Errors[0].Field, args)
		assert.Contains(t, res.Errors[0].Message, "unknown field", args)
	}

	text := gangmap(t, "validate", "--allow-unknown-fields", "testdata/definitions/unknown-field.yaml")
	assert.Contains(t, text.stdout, "  warning: "+path+": unknown field")
}

func TestValidateUnreadableExit2(t *testing.T) {
	// A missing file and invalid YAML are unreadable (2), even next to an invalid definition (1).
	r := gangmap(t, "validate", "testdata/definitions/bad-jq.yaml", "testdata/definitions/missing.yaml")
	assert.Equal(t, ExitUnusable, r.code)
	assert.Contains(t, r.stdout, "UNREADABLE  testdata/definitions/missing.yaml\n  error: open testdata/definitions/missing.yaml: no such file or directory")
	assert.Contains(t, r.stdout, "0 valid, 1 invalid, 1 unreadable\n")

	doc := validateJSON(t, ExitUnusable, "testdata/manifests/invalid.yaml")
	require.Len(t, doc.Results, 1)
	assert.Contains(t, doc.Results[0].Errors[0].Message, "invalid YAML")
}

func TestValidateNotADefinition(t *testing.T) {
	doc := validateJSON(t, ExitProblems, seed)
	require.Len(t, doc.Results, 1)
	assert.Equal(t, "train-llm", doc.Results[0].Definition)
	assert.Contains(t, doc.Results[0].Errors[0].Message, "expected apiVersion run.ai/v1alpha1 and kind Karta")

	empty := t.TempDir() + "/empty.yaml"
	writeFile(t, empty, "# only a comment\n---\n")
	doc = validateJSON(t, ExitProblems, empty)
	assert.Equal(t, "no Workload Map definition (Karta) in this file", doc.Results[0].Errors[0].Message)
}

func TestValidateEachDocumentOnItsOwn(t *testing.T) {
	multi := t.TempDir() + "/multi.yaml"
	writeFile(t, multi, readFile(t, "testdata/definitions/bad-jq.yaml")+"---\n"+readFile(t, "testdata/definitions/override/team-jobset.yaml"))
	doc := validateJSON(t, ExitProblems, multi)
	require.Len(t, doc.Results, 2)
	assert.False(t, doc.Results[0].Valid)
	assert.True(t, doc.Results[1].Valid)
	assert.Equal(t, "team-jobset", doc.Results[1].Definition)
}

// With --crd, a path the workload CRD's schema says can never resolve is an error (exit 1) naming
// the definition field and the field the schema has (issue 31 point 1: it was a warning, exit 0);
// what the schema leaves open is a note.
func TestValidateAgainstCRDSchema(t *testing.T) {
	crd := "testdata/definitions/jobset-crd.yaml"
	doc := validateJSON(t, ExitOK, "--crd", crd, "../../../definitions/catalog/jobset-x-k8s-io-jobset-v1alpha2.yaml")
	require.Len(t, doc.Results, 1)
	// The catalog JobSet reads only fields the schema has; the schema leaves the items of
	// status.conditions open, which the status matchers read, and a note says so.
	const conditionsNote = ".status.conditions[]: the CRD schema does not describe the fields under it"
	require.Len(t, doc.Results[0].Warnings, 1)
	assert.Empty(t, doc.Results[0].Warnings[0].Field)
	assert.Contains(t, doc.Results[0].Warnings[0].Message, conditionsNote)

	doc = validateJSON(t, ExitProblems, "--crd", crd, "testdata/definitions/jobset-typo.yaml")
	require.Len(t, doc.Results, 1)
	assert.False(t, doc.Results[0].Valid)
	require.Len(t, doc.Results[0].Errors, 1, "the finding")
	require.Len(t, doc.Results[0].Warnings, 1, "the note")
	assert.Contains(t, doc.Results[0].Warnings[0].Message, conditionsNote)
	w := doc.Results[0].Errors[0]
	assert.Equal(t, "spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath", w.Field)
	assert.Contains(t, w.Message, `.spec.replicatedJob: the CRD schema has no field "replicatedJob" under .spec`)
	assert.Contains(t, w.Message, `did you mean "replicatedJobs"?`)

	r := gangmap(t, "validate", "--crd", "testdata/definitions/bad-jq.yaml", crd)
	assert.Equal(t, ExitUnusable, r.code, "a --crd file that is not a CRD is unusable input")

	// --crd takes a directory. e2e's trimmed JobSet CRD leaves spec open
	// (x-kubernetes-preserve-unknown-fields): the typo cannot be found, and a note says that
	// nothing under .spec was checked rather than passing in silence.
	doc = validateJSON(t, ExitOK, "--crd", "../../../e2e/testdata/crds/", "testdata/definitions/jobset-typo.yaml")
	require.Len(t, doc.Results, 1)
	var msgs []string
	for _, w := range doc.Results[0].Warnings {
		msgs = append(msgs, w.Message)
	}
	require.NotEmpty(t, msgs)
	assert.True(t, strings.HasPrefix(msgs[0], ".spec: the CRD schema does not describe the fields under it"), "%q", msgs)
	for _, m := range msgs {
		assert.NotContains(t, m, "never resolves")
	}
}

// Two valid definitions for one kind among the files given conflict: loaded together (one
// --definitions directory, one file source) neither would be used, so both are invalid. A file
// named twice is checked once, and a directory means its definition files.
func TestValidateConflictsAndDirectories(t *testing.T) {
	dir := t.TempDir()
	karta := readFile(t, "../../../e2e/testdata/customjob-karta.yaml")
	writeFile(t, dir+"/a.yaml", karta)
	writeFile(t, dir+"/b.yaml", strings.Replace(karta, "name: e2e-example-com-v1-customjob", "name: second", 1))
	doc := validateJSON(t, ExitProblems, dir)
	require.Len(t, doc.Results, 2)
	for _, r := range doc.Results {
		assert.False(t, r.Valid)
		require.Len(t, r.Errors, 1)
		assert.Equal(t, "spec.structureDefinition.rootComponent.kind", r.Errors[0].Field)
		assert.Contains(t, r.Errors[0].Message, "2 definitions for CustomJob.e2e.example.com/v1")
	}
	doc = validateJSON(t, ExitOK, dir+"/a.yaml", dir+"/a.yaml", dir+"/./a.yaml")
	require.Len(t, doc.Results, 1, "a file named three times is checked once")

	// With --strict too, a path the CRD schema says never resolves is an error.
	doc = validateJSON(t, ExitProblems, "--strict", "--crd", "testdata/definitions/jobset-crd.yaml", "testdata/definitions/jobset-typo.yaml")
	require.Len(t, doc.Results[0].Errors, 1)
	assert.Contains(t, doc.Results[0].Errors[0].Message, "never resolves")
}

// A directory with no definition file is refused (exit 2): a wrong path in CI must not pass.
func TestValidateEmptyDirectory(t *testing.T) {
	dir := t.TempDir()
	r := gangmap(t, "validate", dir)
	assert.Equal(t, ExitUnusable, r.code)
	assert.Equal(t, "error: no definition files (*.yaml, *.yml, *.json) in directory "+dir+"\n", r.stderr)
}

// TestValidateDuplicateKeyRefused: a definition naming a key twice is invalid, with and without
// --strict (the grouper refuses it too: definitions.Decode), naming the repeated key and its line.
func TestValidateDuplicateKeyRefused(t *testing.T) {
	for _, args := range [][]string{nil, {"--strict"}} {
		doc := validateJSON(t, ExitProblems, append(args, "testdata/definitions/duplicate-key.yaml")...)
		require.Len(t, doc.Results, 1)
		res := doc.Results[0]
		assert.False(t, res.Valid, "%v", args)
		require.Len(t, res.Errors, 1)
		assert.Equal(t, `testdata/definitions/duplicate-key.yaml#0: duplicate key (each key may appear once in a mapping; the last would silently win): line 25: key "replicasPath"`, res.Errors[0].Message)
	}
}

// TestValidateMisspeltPathIsAnError: the example CustomJob definition with the workers' count read
// from a misspelt path behind the `//` default the catalog recommends (.spec.workr.replicas // 1:
// valid jq, so plain validate says OK) fails `validate --crd` with exit 1, naming the field, the
// path and the field the CRD has (issue 31 point 1).
func TestValidateMisspeltPathIsAnError(t *testing.T) {
	dir := t.TempDir()
	typo := strings.Replace(readFile(t, "../../../examples/definitions/customjob-karta.yaml"),
		"replicasPath: .spec.worker.replicas}", "replicasPath: .spec.workr.replicas // 1}", 1)
	writeFile(t, dir+"/typo.yaml", typo)
	validateJSON(t, ExitOK, dir+"/typo.yaml")
	r := gangmap(t, "validate", "--crd", "../../../examples/crds/example.com_customjobs.yaml", dir+"/typo.yaml")
	assert.Equal(t, ExitProblems, r.code, r.stdout)
	assert.Contains(t, r.stdout, "INVALID")
	assert.Contains(t, r.stdout, `error: spec.structureDefinition.childComponents[1].scaleDefinition.replicasPath: .spec.workr: the CRD schema has no field "workr" under .spec, so this path never resolves; did you mean "worker"?`)
	assert.Contains(t, r.stdout, "0 valid, 1 invalid, 0 unreadable")
	// The example as shipped is valid against its CRD, with no note: its schema is closed.
	doc := validateJSON(t, ExitOK, "--crd", "../../../examples/crds/example.com_customjobs.yaml", "../../../examples/definitions/customjob-karta.yaml")
	assert.Empty(t, doc.Results[0].Warnings)
}
