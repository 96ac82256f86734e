package hub

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/podgrouper/core/native"
	"github.com/gangmap/gangmap/podgrouper/core/workloadmap"
)

func TestGetPodGrouperPlugin(t *testing.T) {
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	reg := definitions.NewRegistry(c)
	require.NoError(t, catalog.Register(reg))
	table := native.DefaultTable()
	h := &Hub{Native: table, Registry: reg, Grouper: &workloadmap.Grouper{Registry: reg}}

	jobset := schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
	unknown := schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachine"}

	// Native wins: KAI v0.17 groups JobSet, so gangmap returns a literal nil interface. The
	// comparison is == nil on the interface on purpose: testify's Nil accepts a typed nil, which
	// is the KAI v0.17 Karta hub bug this guards against.
	assert.Equal(t, Native, h.Decide(jobset))
	assert.True(t, h.GetPodGrouperPlugin(jobset) == nil)
	// No definition: literal nil too.
	assert.Equal(t, NoDefinition, h.Decide(unknown))
	assert.True(t, h.GetPodGrouperPlugin(unknown) == nil)

	// On a KAI without the JobSet plugin, gangmap groups JobSets.
	require.NoError(t, table.Remove("jobset.x-k8s.io/v1alpha2/JobSet"))
	g := h.GetPodGrouperPlugin(jobset)
	require.True(t, g != nil)
	assert.Equal(t, workloadmap.Name, g.Name())
	assert.Equal(t, Grouped, h.Decide(jobset))
}

// vmKarta is a Workload Map definition named name for kubevirt's VirtualMachine (no native KAI
// plugin, no catalog definition): one pod per VM.
func vmKarta(t *testing.T, name string) *definitions.Loaded {
	t.Helper()
	doc := `apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: ` + name + `}
spec:
  structureDefinition:
    rootComponent:
      name: vm
      kind: {group: kubevirt.io, version: v1, kind: VirtualMachine}
      specDefinition: {podTemplateSpecPath: .spec.template}
      statusDefinition:
        conditionsDefinition: {path: .status.conditions}
        statusMappings:
          running: [{byConditions: [{type: Ready, status: "True"}]}]
`
	l, err := definitions.DecodeDocument([]byte(doc), "cluster:"+name, definitions.SourceCluster, definitions.DecodeOptions{Strict: true})
	require.NoError(t, err)
	return l
}

// TestUnusableDefinitionsKeepTheKind: two cluster Kartas for VirtualMachine conflict, so neither
// is used (definitions.Registry.Unusable); the kind stays gangmap's (Grouped), and its grouper
// fails naming the conflict (workloadmap.ErrDefinitionUnusable), so that its pods are held and
// reported instead of falling to KAI's default grouping one by one. Once one Karta is removed,
// the other is used; with none left the kind is NoDefinition again.
func TestUnusableDefinitionsKeepTheKind(t *testing.T) {
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	reg := definitions.NewRegistry(c)
	h := &Hub{Native: native.DefaultTable(), Registry: reg, Grouper: &workloadmap.Grouper{Registry: reg}}
	vm := schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachine"}

	reg.SetSource(definitions.SourceCluster, []*definitions.Loaded{vmKarta(t, "vm-a"), vmKarta(t, "vm-b")})
	assert.Equal(t, Grouped, h.Decide(vm))
	g := h.GetPodGrouperPlugin(vm)
	require.True(t, g != nil)
	owner := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
		"metadata": map[string]any{"name": "vm", "namespace": "team-a", "uid": "vm-uid", "resourceVersion": "1"}}}
	_, _, err = g.(*workloadmap.Grouper).Plan(context.Background(), owner)
	require.ErrorIs(t, err, workloadmap.ErrDefinitionUnusable)
	assert.Contains(t, err.Error(), `definition "vm-a" (cluster:vm-a) is not used (Conflict): 2 cluster definitions for VirtualMachine.kubevirt.io/v1`)

	reg.SetSource(definitions.SourceCluster, []*definitions.Loaded{vmKarta(t, "vm-b")})
	assert.Equal(t, Grouped, h.Decide(vm))
	require.NotNil(t, reg.Lookup(vm), "%v", reg.Problems())
	assert.Equal(t, "vm-b", reg.Lookup(vm).Loaded.Name())
	reg.SetSource(definitions.SourceCluster, nil)
	assert.Equal(t, NoDefinition, h.Decide(vm))
}
