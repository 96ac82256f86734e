//go:build e2e

package coexist

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
)

// TestAlphaPlaceholderPodGroupGetsStatusAndHealth: the AlphaJob's alpha definition groups pods
// by a label the operator sets (e2e.example.com/job-name), which the plan cannot read: its
// planned name is pg-<UID>-{<key>}, the pods' PodGroup pg-<UID>-<job name> (KAI's
// calcPodGroupName). gangmap's writers keyed by PodGroup find that real PodGroup:
//
//   - the workload's status changes (status.phase Running, mapped to "running" by the definition)
//     with no pod event: gangmap.io/status on the PodGroup follows;
//   - a pod no component claims (role sidecar) is an UnclaimedPods finding: gangmap.io/health on
//     the PodGroup says so.
//
// Before, both were written to the placeholder name, found nothing, and never reached the
// PodGroup (the findings reporter retrying every tick).
func TestAlphaPlaceholderPodGroupGetsStatusAndHealth(t *testing.T) {
	ctx := context.Background()
	ns := "alpha-status"
	karta, err := framework.ReadObject("testdata/alphajob-karta.yaml")
	require.NoError(t, err)
	require.NoError(t, cp.Client.Create(ctx, karta))
	t.Cleanup(func() { _ = cp.Client.Delete(context.Background(), karta) })
	waitDefinition(t, ctx, "e2e.example.com/v1", "AlphaJob", karta.GetName(), definitions.SourceCluster)
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	job, err := framework.ReadObject("../testdata/customjob.yaml")
	require.NoError(t, err)
	job.SetKind("AlphaJob")
	job.SetNamespace(ns)
	require.NoError(t, cp.Client.Create(ctx, job))
	pgName := fmt.Sprintf("pg-%s-%s", job.GetUID(), job.GetName())
	pods := []*corev1.Pod{alphaJobPod(t, ctx, job, "coordinator", 0), alphaJobPod(t, ctx, job, "worker", 0), alphaJobPod(t, ctx, job, "worker", 1)}
	waitGrouped(t, ctx, ns, pgName, pods...)
	waitPodGroupAnnotation(t, ctx, ns, pgName, "the PodGroup as created", func(a map[string]string) bool {
		_, ok := a[kaikeys.Definition]
		return ok
	})

	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(job), job))
	require.NoError(t, unstructured.SetNestedField(job.Object, "Running", "status", "phase"))
	require.NoError(t, cp.Client.Status().Update(ctx, job))
	waitPodGroupAnnotation(t, ctx, ns, pgName, kaikeys.Status+"=running", func(a map[string]string) bool {
		return a[kaikeys.Status] == "running"
	})

	sidecar, err := framework.RolePod(job, "worker", 9)
	require.NoError(t, err)
	sidecar.Name = job.GetName() + "-sidecar"
	sidecar.Labels["e2e.example.com/role"] = "sidecar"
	sidecar.Labels["e2e.example.com/job-name"] = job.GetName()
	require.NoError(t, cp.Client.Create(ctx, sidecar))
	waitPodGroupAnnotation(t, ctx, ns, pgName, findings.HealthAnnotation+" with UnclaimedPods", func(a map[string]string) bool {
		h, err := findings.ParseHealth(a[findings.HealthAnnotation])
		return err == nil && !h.Healthy && len(h.Findings) > 0 && h.Findings[0].Reason == findings.UnclaimedPods
	})
}

// waitPodGroupAnnotation waits until the PodGroup's annotations satisfy ok.
func waitPodGroupAnnotation(t *testing.T, ctx context.Context, ns, name, what string, ok func(map[string]string) bool) {
	t.Helper()
	var last map[string]string
	err := framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		pg := &v2alpha2.PodGroup{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		last = pg.Annotations
		return ok(pg.Annotations), nil
	})
	require.NoError(t, err, "PodGroup %s/%s: %s (annotations %v)", ns, name, what, last)
}
