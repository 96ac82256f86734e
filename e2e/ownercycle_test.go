//go:build e2e

package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestOwnerCycleOfAGroupedKindHoldsThePod: two CustomJobs (a kind gangmap groups) that own each
// other, and a pod owned by one. The pod has no top owner; KAI v0.17's pod-grouper would follow
// the cycle (getResourceOwners has no bound), and a pod it grouped alone would be bound outside
// any gang. gangmap claims it (decide.OwnerChain): the webhook holds it at creation and the
// controller holds a pod the webhook did not see, with KAI's skip annotation and gangmap.io/held,
// and no PodGroup, until the chain is fixed.
func TestOwnerCycleOfAGroupedKindHoldsThePod(t *testing.T) {
	ctx := context.Background()
	ensureCustomJobDefinition(t, ctx)
	for ns, labels := range map[string]map[string]string{"cycle-webhook": nil, "cycle-controller": {webhookLabel: "disabled"}} {
		require.NoError(t, cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}))
		var jobs []*unstructured.Unstructured
		for _, name := range []string{"cyc-a", "cyc-b"} {
			job, err := framework.ReadObject("testdata/customjob.yaml")
			require.NoError(t, err)
			job.SetName(name)
			job.SetNamespace(ns)
			require.NoError(t, cp.Client.Create(ctx, job))
			jobs = append(jobs, job)
		}
		for i, job := range jobs {
			job.SetOwnerReferences([]metav1.OwnerReference{framework.UnstructuredOwnerRef(jobs[1-i])})
			require.NoError(t, cp.Client.Update(ctx, job))
		}
		assertPodHeld(t, ctx, jobs[0], "owner references form a cycle")
	}
}

// assertPodHeld creates worker pod w-0 of job and requires that gangmap holds it from KAI's
// pod-grouper: gangmap.io/held and KAI's skip annotation, no pod-group-name, and a
// GangmapGroupingFailed Event whose message contains why.
func assertPodHeld(t *testing.T, ctx context.Context, job *unstructured.Unstructured, why string) {
	t.Helper()
	ns := job.GetNamespace()
	pod := customJobPod(t, job, "worker", "w-0")
	require.NoError(t, cp.Client.Create(ctx, pod))
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err
		}
		return pod.Annotations[kaikeys.Held] == "true", nil
	}), "%s: the pod is held (annotations %v)", ns, pod.Annotations)
	require.Equal(t, "true", pod.Annotations[kaikeys.SkipPodGrouper], ns)
	require.Empty(t, pod.Annotations[kaikeys.PodGroupName], ns)
	waitEvent(t, ctx, ns, "w-0", "GangmapGroupingFailed", why, timeout)
}
