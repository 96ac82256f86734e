package podgroup

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// TestApplyLeavesTheCachedPodGroupAlone reads the existing PodGroup as controller-runtime's
// cache reader does with client.UnsafeDisableDeepCopy (a shallow copy of the stored object: its
// maps and slices shared) and checks that Apply, on both the Unchanged and the Updated path,
// never writes to the stored object, and that it asks for the shared read.
func TestApplyLeavesTheCachedPodGroupAlone(t *testing.T) {
	ctx := context.Background()
	var stored *v2alpha2.PodGroup
	shared := 0
	a, c, _ := newApplier(t, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		var o client.GetOptions
		o.ApplyOptions(opts)
		pg, ok := obj.(*v2alpha2.PodGroup)
		if stored == nil || !ok || o.UnsafeDisableDeepCopy == nil || !*o.UnsafeDisableDeepCopy {
			return c.Get(ctx, key, obj, opts...)
		}
		shared++
		*pg = *stored // as cache_reader.go's Get without the deep copy
		return nil
	}})
	md := karta()
	res, err := a.Apply(ctx, md)
	require.NoError(t, err)
	require.Equal(t, Created, res)
	stored = getPodGroup(t, c, md)
	stored.Annotations["kai.scheduler/stale-podgroup-timestamp"] = "2026-11-30T00:00:00Z"
	before := stored.DeepCopy()

	res, err = a.Apply(ctx, karta())
	require.NoError(t, err)
	assert.Equal(t, Unchanged, res)

	md = karta()
	md.Labels["app"] = "job-2"
	md.Annotations["gangmap.io/gpus"] = "16"
	md.SubGroups[1].MinAvailable = 4
	res, err = a.Apply(ctx, md)
	require.NoError(t, err)
	assert.Equal(t, Updated, res)
	assert.Equal(t, before, stored, "Apply wrote to the cached PodGroup")
	assert.Equal(t, 2, shared)

	got := getPodGroup(t, c, md)
	assert.Equal(t, "job-2", got.Labels["app"])
	assert.Equal(t, "16", got.Annotations["gangmap.io/gpus"])
	assert.Equal(t, "2026-11-30T00:00:00Z", got.Annotations["kai.scheduler/stale-podgroup-timestamp"])
	assert.Equal(t, int32(4), *got.Spec.SubGroups[1].MinMember)
}
