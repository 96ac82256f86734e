package kaihub

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pluginshub "github.com/kai-scheduler/KAI-scheduler/pkg/podgrouper/podgrouper/hub"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/podgrouper/core/kaiplugin"
)

type source struct{ synced bool }

func (s *source) Synced() bool { return s.synced }

// TestGetPodGrouperPlugin: KAI's own plugin for a native kind (JobSet: the very grouper KAI's
// DefaultPluginsHub returns), gangmap's for a kind with a catalog definition and no plugin
// (LLMInferenceService), KAI's default grouper for a kind with neither (kubevirt VirtualMachine),
// and, before the definition sources synced, a grouper that fails with ErrDefinitionsLoading for
// every non-native kind. KAI's hub is built with its Karta fallback off, as the binary does.
func TestGetPodGrouperPlugin(t *testing.T) {
	kai := pluginshub.NewDefaultPluginsHub(nil, true, true, false, "kai.scheduler/queue", "kai.scheduler/node-pool", "", "")
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	reg := definitions.NewRegistry(c)
	require.NoError(t, catalog.Register(reg))
	src := &source{}
	h := New(kai, &kaiplugin.Hub{Native: kai, Registry: reg, Sources: []kaiplugin.SyncedSource{src}}, &kaiplugin.Grouper{})

	jobSet := metav1.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
	llmisvc := metav1.GroupVersionKind{Group: "serving.kserve.io", Version: "v1alpha2", Kind: "LLMInferenceService"}
	vm := metav1.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachine"}

	assert.Same(t, kai.GetPodGrouperPlugin(jobSet), h.GetPodGrouperPlugin(jobSet))
	w := h.GetPodGrouperPlugin(llmisvc)
	_, err = w.GetPodGroupMetadata(nil, nil)
	assert.ErrorIs(t, err, kaiplugin.ErrDefinitionsLoading)
	_, err = h.GetPodGrouperPlugin(vm).GetPodGroupMetadata(nil, nil)
	assert.ErrorIs(t, err, kaiplugin.ErrDefinitionsLoading)

	src.synced = true
	assert.Same(t, kai.GetPodGrouperPlugin(jobSet), h.GetPodGrouperPlugin(jobSet))
	assert.Same(t, h.Grouper, h.GetPodGrouperPlugin(llmisvc))
	assert.Equal(t, "gangmap", h.GetPodGrouperPlugin(llmisvc).Name())
	assert.Same(t, kai.GetDefaultPlugin(), h.GetPodGrouperPlugin(vm))
}

// TestShadowHubAnswersAsStockKAI: with kaiplugin.Shadow set, the hub gives every kind stock KAI's
// answer: KAI's plugin for a native kind, KAI's default grouper for a kind with neither plugin nor
// definition and for every non-native kind before the definitions synced (nothing is held), and
// for a kind gangmap would group a shadow grouper named as KAI's grouper whose metadata is KAI's
// default grouper's for the pod (pg-<owner name>-<owner uid>, minMember 1: KAI's defaultgrouper
// GetPodGroupMetadata).
func TestShadowHubAnswersAsStockKAI(t *testing.T) {
	kai := pluginshub.NewDefaultPluginsHub(nil, true, true, false, "kai.scheduler/queue", "kai.scheduler/node-pool", "", "")
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	reg := definitions.NewRegistry(c)
	require.NoError(t, catalog.Register(reg))
	src := &source{}
	h := New(kai, &kaiplugin.Hub{Native: kai, Registry: reg, Sources: []kaiplugin.SyncedSource{src}},
		&kaiplugin.Grouper{Shadow: &kaiplugin.Shadow{}})
	jobSet := metav1.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
	llmisvc := metav1.GroupVersionKind{Group: "serving.kserve.io", Version: "v1alpha2", Kind: "LLMInferenceService"}
	vm := metav1.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachine"}

	assert.Same(t, kai.GetDefaultPlugin(), h.GetPodGrouperPlugin(llmisvc), "waiting for definitions: stock KAI's answer, no hold")
	src.synced = true
	assert.Same(t, kai.GetPodGrouperPlugin(jobSet), h.GetPodGrouperPlugin(jobSet))
	assert.Same(t, kai.GetDefaultPlugin(), h.GetPodGrouperPlugin(vm))
	sg, ok := h.GetPodGrouperPlugin(llmisvc).(*shadowGrouper)
	require.True(t, ok, "a kind gangmap would group: the shadow grouper")
	assert.Equal(t, kai.GetDefaultPlugin().Name(), sg.Name())
	assert.Same(t, kai.GetDefaultPlugin(), sg.kai)
}
