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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/controller"
)

// TestWebhookUnreachable: the API server calls gangmap's mutating webhook for the pods of this
// namespace, at an address where nothing listens (the grouper runs with --webhook-port 0, as when
// the webhook's pods are down). failurePolicy Ignore admits every pod unchanged and at once, and
// the controller then groups each of them (pod-group-name, sub-group label, KAI's skip annotation),
// counting it in gangmap_pods_repaired_total with a GangmapRepairedPod Warning Event.
func TestWebhookUnreachable(t *testing.T) {
	ctx := context.Background()
	ns := "webhook-down"
	require.NoError(t, cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{webhookDownLabel: "down"}}}))
	// Pods other tests of this package left on the shared cluster would be regrouped by this test's
	// new grouper and counted as repaired too: remove them first (unbound pods go at once).
	var others corev1.PodList
	require.NoError(t, cp.Client.List(ctx, &others))
	for i := range others.Items {
		require.NoError(t, client.IgnoreNotFound(cp.Client.Delete(ctx, &others.Items[i])))
	}
	g := startGrouper(t, ctx)
	waitDefinitions(t, ctx, g, func(n float64) bool { return n >= 1 })

	job := customJob(t, ctx, ns, "unhooked", 4, "", "")
	start := time.Now()
	pods, err := cp.RunRoles(ctx, job, 1, "coordinator", "worker")
	require.NoError(t, err, "pods are admitted although the webhook is unreachable")
	created := time.Since(start)
	t.Logf("5 pods created one after the other in %v with the webhook unreachable", created.Round(time.Millisecond))
	assert.Less(t, created, 10*time.Second, "an unreachable webhook does not hold pod creation for its timeout")
	for _, p := range pods {
		assert.Empty(t, p.Annotations[kaikeys.PodGroupName], "%s was admitted unchanged", p.Name)
	}
	got := waitAllGrouped(t, ctx, ns, 5, timeout)
	want := fmt.Sprintf("pg-%s-customjob", job.GetUID())
	for _, p := range got {
		assert.Equal(t, want, p.Annotations[kaikeys.PodGroupName], p.Name)
		assert.Equal(t, "true", p.Annotations[kaikeys.SkipPodGrouper], p.Name)
		assert.Equal(t, p.Labels["e2e.example.com/role"], p.Labels[kaikeys.SubGroupName], p.Name)
	}
	// The counter moves just after each pod's patch returns, so a pod can be seen grouped a moment
	// before it is counted: wait for five, then check no pod is counted twice.
	repairedTotal := func(ctx context.Context) float64 {
		m, err := g.Metrics(ctx)
		require.NoError(t, err)
		return m["gangmap_pods_repaired_total"]
	}
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		return repairedTotal(ctx) >= 5, nil
	}), "the five pods are counted as repaired")
	assert.Equal(t, float64(5), repairedTotal(ctx), "each pod counted once as repaired after creation")
	// The workload says so with one Warning Event for its five pods (KAI's pod-grouper may have
	// grouped them meanwhile), once they are quiet, and no pod has an Event of its own.
	var repaired []corev1.Event
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		evs, err := cp.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		repaired = repaired[:0]
		for _, e := range evs.Items {
			if e.Reason == controller.ReasonRepaired {
				repaired = append(repaired, e)
			}
		}
		return len(repaired) > 0, nil
	}), "a %s Warning Event on the workload", controller.ReasonRepaired)
	require.Len(t, repaired, 1, "one Event for the workload's five pods")
	e := repaired[0]
	assert.Equal(t, corev1.EventTypeWarning, e.Type)
	assert.Equal(t, "CustomJob", e.InvolvedObject.Kind)
	assert.Equal(t, job.GetName(), e.InvolvedObject.Name)
	assert.Equal(t, job.GetUID(), e.InvolvedObject.UID)
	assert.Contains(t, e.Message, "labelled 5 pods after creation (")
	assert.Contains(t, e.Message, "5 joined PodGroup "+want)
	assert.Contains(t, e.Message, "this grouper does not serve gangmap's admission webhook (--webhook-port=0)")
}
