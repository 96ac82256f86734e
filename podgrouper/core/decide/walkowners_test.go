package decide

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/podgrouper/core/hub"
	"github.com/gangmap/gangmap/podgrouper/core/native"
	"github.com/gangmap/gangmap/podgrouper/core/workloadmap"
)

// everyOwner is a SharedOwnerReader holding every object asked for, counting the asks.
type everyOwner struct{ asks int }

func (e *everyOwner) GetShared(_ context.Context, gvk schema.GroupVersionKind, key types.NamespacedName) (*unstructured.Unstructured, bool) {
	e.asks++
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	return u, true
}

// TestWalkOwnersOnlyKindsWhoseInformersRun: the walk's shared reader gives an owner only of a kind
// whose top owners the Decider has read through the cache (its informer runs) and that the hub
// still groups; it never asks the cache about any other kind (asking would start an informer).
func TestWalkOwnersOnlyKindsWhoseInformersRun(t *testing.T) {
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	reg := definitions.NewRegistry(c)
	require.NoError(t, catalog.Register(reg))
	table := native.DefaultTable()
	require.NoError(t, table.Remove("jobset.x-k8s.io/v1alpha2/JobSet"))
	shared := &everyOwner{}
	d := &Decider{SharedOwners: shared, Hub: &hub.Hub{Native: table, Registry: reg, Grouper: &workloadmap.Grouper{Registry: reg}}}
	w := d.WalkOwners()
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "ns", Name: "train"}
	jobSet := schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
	job := schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}

	_, ok := w.GetShared(ctx, jobSet, key)
	assert.False(t, ok, "no JobSet read through the cache yet")
	assert.False(t, w.Watches(jobSet))
	d.noteReadKind(jobSet)
	assert.True(t, w.Watches(jobSet))
	got, ok := w.GetShared(ctx, jobSet, key)
	require.True(t, ok)
	assert.Equal(t, "train", got.GetName())

	d.noteReadKind(job) // native to KAI: never gangmap's top owner, so never read; even if it were
	_, ok = w.GetShared(ctx, job, key)
	assert.False(t, ok, "a kind the hub does not group")
	assert.False(t, w.Watches(job))

	require.NoError(t, table.Add("jobset.x-k8s.io/v1alpha2/JobSet")) // KAI groups JobSets again
	_, ok = w.GetShared(ctx, jobSet, key)
	assert.False(t, ok, "a kind the hub no longer groups (its informer may be gone)")
	assert.False(t, w.Watches(jobSet))
	assert.Equal(t, 1, shared.asks, "the cache is asked only about the grouped kind already read")

	assert.False(t, (&Decider{Hub: d.Hub}).readKind(jobSet))
	_, ok = (&Decider{Hub: d.Hub}).WalkOwners().GetShared(ctx, jobSet, key)
	assert.False(t, ok, "no SharedOwners")
}
