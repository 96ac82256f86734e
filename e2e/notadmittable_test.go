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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
)

// TestFindingGangNotAdmittableFromTheModel: a shape KAI cannot admit that is not a selector miss.
// The CustomJob definition (coordinator and worker, both required: minSubGroup 2 of
// coordinator:1 and worker:2) knows no start rule that says the coordinator finishes first; its
// pod has Succeeded while the 2 workers wait (recreated, or created late). KAI counts no
// Succeeded pod towards a sub-group's minimum (subgroupset.go IsReadyForScheduling, pod_status.go
// aliveStatuses), so it never takes the PodGroup, and no pod the operator may still create
// changes that. The grouper's admission check (findings.Reporter with the pod controller's pods,
// kaiadmission.Check) reports GangNotAdmittable on the workload within seconds, naming the
// PodGroup and the blocking sub-group, and no selector finding; once a new coordinator pod exists
// it clears.
func TestFindingGangNotAdmittableFromTheModel(t *testing.T) {
	ctx := context.Background()
	kind := "FinishedRoleJob"
	findingsKind(t, ctx, kind, nil)
	job := findingsJob(t, ctx, "find-notadmittable", kind)
	pods := []*corev1.Pod{customJobPod(t, job, "coordinator", "c-0"), customJobPod(t, job, "worker", "w-0"), customJobPod(t, job, "worker", "w-1")}
	for _, p := range pods {
		require.NoError(t, cp.Client.Create(ctx, p))
	}
	pgName := fmt.Sprintf("pg-%s-customjob", job.GetUID())
	pg, err := cp.WaitForPodGroup(ctx, job.GetNamespace(), pgName, timeout)
	require.NoError(t, err)
	require.Equal(t, ptrTo[int32](2), pg.Spec.MinSubGroup)
	time.Sleep(findings.DefaultNotAdmittableGrace + 2*time.Second)
	assert.Empty(t, findingsEvents(t, ctx, job.GetNamespace(), job.GetName()), "all 3 pods pending: KAI can admit the gang")

	// The coordinator's container exits 0.
	c := &corev1.Pod{}
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(pods[0]), c))
	c.Status.Phase = corev1.PodSucceeded
	require.NoError(t, cp.Client.Status().Update(ctx, c))
	start := time.Now()
	ev := waitEvent(t, ctx, job.GetNamespace(), job.GetName(), string(findings.GangNotAdmittable),
		"role coordinator: KAI cannot admit PodGroup "+pgName+" (sub-group coordinator blocks it) with the pods that exist", 20*time.Second)
	assert.Contains(t, ev.Message, "KAI counts no Succeeded pod")
	t.Logf("GangNotAdmittable %v after the coordinator finished: %s", time.Since(start).Round(time.Second), ev.Message)
	for _, e := range findingsEvents(t, ctx, job.GetNamespace(), job.GetName()) {
		assert.NotContains(t, e, string(findings.UnclaimedPods), "not a selector miss")
	}
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		h := health(t, ctx, job.GetNamespace(), pgName)
		if h == nil || h.Healthy {
			return false, nil
		}
		for _, f := range h.Findings {
			if f.Reason == findings.GangNotAdmittable && f.Role == "coordinator" {
				return true, nil
			}
		}
		return false, nil
	}), "the PodGroup's health annotation says so")

	// The operator starts a new coordinator: the gang can be admitted again.
	require.NoError(t, cp.Client.Create(ctx, customJobPod(t, job, "coordinator", "c-1")))
	waitEvent(t, ctx, job.GetNamespace(), job.GetName(), findings.ReasonCleared, "GangNotAdmittable (role coordinator) cleared", 20*time.Second)
}
