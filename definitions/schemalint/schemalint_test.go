package schemalint

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions"
)

func loadCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	b, err := os.ReadFile("testdata/jobset-crd.yaml")
	require.NoError(t, err)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.Unmarshal(b, crd))
	return crd
}

func loadDefinition(t *testing.T, replace ...string) *definitions.Karta {
	b, err := os.ReadFile("../catalog/jobset-x-k8s-io-jobset-v1alpha2.yaml")
	require.NoError(t, err)
	s := string(b)
	for i := 0; i+1 < len(replace); i += 2 {
		require.Contains(t, s, replace[i])
		s = strings.ReplaceAll(s, replace[i], replace[i+1])
	}
	ls, err := definitions.Decode(strings.NewReader(s), "jobset.yaml", definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	require.NoError(t, err)
	return ls[0].Karta
}

// findingsOnly drops the unchecked-subtree notes.
func findingsOnly(fs []Finding) []Finding {
	var out []Finding
	for _, f := range fs {
		if !f.Unchecked {
			out = append(out, f)
		}
	}
	return out
}

// The catalog JobSet definition reads only fields the JobSet schema has. The schema leaves the
// items of status.conditions open (x-kubernetes-preserve-unknown-fields), which the status
// matchers read: one note says so.
func TestCatalogJobSetIsClean(t *testing.T) {
	findings, err := Lint(loadDefinition(t), loadCRD(t))
	require.NoError(t, err)
	require.Len(t, findings, 1)
	assert.True(t, findings[0].Unchecked)
	assert.Equal(t, ".status.conditions[]", findings[0].Path)
	assert.Empty(t, findings[0].Field)
}

// A CRD whose spec is x-kubernetes-preserve-unknown-fields (as e2e's trimmed JobSet CRD) checks
// nothing under .spec: a misspelt path there is no finding, and a note says .spec was not checked.
func TestOpenSpecIsSaidUnchecked(t *testing.T) {
	crd := loadCRD(t)
	for i := range crd.Spec.Versions {
		open := true
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &open}
	}
	k := loadDefinition(t, "replicasPath: .spec.replicatedJobs[]? | (.replicas // 1)", "replicasPath: .spec.replicatedJob[]? | (.replica // 1)")
	findings, err := Lint(k, crd)
	require.NoError(t, err)
	var unchecked []string
	for _, f := range findings {
		require.True(t, f.Unchecked, "no finding under an open .spec: %+v", f)
		unchecked = append(unchecked, f.Path)
	}
	assert.Equal(t, []string{".spec", ".status.conditions[]"}, unchecked)
}

// The bracket form of a field name is checked like the dotted one.
func TestBracketIndexIsChecked(t *testing.T) {
	k := loadDefinition(t, "replicasPath: .spec.replicatedJobs[]? | (.replicas // 1)", `replicasPath: .spec["replicatedJob"][]? | (.replicas // 1)`)
	findings, err := Lint(k, loadCRD(t))
	require.NoError(t, err)
	findings = findingsOnly(findings)
	require.Len(t, findings, 1)
	assert.Equal(t, ".spec.replicatedJob", findings[0].Path)
	assert.Contains(t, findings[0].Message, `did you mean "replicatedJobs"`)
}

// A misspelt path is found, named by its definition field, with the likely intended name.
func TestMisspeltPath(t *testing.T) {
	k := loadDefinition(t, "replicasPath: .spec.replicatedJobs[]? | (.replicas // 1)", "replicasPath: .spec.replicatedJob[]? | (.replica // 1)")
	findings, err := Lint(k, loadCRD(t))
	require.NoError(t, err)
	findings = findingsOnly(findings)
	require.Len(t, findings, 1)
	assert.Equal(t, "spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath", findings[0].Field)
	assert.Equal(t, ".spec.replicatedJob", findings[0].Path)
	assert.Contains(t, findings[0].Message, `did you mean "replicatedJobs"`)

	k = loadDefinition(t, "(.parallelism // 1) as $p", "(.paralelism // 1) as $p")
	findings, err = Lint(k, loadCRD(t))
	require.NoError(t, err)
	findings = findingsOnly(findings)
	require.Len(t, findings, 1)
	assert.Equal(t, ".spec.replicatedJobs[].template.spec.paralelism", findings[0].Path)

	// The status rules read replicatedJobsStatus[].ready in three expressions: each is found.
	k = loadDefinition(t, "all(.[]; (.ready // 0) == 0)", "all(.[]; (.reddy // 0) == 0)")
	findings, err = Lint(k, loadCRD(t))
	require.NoError(t, err)
	findings = findingsOnly(findings)
	require.Len(t, findings, 3)
	for _, f := range findings {
		assert.Equal(t, ".status.replicatedJobsStatus[].reddy", f.Path)
		assert.Contains(t, f.Field, "statusDefinition.statusMappings.")
	}
}

func TestWrongCRD(t *testing.T) {
	crd := loadCRD(t)
	crd.Spec.Names.Kind = "Other"
	_, err := Lint(loadDefinition(t), crd)
	assert.ErrorContains(t, err, "is for jobset.x-k8s.io Other")
}

// TestAdditionalPropertiesIsNoWarning: a field the CRD types as a map (additionalProperties, with
// a value schema or `true`, beside declared properties or not) takes any key: a path through it is
// neither a finding nor an unchecked note (issue 31 point 10: validate --crd warned on one).
func TestAdditionalPropertiesIsNoWarning(t *testing.T) {
	obj := func(props map[string]apiextensionsv1.JSONSchemaProps, add *apiextensionsv1.JSONSchemaPropsOrBool) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props, AdditionalProperties: add}
	}
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = "customjobs.example.com"
	crd.Spec.Group = "example.com"
	crd.Spec.Names.Kind = "CustomJob"
	spec := obj(map[string]apiextensionsv1.JSONSchemaProps{
		// flinkConfiguration-like: a map of strings.
		"config": obj(nil, &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}),
		// declared fields and any others.
		"extra":  obj(map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer"}}, &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true}),
		"worker": obj(map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer"}}, nil),
	}, nil)
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Schema: &apiextensionsv1.CustomResourceValidation{
		OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}}}}}
	b, err := os.ReadFile("../../examples/definitions/customjob-karta.yaml")
	require.NoError(t, err)
	s := strings.Replace(string(b), "replicasPath: .spec.worker.replicas}",
		`replicasPath: '(.spec.config["taskmanager.slots"] | tonumber? // 1) * (.spec.extra.anyKey // 1) * (.spec.extra.replicas // 1) * .spec.worker.replicas'}`, 1)
	s = strings.Replace(s, "replicasPath: .spec.coordinator.replicas}", "replicasPath: .spec.worker.replicas}", 1)
	ls, err := definitions.Decode(strings.NewReader(s), "k.yaml", definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	require.NoError(t, err)
	fs, err := Lint(ls[0].Karta, crd)
	require.NoError(t, err)
	var paths []string
	for _, f := range fs {
		paths = append(paths, f.Path+": "+f.Message)
	}
	require.NotEmpty(t, paths, "the sparse schema lacks other fields: the lint ran")
	for _, p := range paths {
		assert.NotContains(t, p, ".spec.config", "a path through a map is neither a finding nor a note: %q", paths)
		assert.NotContains(t, p, ".spec.extra", "a path through a map is neither a finding nor a note: %q", paths)
	}
}
