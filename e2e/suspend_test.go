//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestSuspendAndResume: gangmap's documented suspend semantics (README, "Coexistence with KAI").
// Suspending a JobSet (the catalog definition's suspendDefinition sets spec.suspend) makes its
// operator delete the pods; gangmap takes no action: the PodGroup stays as it was, and on resume
// the operator's new pods join the same PodGroup and sub-groups.
func TestSuspendAndResume(t *testing.T) {
	ctx := context.Background()
	ns := "suspend"
	js, pods := runSeedJobSet(t, ctx, ns)
	pgName := fmt.Sprintf("pg-%s-jobset", js.GetUID())
	pg, err := cp.WaitForPodGroup(ctx, ns, pgName, timeout)
	require.NoError(t, err)
	for _, p := range pods {
		_, err := cp.WaitForPodAnnotation(ctx, ns, p.Name, kaikeys.PodGroupName, timeout)
		require.NoError(t, err)
	}
	spec := pg.Spec

	// Suspend: the JobSet operator deletes the pods.
	require.NoError(t, cp.Client.Patch(ctx, js, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))))
	for _, p := range pods {
		require.NoError(t, cp.Client.Delete(ctx, p, client.GracePeriodSeconds(0)))
	}
	time.Sleep(2 * time.Second)
	got := &v2alpha2.PodGroup{}
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pgName}, got))
	assert.Equal(t, spec, got.Spec, "the suspended workload's PodGroup stays as it was")

	// Resume: the operator creates new pods; they join the same PodGroup and sub-groups.
	require.NoError(t, cp.Client.Patch(ctx, js, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))))
	for _, old := range pods {
		p := &corev1.Pod{ObjectMeta: *old.ObjectMeta.DeepCopy(), Spec: *old.Spec.DeepCopy()}
		p.Name, p.ResourceVersion, p.UID, p.CreationTimestamp = old.Name+"-resumed", "", "", metav1.Time{}
		delete(p.Annotations, kaikeys.PodGroupName)
		delete(p.Annotations, kaikeys.SkipPodGrouper)
		delete(p.Labels, kaikeys.SubGroupName)
		p.Spec.NodeName = ""
		require.NoError(t, cp.Client.Create(ctx, p))
		resumed, err := cp.WaitForPodAnnotation(ctx, ns, p.Name, kaikeys.PodGroupName, timeout)
		require.NoError(t, err)
		assert.Equal(t, pgName, resumed.Annotations[kaikeys.PodGroupName])
		assert.Equal(t, old.Labels["jobset.sigs.k8s.io/replicatedjob-name"], resumed.Labels[kaikeys.SubGroupName])
	}
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pgName}, got))
	assert.Equal(t, ptr.To[int32](2), got.Spec.MinSubGroup)
}
