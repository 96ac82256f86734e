package crds_test

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/deploy/crds"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

const dnsLabelPattern = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`

func TestAllLoadsAndPassesAPIServerValidation(t *testing.T) {
	all, err := crds.All()
	require.NoError(t, err)

	var names []string
	for _, crd := range all {
		names = append(names, crd.Name)
		internal := toInternal(t, crd)
		internal.Status.StoredVersions = []string{crd.Spec.Versions[0].Name} // the API server sets it on create
		// The same validation the API server runs on a CRD create: structural schema, list
		// types, defaults, and compilation of every CEL rule.
		errs := apiextensionsvalidation.ValidateCustomResourceDefinition(context.Background(), internal)
		assert.Empty(t, errs, "%s does not pass the API server's CRD validation", crd.Name)
	}
	assert.Equal(t, []string{crds.KartaName, crds.PodGroupName}, names, "All returns every CRD, in file name order")

	entries, err := crds.Files.ReadDir(".")
	require.NoError(t, err)
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	assert.Equal(t, []string{crds.KartaFile, crds.PodGroupFile}, files, "Files embeds exactly the CRD manifests")
}

func TestPodGroupCRD(t *testing.T) {
	crd, err := crds.PodGroup()
	require.NoError(t, err)

	assert.Equal(t, crds.PodGroupName, crd.Name)
	assert.Equal(t, v2alpha2.Group, crd.Spec.Group)
	assert.Equal(t, apiextensionsv1.CustomResourceDefinitionNames{
		Kind: v2alpha2.Kind, ListKind: v2alpha2.ListKind, Plural: v2alpha2.Resource, Singular: "podgroup",
		ShortNames: []string{"pg"},
	}, crd.Spec.Names)
	assert.Equal(t, apiextensionsv1.NamespaceScoped, crd.Spec.Scope)
	require.Len(t, crd.Spec.Versions, 1)
	v := crd.Spec.Versions[0]
	assert.Equal(t, v2alpha2.Version, v.Name)
	assert.True(t, v.Served)
	assert.True(t, v.Storage)
	require.NotNil(t, v.Subresources)
	assert.NotNil(t, v.Subresources.Status, "status subresource")

	root := v.Schema.OpenAPIV3Schema
	spec := root.Properties["spec"]

	minMember := spec.Properties["minMember"]
	assert.Equal(t, "integer", minMember.Type)
	assert.Equal(t, "int32", minMember.Format)
	require.NotNil(t, minMember.Minimum)
	// KAI's podgroup_types.go (v0.17 line) marks the PodGroup-level counts Minimum=1; only the
	// subgroup counts allow 0.
	assert.Equal(t, 1.0, *minMember.Minimum)
	minSubGroup := spec.Properties["minSubGroup"]
	assert.Equal(t, "integer", minSubGroup.Type)
	require.NotNil(t, minSubGroup.Minimum)
	assert.Equal(t, 1.0, *minSubGroup.Minimum)
	assert.Empty(t, spec.Required, "every spec field is optional")

	assert.ElementsMatch(t, []apiextensionsv1.JSON{{Raw: []byte(`"preemptible"`)}, {Raw: []byte(`"non-preemptible"`)}},
		spec.Properties["preemptibility"].Enum)
	assert.Equal(t, "object", spec.Properties["topologyConstraint"].Type)
	assert.Equal(t, "string", spec.Properties["preemptionDelay"].Type, "metav1.Duration is a string")
	assert.Equal(t, "string", spec.Properties["stalenessGracePeriod"].Type)

	subGroups := spec.Properties["subGroups"]
	assert.Equal(t, "array", subGroups.Type)
	item := subGroups.Items.Schema
	assert.Equal(t, []string{"name"}, item.Required)
	name := item.Properties["name"]
	assert.Equal(t, dnsLabelPattern, name.Pattern)
	require.NotNil(t, name.MinLength)
	assert.EqualValues(t, 1, *name.MinLength)
	assert.Equal(t, dnsLabelPattern, item.Properties["parent"].Pattern)
	for _, f := range []string{"minMember", "minSubGroup"} {
		p := item.Properties[f]
		require.NotNil(t, p.Minimum, f)
		assert.Equal(t, 0.0, *p.Minimum, "subGroups[].%s", f)
	}
	assert.Equal(t, "object", item.Properties["topologyConstraint"].Type)

	// The CRD is generated from the Go types: every json field of the types is in the schema and
	// the schema has nothing else (run hack/generate.sh after changing the types).
	assert.ElementsMatch(t, jsonFields(reflect.TypeOf(v2alpha2.PodGroupSpec{})), keys(spec.Properties), "spec")
	assert.ElementsMatch(t, jsonFields(reflect.TypeOf(v2alpha2.SubGroup{})), keys(item.Properties), "spec.subGroups[]")
	assert.ElementsMatch(t, jsonFields(reflect.TypeOf(v2alpha2.TopologyConstraint{})),
		keys(spec.Properties["topologyConstraint"].Properties), "spec.topologyConstraint")
	status := root.Properties["status"]
	assert.ElementsMatch(t, []string{"conditions", "schedulingConditions", "resourcesStatus"}, keys(status.Properties))
	assert.ElementsMatch(t, jsonFields(reflect.TypeOf(v2alpha2.PodGroupStatus{})), keys(status.Properties), "status")
	assert.ElementsMatch(t, []string{"allocated", "allocatedNonPreemptible", "requested"},
		keys(status.Properties["resourcesStatus"].Properties))
}

func TestPodGroupSchemaRejectsWhatKAIRejects(t *testing.T) {
	crd, err := crds.PodGroup()
	require.NoError(t, err)
	s := structural(t, crd)

	tests := map[string]struct {
		spec    string
		wantErr string
	}{
		"minMember only":                {spec: `{minMember: 3, queue: q}`},
		"minSubGroup with subgroups":    {spec: `{minSubGroup: 2, subGroups: [{name: a, minMember: 1}, {name: b, minMember: 0}]}`},
		"nested subgroups":              {spec: `{minSubGroup: 1, subGroups: [{name: p, minSubGroup: 1}, {name: c, parent: p, minMember: 2}]}`},
		"durations":                     {spec: `{minMember: 1, preemptionDelay: 30s, stalenessGracePeriod: "-1s"}`},
		"subgroup name not a DNS label": {spec: `{subGroups: [{name: Worker, minMember: 1}]}`, wantErr: "spec.subGroups[0].name"},
		"empty subgroup name":           {spec: `{subGroups: [{name: "", minMember: 1}]}`, wantErr: "spec.subGroups[0].name"},
		"parent not a DNS label":        {spec: `{subGroups: [{name: a, parent: "A_1", minMember: 1}]}`, wantErr: "spec.subGroups[0].parent"},
		"minMember 0 at the top":        {spec: `{minMember: 0}`, wantErr: "spec.minMember"},
		"negative subgroup minMember":   {spec: `{subGroups: [{name: a, minMember: -1}]}`, wantErr: "spec.subGroups[0].minMember"},
		"unknown preemptibility":        {spec: `{preemptibility: sometimes}`, wantErr: "spec.preemptibility"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := object(t, "apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata: {name: pg, namespace: ns}\nspec: "+tc.spec)
			errs := validate(t, crd, s, obj)
			if tc.wantErr == "" {
				assert.Empty(t, errs)
				return
			}
			require.NotEmpty(t, errs)
			assert.Contains(t, errs.ToAggregate().Error(), tc.wantErr)
		})
	}
}

func TestKartaCRD(t *testing.T) {
	crd, err := crds.Karta()
	require.NoError(t, err)

	assert.Equal(t, crds.KartaName, crd.Name)
	assert.Equal(t, "run.ai", crd.Spec.Group)
	assert.Equal(t, apiextensionsv1.CustomResourceDefinitionNames{
		Kind: "Karta", ListKind: "KartaList", Plural: "kartas", Singular: "karta", ShortNames: []string{"krt"},
	}, crd.Spec.Names)
	assert.Equal(t, apiextensionsv1.ClusterScoped, crd.Spec.Scope)
	require.Len(t, crd.Spec.Versions, 1)
	v := crd.Spec.Versions[0]
	assert.Equal(t, "v1alpha1", v.Name)
	assert.True(t, v.Served)
	assert.True(t, v.Storage)
	require.NotNil(t, v.Subresources)
	assert.NotNil(t, v.Subresources.Status)
	assert.Equal(t, []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Framework", Type: "string", Description: "Target framework kind", JSONPath: ".spec.structureDefinition.rootComponent.kind.kind"},
		{Name: "Root Component", Type: "string", Description: "Root component name", JSONPath: ".spec.structureDefinition.rootComponent.name"},
		{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	}, v.AdditionalPrinterColumns)

	// Structural, as the API server requires for pruning.
	s := structural(t, crd)
	assert.Empty(t, structuralschema.ValidateStructural(field.NewPath("openAPIV3Schema"), s))

	root := v.Schema.OpenAPIV3Schema
	spec := root.Properties["spec"]
	assert.Equal(t, []string{"structureDefinition"}, spec.Required)
	sd := spec.Properties["structureDefinition"]
	assert.Equal(t, []string{"rootComponent"}, sd.Required)
	rootComponent := sd.Properties["rootComponent"]
	child := sd.Properties["childComponents"].Items.Schema
	assert.Equal(t, []string{"name"}, rootComponent.Required)
	assert.Equal(t, rootComponent.Properties, child.Properties, "root and child components share one schema")
	assert.ElementsMatch(t, []string{"name", "kind", "ownerRef", "specDefinition", "scaleDefinition",
		"statusDefinition", "suspendDefinition", "instanceIdPath", "podSelector"}, keys(rootComponent.Properties))
	mappings := rootComponent.Properties["statusDefinition"].Properties["statusMappings"]
	assert.ElementsMatch(t, []string{"initializing", "running", "completed", "failed", "degraded",
		"suspended", "suspending", "resuming"}, keys(mappings.Properties))
	gang := spec.Properties["optimizationInstructions"].Properties["gangScheduling"]
	assert.ElementsMatch(t, []string{"podGroups", "podGroup"}, keys(gang.Properties))

	// No x-kubernetes-preserve-unknown-fields anywhere: like upstream, the CRD prunes unknown
	// fields. Every path field is a string (a jq expression), never an object.
	walk(root, "", func(path string, p *apiextensionsv1.JSONSchemaProps) {
		assert.False(t, p.XPreserveUnknownFields != nil && *p.XPreserveUnknownFields,
			"%s: x-kubernetes-preserve-unknown-fields", path)
		assert.False(t, p.XEmbeddedResource, "%s: x-kubernetes-embedded-resource", path)
		assert.False(t, p.AdditionalProperties != nil && p.AdditionalProperties.Schema == nil && p.AdditionalProperties.Allows,
			"%s: additionalProperties: true", path)
		last := path[strings.LastIndex(path, ".")+1:]
		if strings.HasSuffix(last, "Path") {
			assert.Equal(t, "string", p.Type, "%s is a jq path", path)
		}
		if strings.HasSuffix(last, "Paths[]") || last == "filters[]" {
			assert.Equal(t, "string", p.Type, "%s is a jq path", path)
		}
	})
}

// kartaCustomJob is a definition in the upstream format (the KAI Karta e2e shape, plus every
// other part of the format) with gangmap additions and forward-shape fields upstream lacks.
const kartaCustomJob = `
apiVersion: run.ai/v1alpha1
kind: Karta
metadata:
  name: e2e-example-com-v1-customjob
  labels: {run.ai/karta-group: e2e.example.com, run.ai/karta-version: v1, run.ai/karta-kind: CustomJob}
