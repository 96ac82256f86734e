package kaihub

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	pluginshub "github.com/kai-scheduler/KAI-scheduler/pkg/podgrouper/podgrouper/hub"
	"github.com/kai-scheduler/KAI-scheduler/pkg/podgrouper/podgrouper/plugins/grouper"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/podgrouper/core/kaiplugin"
)

type source struct{ synced bool }

// assertNative: got is KAI's own plugin want behind the unread-owner guard, under its name.
func assertNative(t *testing.T, want, got grouper.Grouper) {
	t.Helper()
	g, ok := got.(*ownerGuard)
	require.True(t, ok, "a native kind: KAI's plugin behind the owner guard")
	assert.Same(t, want, g.kai)
	assert.Equal(t, want.Name(), g.Name())
}

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

	assertNative(t, kai.GetPodGrouperPlugin(jobSet), h.GetPodGrouperPlugin(jobSet))
	w := h.GetPodGrouperPlugin(llmisvc)
	_, err = w.GetPodGroupMetadata(nil, nil)
	assert.ErrorIs(t, err, kaiplugin.ErrDefinitionsLoading)
	_, err = h.GetPodGrouperPlugin(vm).GetPodGroupMetadata(nil, nil)
	assert.ErrorIs(t, err, kaiplugin.ErrDefinitionsLoading)

	src.synced = true
	assertNative(t, kai.GetPodGrouperPlugin(jobSet), h.GetPodGrouperPlugin(jobSet))
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

// TestOwnerGuard: a pod KAI's owner walk returned as its own top owner because its owner, an
// LLMInferenceService (gangmap's kind), was Forbidden (podgrouper.go handleGetOwnerError) is
// refused with ErrOwnerUnreadable by the Pod kind's native plugin behind the guard, instead of
// getting KAI's one-pod PodGroup; a pod owned by a kind gangmap does not group is KAI's as before.
func TestOwnerGuard(t *testing.T) {
	kai := pluginshub.NewDefaultPluginsHub(nil, true, true, false, "kai.scheduler/queue", "kai.scheduler/node-pool", "", "")
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	reg := definitions.NewRegistry(c)
	require.NoError(t, catalog.Register(reg))
	h := New(kai, &kaiplugin.Hub{Native: kai, Registry: reg}, &kaiplugin.Grouper{})
	podKind := metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "llama-0", UID: "p1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "serving.kserve.io/v1alpha2", Kind: "LLMInferenceService", Name: "llama", UID: "u1"}}}}
	top, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	require.NoError(t, err)
	topOwner := &unstructured.Unstructured{Object: top}
	topOwner.SetAPIVersion("v1")
	topOwner.SetKind("Pod")
	_, err = h.GetPodGrouperPlugin(podKind).GetPodGroupMetadata(topOwner, pod)
	assert.ErrorIs(t, err, kaiplugin.ErrOwnerUnreadable)
}
