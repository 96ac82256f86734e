package hub

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