spec:
  structureDefinition:
    rootComponent:
      name: customjob
      kind: {group: e2e.example.com, version: v1, kind: CustomJob}
      statusDefinition:
        phaseDefinition: {path: .status.phase}
        conditionsDefinition: {path: .status.conditions}
        statusMappings:
          running:
          - byPhase: Running
          - byConditions: [{type: Ready, status: "True"}]
          failed:
          - byExpression: {expression: '(.status.failed // 0) > 0', expectedResult: "true"}
          suspended: []
      suspendDefinition:
        suspendActions: [{path: .spec.suspend, value: "true"}]
        resumeActions: [{path: .spec.suspend, value: "false"}]
    childComponents:
    - name: coordinator
      ownerRef: customjob
      specDefinition: {podTemplateSpecPath: .spec.coordinator.template}
      scaleDefinition: {replicasPath: .spec.coordinator.replicas}
      podSelector:
        componentTypeSelector: {keyPath: '.metadata.labels["e2e.example.com/role"]', value: coordinator}
    - name: worker
      ownerRef: customjob
      kind: {group: "", version: v1, kind: Pod}
      specDefinition:
        fragmentedPodSpecDefinition: {containersPath: .spec.worker.containers, resourcesPath: .spec.worker.resources}
      scaleDefinition: {replicasPath: .spec.worker.replicas, minReplicasPath: .spec.worker.min, maxReplicasPath: .spec.worker.max}
      instanceIdPath: .spec.worker.groups[].name
      podSelector:
        componentTypeSelector: {matchLabels: {e2e.example.com/role: worker}}
        componentInstanceSelector: {idPath: '.metadata.labels["group"]'}
        replicaSelector: {keyPath: '.metadata.labels["index"]'}
    additionalChildKinds:
    - {group: "", version: v1, kind: Service}
  optimizationInstructions:
    gangScheduling:
      podGroup:
        name: customjob
        subGroups:
        - componentName: coordinator
        - componentName: worker
          topology: {topologyName: t, preferredTopologyLevel: rack, requiredTopologyLevel: zone}
      podGroups:
      - name: all
        members:
        - componentName: worker
          groupByKeyPaths: ['.metadata.labels["group"]']
          filters: ['(.spec.containers[0].resources.limits["nvidia.com/gpu"] // 0) > 0']
  variables:
  - {name: x, expression: object.spec}
  gangmap:
    gang: {perReplicaOf: worker}
