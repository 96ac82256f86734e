//go:build e2e_kai

package inkai_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/realkai"
)

// TestInKAIShadowWritesStockKAIsPodGroups: with --gangmap-shadow, gangmap-kai-podgrouper groups a
// CustomJob (gangmap would: its cluster Karta) as stock KAI v0.17 with --generic-karta-fallback=
// false does: KAI's default grouper's one PodGroup pg-<name>-<uid> of minMember 1 (pkg/podgrouper/
// podgrouper/plugins/defaultgrouper), and tells on the CustomJob, in one DryRunPodGroup Event, the
// PodGroup gangmap would have written (pg-<uid>-customjob, minSubGroup 2: coordinator 1, worker 2).
func TestInKAIShadowWritesStockKAIsPodGroups(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, podGrouper.Stop())
	defer func() { require.NoError(t, podGrouper.Start(ctx)) }()
	metrics, probe, err := addrs()
	require.NoError(t, err)
	shadow := &realkai.Process{Name: "gangmap-kai-podgrouper-shadow", Bin: podGrouperBin,
		Args: []string{"--kubeconfig=" + kai.Kubeconfig, "--scheduler-name=" + realkai.SchedulerName,
			"--queue-label-key=" + realkai.QueueLabelKey, "--nodepool-label-key=" + realkai.NodePoolLabelKey,
			"--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + probe, "--gangmap-shadow"},
		LogPath: filepath.Join(kai.LogDir, "gangmap-kai-podgrouper-shadow.log"), ReadyURL: "http://" + probe + "/readyz"}
	require.NoError(t, shadow.Start(ctx))
	defer func() { _ = shadow.Stop() }()

	ns := "inkai-shadow"
	require.NoError(t, kai.CreateNamespace(ctx, ns))
	job := read(t, "../../testdata/customjob.yaml", ns)
	require.NoError(t, kai.Client.Create(ctx, job))
	pods, err := kai.RunRoles(ctx, job, 3, "coordinator", "worker")
	require.NoError(t, err)
	pgs := podGroupsOf(t, ctx, ns, pods)
	require.Len(t, pgs, 1, "stock KAI: one default PodGroup for the top owner")
	for name, pg := range pgs {
		assert.Equal(t, fmt.Sprintf("pg-%s-%s", job.GetName(), job.GetUID()), name)
		assert.Equal(t, `{"minMember":1,"minSubGroup":null,"queue":"gangmap-e2e","subGroups":null}`, gang(pg))
	}
	msg := waitEvent(t, ctx, ns, job.GetName(), "DryRunPodGroup", findingTimeout)
	assert.Equal(t, fmt.Sprintf("shadow mode: gangmap would write PodGroup pg-%s-customjob (minSubGroup 2: coordinator 1, worker 2); KAI's grouper \"Default Grouper\" wrote PodGroup pg-%s-%s (minMember 1)",
		job.GetUID(), job.GetName(), job.GetUID()), msg)
	evs := &corev1.EventList{}
	require.NoError(t, kai.Client.List(ctx, evs, client.InNamespace(ns)))
	n := 0
	for _, e := range evs.Items {
		if e.Reason == "DryRunPodGroup" {
			n += int(e.Count)
		}
	}
	assert.Equal(t, 1, n, "told once for the workload's 3 pods")
	// The shadow run's pods go, so that the real pod-grouper does not regroup them.
	for _, p := range pods {
		require.NoError(t, client.IgnoreNotFound(kai.Client.Delete(ctx, p)))
	}
}
