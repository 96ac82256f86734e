//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// TestPodGroupDeletedOrChangedIsRestored: gangmap watches the PodGroups it writes. One deleted
// while its workload lives comes back, and one whose gang someone else changed is set back,
// with no pod or workload event; changes to fields KAI owns (queue, markUnschedulable) stay.
func TestPodGroupDeletedOrChangedIsRestored(t *testing.T) {
	ctx := context.Background()
	ns := "pgwatch"
	_, pgName, _ := runCustomJob(t, ctx, ns, "watched", 2)
	waitWorkerMinMember(t, ctx, ns, pgName, 2)

	// Someone else changes the gang and a field KAI owns.
	patch := []byte(`{"spec":{"minSubGroup":1,"markUnschedulable":true}}`)
	pg := &v2alpha2.PodGroup{}
	pg.Namespace, pg.Name = ns, pgName
	require.NoError(t, cp.Client.Patch(ctx, pg, client.RawPatch(types.MergePatchType, patch)))
	require.NoError(t, waitForPodGroupCond(ctx, func(pg *v2alpha2.PodGroup) bool { return ptr.Deref(pg.Spec.MinSubGroup, 0) == 2 }, ns, pgName))
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pgName}, pg))
	assert.Equal(t, ptr.To(true), pg.Spec.MarkUnschedulable, "a field KAI owns keeps the other writer's value")

	// Deleted while the workload lives: it comes back.
	uid := pg.UID
	require.NoError(t, cp.Client.Delete(ctx, pg))
	require.NoError(t, waitForPodGroupCond(ctx, func(pg *v2alpha2.PodGroup) bool { return pg.UID != uid }, ns, pgName))
	got := waitWorkerMinMember(t, ctx, ns, pgName, 2)
	assert.Equal(t, ptr.To[int32](2), got.Spec.MinSubGroup)
}

// waitForPodGroupCond waits until the PodGroup exists and cond holds on it.
func waitForPodGroupCond(ctx context.Context, cond func(*v2alpha2.PodGroup) bool, ns, name string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		pg := &v2alpha2.PodGroup{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg); err == nil && cond(pg) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("PodGroup %s/%s: condition not met in 10s", ns, name)
}