`

func TestKartaPrunesUnknownFields(t *testing.T) {
	crd, err := crds.Karta()
	require.NoError(t, err)
	s := structural(t, crd)

	obj := object(t, kartaCustomJob)
	require.Empty(t, validate(t, crd, s, obj), "a definition in the upstream format is valid")

	pruned := runtime.DeepCopyJSON(obj)
	dropped := pruning.PruneWithOptions(pruned, s, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	// gangmap's additions and the forward-shape fields do not survive the upstream CRD...
	assert.Equal(t, []string{"spec.gangmap", "spec.variables"}, dropped)
	// ...and everything in the upstream format does.
	want := runtime.DeepCopyJSON(obj)
	spec := want["spec"].(map[string]interface{})
	delete(spec, "gangmap")
	delete(spec, "variables")
	assert.Equal(t, want, pruned)

	// The defaults of conditionsDefinition field names apply on write, as upstream.
	structuraldefaulting.Default(pruned, s)
	cd := pruned["spec"].(map[string]interface{})["structureDefinition"].(map[string]interface{})["rootComponent"].(map[string]interface{})["statusDefinition"].(map[string]interface{})["conditionsDefinition"].(map[string]interface{})
	assert.Equal(t, map[string]interface{}{"path": ".status.conditions", "typeFieldName": "type",
		"statusFieldName": "status", "messageFieldName": "message", "reasonFieldName": "reason"}, cd)
}

func TestKartaSchemaRejectsWhatUpstreamRejects(t *testing.T) {
	crd, err := crds.Karta()
	require.NoError(t, err)
	s := structural(t, crd)

	tests := map[string]struct {
		spec    string
		wantErr string
	}{
		"minimal": {spec: `{structureDefinition: {rootComponent: {name: r}}}`},
		"no structureDefinition": {spec: `{optimizationInstructions: {}}`,
			wantErr: "spec.structureDefinition: Required value"},
		"no root name": {spec: `{structureDefinition: {rootComponent: {ownerRef: x}}}`,
			wantErr: "spec.structureDefinition.rootComponent.name: Required value"},
		"CEL accessor where a jq path is expected": {
			spec:    `{structureDefinition: {rootComponent: {name: r, instanceIdPath: {expression: "object.spec"}}}}`,
			wantErr: "spec.structureDefinition.rootComponent.instanceIdPath in body must be of type string"},
		"type selector with value and no keyPath": {
			spec:    `{structureDefinition: {rootComponent: {name: r, podSelector: {componentTypeSelector: {value: x, matchLabels: {a: b}}}}}}`,
			wantErr: "value requires keyPath"},
		"empty type selector": {
			spec:    `{structureDefinition: {rootComponent: {name: r, podSelector: {componentTypeSelector: {}}}}}`,
			wantErr: "at least one of keyPath or matchLabels must be set"},
		"topology needs all three fields": {
			spec:    `{structureDefinition: {rootComponent: {name: r}}, optimizationInstructions: {gangScheduling: {podGroup: {name: g, topology: {topologyName: t, requiredTopologyLevel: zone}}}}}`,
			wantErr: "spec.optimizationInstructions.gangScheduling.podGroup.topology.preferredTopologyLevel: Required value"},
		"duplicate child names": {
			spec:    `{structureDefinition: {rootComponent: {name: r}, childComponents: [{name: a}, {name: a}]}}`,
			wantErr: "spec.structureDefinition.childComponents[1]: Duplicate value"},
		"empty suspend actions": {
			spec:    `{structureDefinition: {rootComponent: {name: r, suspendDefinition: {suspendActions: [], resumeActions: [{path: .a, value: "1"}]}}}}`,
			wantErr: "spec.structureDefinition.rootComponent.suspendDefinition.suspendActions"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := object(t, "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: k}\nspec: "+tc.spec)
			errs := validate(t, crd, s, obj)
			if tc.wantErr == "" {
				assert.Empty(t, errs)
				return
			}
			require.NotEmpty(t, errs)
			assert.Contains(t, errs.ToAggregate().Error(), tc.wantErr)
		})
	}
}

func toInternal(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *apiextensions.CustomResourceDefinition {
	t.Helper()
	internal := &apiextensions.CustomResourceDefinition{}
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil))
	return internal
}

func structural(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *structuralschema.Structural {
	t.Helper()
	s, err := structuralschema.NewStructural(internalSchema(t, crd))
	require.NoError(t, err)
	return s
}

// internalSchema returns the internal form of the CRD's only schema. The conversion to the
// internal API hoists a schema shared by all versions to spec.validation.
func internalSchema(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *apiextensions.JSONSchemaProps {
	t.Helper()
	internal := toInternal(t, crd)
	if internal.Spec.Validation != nil {
		return internal.Spec.Validation.OpenAPIV3Schema
	}
	require.Len(t, internal.Spec.Versions, 1)
	require.NotNil(t, internal.Spec.Versions[0].Schema)
	return internal.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// validate runs the API server's OpenAPI, list-type and CEL validation of a custom resource against the
// CRD's only version.
func validate(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, s *structuralschema.Structural, obj map[string]interface{}) field.ErrorList {
	t.Helper()
	validator, _, err := apiservervalidation.NewSchemaValidator(internalSchema(t, crd))
	require.NoError(t, err)
	errs := apiservervalidation.ValidateCustomResource(nil, obj, validator)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s, obj)...)
	celErrs, _ := cel.NewValidator(s, true, celconfig.PerCallLimit).
		Validate(context.Background(), nil, s, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

func object(t *testing.T, doc string) map[string]interface{} {
	t.Helper()
	obj := map[string]interface{}{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
	return obj
}

func walk(p *apiextensionsv1.JSONSchemaProps, path string, fn func(string, *apiextensionsv1.JSONSchemaProps)) {
	if p == nil {
		return
	}
	fn(path, p)
	for name, child := range p.Properties {
		walk(&child, path+"."+name, fn)
	}
	if p.Items != nil {
		walk(p.Items.Schema, path+"[]", fn)
		for i := range p.Items.JSONSchemas {
			walk(&p.Items.JSONSchemas[i], path+"[]", fn)
		}
	}
	if p.AdditionalProperties != nil {
		walk(p.AdditionalProperties.Schema, path+"{}", fn)
	}
	for _, group := range [][]apiextensionsv1.JSONSchemaProps{p.AllOf, p.AnyOf, p.OneOf} {
		for i := range group {
			walk(&group[i], path, fn)
		}
	}
}

func keys(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// jsonFields lists the json names of a struct's fields.
func jsonFields(typ reflect.Type) []string {
	var out []string
	for i := 0; i < typ.NumField(); i++ {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}
