//go:build e2e

package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestAPIServerRestartUnderGrouper: kube-apiserver and etcd are stopped for a few seconds and
// started again (same data, certificates and ports) under a running grouper process. The grouper
// is not restarted: its watches reconnect, and a workload and pods created after the restart are
// grouped, as is a pod added to a workload grouped before it.
func TestAPIServerRestartUnderGrouper(t *testing.T) {
	ctx := context.Background()
	ns := "apiserver-restart"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	g := startGrouper(t, ctx)
	pid := g.PID()
	waitDefinitions(t, ctx, g, func(n float64) bool { return n >= 1 })

	before := customJob(t, ctx, ns, "before", 2, "", "")
	_, err := cp.RunRoles(ctx, before, 4, "coordinator", "worker")
	require.NoError(t, err)
	waitAllGrouped(t, ctx, ns, 3, timeout)

	stopped := time.Now()
	require.NoError(t, cp.RestartAPIServer(3*time.Second))
	t.Logf("kube-apiserver and etcd down and up again in %v", time.Since(stopped).Round(10*time.Millisecond))
	assert.True(t, g.Running(), "the grouper kept running through the restart")
	assert.Equal(t, pid, g.PID(), "the grouper was not restarted")

	// The next test's grouper starts on the same cluster: leave it none of this test's pods to count.
	t.Cleanup(func() {
		_ = cp.Client.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns))
	})
	back := time.Now()
	after := customJob(t, ctx, ns, "after", 3, "", "")
	_, err = cp.RunRoles(ctx, after, 4, "coordinator", "worker")
	require.NoError(t, err)
	// One more worker of the workload grouped before the restart (scaled 2 -> 3).
	// A merge patch: gangmap itself patches the workload (KAI's skip annotation), so an Update of
	// a stale copy would conflict.
	require.NoError(t, cp.Client.Patch(ctx, before, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"worker":{"replicas":3}}}`))))
	_, err = cp.CreatePodFor(ctx, before, "worker", 2)
	require.NoError(t, err)
	waitAllGrouped(t, ctx, ns, 3+4+1, 2*time.Minute)
	t.Logf("pods created after the restart grouped %v after the API server was back", time.Since(back).Round(10*time.Millisecond))
	assert.True(t, g.Running(), "the grouper is still the same process")
	assert.Equal(t, pid, g.PID())

	for _, w := range []struct {
		uid     string
		workers int32
	}{{string(before.GetUID()), 3}, {string(after.GetUID()), 3}} {
		pg := &v2alpha2.PodGroup{}
		name := fmt.Sprintf("pg-%s-customjob", w.uid)
		require.NoError(t, waitPodGroup(ctx, ns, name, pg, func(pg *v2alpha2.PodGroup) bool {
			return len(pg.Spec.SubGroups) == 2 && *pg.Spec.SubGroups[1].MinMember == w.workers
		}), name)
		assert.Equal(t, ptr.To[int32](2), pg.Spec.MinSubGroup)
		assert.Equal(t, fmt.Sprint(1+2*w.workers), pg.Annotations[kaikeys.GPUs])
	}
}
