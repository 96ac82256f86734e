package definitions_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gangmap/gangmap/definitions"
)

// customJob with a coordinator component that has replicas but no specDefinition, named in the
// gang's sub-groups next to the worker.
const namedCoordinator = customJob + `      - name: coordinator
        ownerRef: customjob
        scaleDefinition: {replicasPath: .spec.coordinator.replicas}
  optimizationInstructions:
    gangScheduling:
      podGroup:
        name: customjob
        subGroups:
          - componentName: coordinator
          - componentName: worker
`

func compileDoc(t *testing.T, doc string) *definitions.Compiled {
	t.Helper()
	l, err := decodeOne(t, doc, true)
	require.NoError(t, err)
	c, err := definitions.Compile(l, compiler(t))
	require.NoError(t, err)
	return c
}

func unlabelledPod() map[string]any {
	return map[string]any{"metadata": map[string]any{"name": "p", "labels": map[string]any{"app": "x"}}}
}

// The only pod-bearing component, with no podSelector and no other component named by the gang,
// receives every pod (upstream's rule), and validate says so.
func TestPlacementByElimination(t *testing.T) {
	c := compileDoc(t, customJob)
	assert.True(t, c.ByElimination)
	pl, err := c.PlacePod(context.Background(), unlabelledPod())
	require.NoError(t, err)
	assert.Equal(t, "worker", pl.Component.Name)
	path, msg := c.PlacementNotice()
	assert.Empty(t, path+msg, "the holder and its parent only: nothing to say")

	// A sibling without specDefinition that the gang does not name: still by elimination, said.
	c = compileDoc(t, customJob+`      - name: coordinator
        ownerRef: customjob
        scaleDefinition: {replicasPath: .spec.coordinator.replicas}
`)
	assert.True(t, c.ByElimination)
	pl, err = c.PlacePod(context.Background(), unlabelledPod())
	require.NoError(t, err)
	assert.Equal(t, "worker", pl.Component.Name)
	path, msg = c.PlacementNotice()
	assert.Equal(t, "spec.structureDefinition.childComponents[0].podSelector", path)
	assert.Contains(t, msg, `component "worker" is the only one with a specDefinition and has no podSelector: it receives every pod of the workload, even unlabelled ones (placement by elimination), while component(s) coordinator have no specDefinition`)
}

// When the gang's sub-groups name another component (coordinator, no specDefinition), a pod is
// never placed by elimination: no selector claims it, so it is unclaimed (ErrNoComponent).
func TestNoPlacementByEliminationWhenOthersNamed(t *testing.T) {
	c := compileDoc(t, namedCoordinator)
	assert.False(t, c.ByElimination)
	_, err := c.PlacePod(context.Background(), unlabelledPod())
	assert.True(t, errors.Is(err, definitions.ErrNoComponent), "got %v", err)
	path, msg := c.PlacementNotice()
	assert.Equal(t, "spec.structureDefinition.childComponents[0].podSelector", path)
	assert.Contains(t, msg, "while the gang names coordinator: gangmap never places a pod by elimination")
}

// specDefinition: {} names no pod template: an error (it used to pass validate --strict and
// count the role as 0 pods).
func TestEmptySpecDefinitionIsInvalid(t *testing.T) {
	doc := customJob[:len(customJob)-len("        specDefinition: {podTemplateSpecPath: .spec.worker.template}\n        scaleDefinition: {replicasPath: .spec.worker.replicas}\n")] +
		"        specDefinition: {}\n        scaleDefinition: {replicasPath: .spec.worker.replicas}\n"
	l, err := decodeOne(t, doc, true)
	require.NoError(t, err)
	_, err = definitions.Compile(l, compiler(t))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.structureDefinition.childComponents[0].specDefinition: Required value: an empty specDefinition gives the role no pod template")
}
