package bothgroupers_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/podgrouper/runtime/bothgroupers"
)

var customJob = schema.GroupVersionKind{Group: "e2e.example.com", Version: "v1", Kind: "CustomJob"}

func karta(name string, labels map[string]string, gang bool) *definitions.Loaded {
	k := &definitions.Karta{APIVersion: definitions.APIVersion, Kind: "Karta",
		Metadata: definitions.ObjectMeta{Name: name, UID: "uid-" + name, Labels: labels}}
	k.Spec.StructureDefinition.RootComponent.Name = "customjob"
	k.Spec.StructureDefinition.RootComponent.Kind = &definitions.GroupVersionKind{Group: customJob.Group, Version: customJob.Version, Kind: customJob.Kind}
	if gang {
		k.Spec.OptimizationInstructions.GangScheduling = &definitions.GangSchedulingInstruction{PodGroup: &definitions.PodGroupComponentsMapping{Name: "customjob"}}
	}
	return &definitions.Loaded{Karta: k, Source: definitions.SourceCluster, Origin: "karta/" + name}
}

var kaiLabels = map[string]string{"run.ai/karta-group": "e2e.example.com", "run.ai/karta-version": "v1", "run.ai/karta-kind": "CustomJob"}

// KAI's hub finds a Karta only by its three index labels naming the root kind exactly, and uses
// it only with gang scheduling instructions; gangmap reports it only for a kind it groups.
func TestFind(t *testing.T) {
	grouped := func(gvk schema.GroupVersionKind) bool { return gvk == customJob }
	wrongVersion := map[string]string{"run.ai/karta-group": "e2e.example.com", "run.ai/karta-version": "v2", "run.ai/karta-kind": "CustomJob"}
	operatorLabels := map[string]string{"karta.run.ai/group": "e2e.example.com", "karta.run.ai/version": "v1", "karta.run.ai/kind": "CustomJob"}
	got := bothgroupers.Find([]*definitions.Loaded{
		karta("seen", kaiLabels, true),
		karta("no-labels", nil, true),
		karta("operator-labels", operatorLabels, true),
		karta("wrong-version", wrongVersion, true),
		karta("no-gang", kaiLabels, false),
	}, grouped)
	require.Len(t, got, 1)
	assert.Equal(t, bothgroupers.Overlap{Karta: "seen", UID: "uid-seen", Origin: "karta/seen", Kind: customJob}, got[0])
	assert.Empty(t, bothgroupers.Find([]*definitions.Loaded{karta("seen", kaiLabels, true)}, func(schema.GroupVersionKind) bool { return false }),
		"a kind gangmap does not group (native in KAI) is KAI's alone")
}

// The Notifier says it once per Karta (one Event), and not at all on a KAI without the Karta
// fallback.
func TestNotifierOnce(t *testing.T) {
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	reg := definitions.NewRegistry(c)
	reg.SetSource(definitions.SourceCluster, []*definitions.Loaded{karta("seen", kaiLabels, true)})
	rec := record.NewFakeRecorder(10)
	n := &bothgroupers.Notifier{Registry: reg, Grouped: func(gvk schema.GroupVersionKind) bool { return gvk == customJob }, KAIHasKartaFallback: true, Recorder: rec}
	n.Check(context.Background())
	n.Check(context.Background())
	require.Len(t, rec.Events, 1)
	e := <-rec.Events
	assert.Contains(t, e, "Warning KAIGroupsKindToo KAI's pod-grouper (v0.17+ Karta fallback) can see this Karta")

	old := &bothgroupers.Notifier{Registry: reg, Grouped: func(schema.GroupVersionKind) bool { return true }, Recorder: rec}
	old.Check(context.Background())
	assert.Empty(t, rec.Events, "KAI before v0.17 has no Karta fallback")
}
