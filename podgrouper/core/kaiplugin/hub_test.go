package kaiplugin

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/internal/kaisamples"
	"github.com/gangmap/gangmap/podgrouper/core/native"
)

func catalogRegistry(t *testing.T) *definitions.Registry {
	t.Helper()
	reg, err := kaisamples.Registry()
	require.NoError(t, err)
	return reg
}

type fakeSource struct{ synced atomic.Bool }

func (f *fakeSource) Synced() bool { return f.synced.Load() }

var (
	jobSet      = metav1.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
	dynamo      = metav1.GroupVersionKind{Group: "nvidia.com", Version: "v1beta1", Kind: "DynamoGraphDeployment"}
	llmisvc     = metav1.GroupVersionKind{Group: "serving.kserve.io", Version: "v1alpha2", Kind: "LLMInferenceService"}
	kubevirtVM  = metav1.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachine"}
	deployments = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
)

// TestChoose: native wins over a definition (JobSet has both: KAI v0.17's jobset plugin; the
// wildcard entry nvidia.com/*/DynamoGraphDeployment matches v1beta1, hub.go getRegularPlugin);
// a kind with a catalog definition and no plugin (LLMInferenceService) is gangmap's; a kind with
// neither (kubevirt VirtualMachine: not in KAI's table, hub.go) gets KAI's default grouper.
// Until every definition source synced, no kind but a native one is decided: Waiting.
func TestChoose(t *testing.T) {
	src := &fakeSource{}
	h := &Hub{Native: TableNatives{Table: native.DefaultTable()}, Registry: catalogRegistry(t), Sources: []SyncedSource{src}}

	assert.Equal(t, Native, h.Choose(jobSet))
	assert.Equal(t, Native, h.Choose(dynamo))
	assert.Equal(t, Native, h.Choose(deployments))
	assert.Equal(t, Waiting, h.Choose(llmisvc), "a Karta for it may not be loaded yet")
	assert.Equal(t, Waiting, h.Choose(kubevirtVM), "a Karta may yet define it")
	assert.False(t, h.Ready())

	src.synced.Store(true)
	assert.Equal(t, Native, h.Choose(jobSet))
	assert.Equal(t, Gangmap, h.Choose(llmisvc))
	assert.Equal(t, Default, h.Choose(kubevirtVM))
	assert.True(t, h.Ready())
	src.synced.Store(false)
	assert.True(t, h.Ready(), "ready once, ready for good (a source never un-syncs; the latch saves the checks)")

	// Without KAI's JobSet plugin (a KAI built without it), gangmap's JobSet definition applies.
	table := native.DefaultTable()
	require.NoError(t, table.Remove("jobset.x-k8s.io/v1alpha2/JobSet"))
	h = &Hub{Native: TableNatives{Table: table}, Registry: h.Registry}
	assert.Equal(t, Gangmap, h.Choose(jobSet))
	// No registry, no table: KAI's default for everything.
	assert.Equal(t, Default, (&Hub{}).Choose(jobSet))
}

// TestUnreadOwner: a top owner with an owner reference is where KAI's owner walk stopped because
// the next owner was Forbidden (podgrouper.go handleGetOwnerError: the last owner read, or the pod
// itself); the pod is refused when that owner's kind is gangmap's (LLMInferenceService, a catalog
// kind without a native plugin; and any non-native kind while the definitions load), and left to
// KAI when it is a native kind (Deployment) or a kind without a definition (VirtualMachine), or
// when the top owner has no owner (a true top owner).
func TestUnreadOwner(t *testing.T) {
	src := &fakeSource{}
	h := &Hub{Native: TableNatives{Table: native.DefaultTable()}, Registry: catalogRegistry(t), Sources: []SyncedSource{src}}
	owned := func(kind, ownerAPIVersion, ownerKind string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind(kind)
		u.SetNamespace("team-a")
		u.SetName("llama-0")
		if ownerKind != "" {
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: ownerAPIVersion, Kind: ownerKind, Name: "llama", UID: "u1"}})
		}
		return u
	}
	pod := owned("Pod", "serving.kserve.io/v1alpha2", "LLMInferenceService")
	err := h.UnreadOwner(pod)
	require.ErrorIs(t, err, ErrOwnerUnreadable, "while loading")
	src.synced.Store(true)
	err = h.UnreadOwner(pod)
	require.ErrorIs(t, err, ErrOwnerUnreadable)
	assert.Equal(t, "gangmap: the pod-grouper may not read the pod's owner: Pod team-a llama-0 is owned by LLMInferenceService llama, a kind gangmap groups, which KAI's pod-grouper may not get (Forbidden); grouped by Pod alone it would be admitted outside its gang: grant the pod-grouper's ServiceAccount get, list and watch on LLMInferenceService.serving.kserve.io (deploy/kai-podgrouper/rbac.yaml)", err.Error())
	assert.NoError(t, h.UnreadOwner(owned("Pod", "apps/v1", "Deployment")), "a native owner: stock KAI")
	assert.NoError(t, h.UnreadOwner(owned("Pod", "kubevirt.io/v1", "VirtualMachine")), "no definition: stock KAI")
	assert.NoError(t, h.UnreadOwner(owned("Pod", "", "")), "a true top owner")
}

// TestChooseUnusableDefinition: when the only definition of a kind is refused (here the catalog's
// LLMInferenceService, refused as crdlint refuses a path its CRD cannot resolve), the kind stays
// gangmap's (definitions.Registry.Unusable): gangmap's grouper fails the pod naming the problem
// and KAI's reconciler retries, so the pod waits ungrouped instead of getting KAI's default
// PodGroup of one pod. Without a definition at all the kind gets KAI's default.
func TestChooseUnusableDefinition(t *testing.T) {
	reg := catalogRegistry(t)
	h := &Hub{Native: TableNatives{Table: native.DefaultTable()}, Registry: reg}
	c := reg.Lookup(schema.GroupVersionKind(llmisvc))
	require.NotNil(t, c)
	require.True(t, reg.Refuse(map[string]string{definitions.RefusalKey(c.Loaded): "spec.template: the CRD schema has no field"}))
	require.Nil(t, reg.Lookup(schema.GroupVersionKind(llmisvc)))
	assert.Equal(t, Gangmap, h.Choose(llmisvc))
	assert.Equal(t, Default, h.Choose(kubevirtVM))
}

// TableNatives is gangmap's native table (podgrouper/core/native, KAI's hub table per release) as
// NativePlugins: what the standalone grouper believes KAI groups natively (inside KAI the real
// table, DefaultPluginsHub, is used).
type TableNatives struct{ Table *native.Table }

// HasMatchingPlugin implements NativePlugins.
func (t TableNatives) HasMatchingPlugin(gvk metav1.GroupVersionKind) bool {
	return t.Table.Has(schema.GroupVersionKind(gvk))
}
