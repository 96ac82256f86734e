//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestWorkloadMetricsSeedJobSet: the seed JobSet (leader 1 pod, workers 2 pods, 4 GPUs a pod) on
// the real API server, grouped by the shared grouper. Its metrics endpoint reports one workload of
// 12 GPUs with roles leader (4) and workers (8); the status is the catalog JobSet definition's
// mapping by expression: initializing while no replicated job has an active or ready Job, running
// once one does and none failed. The test plays the JobSet operator (JobSet API docs:
// status.replicatedJobsStatus counts each replicated job's Jobs as ready, active, succeeded,
// failed, suspended) after setting the pods Running, as the kubelet would. The PodGroup's
// gangmap.io/status annotation follows. Deleting the JobSet removes every series of it.
func TestWorkloadMetricsSeedJobSet(t *testing.T) {
	ctx := context.Background()
	ns := "workload-metrics"
	js, pods := runSeedJobSet(t, ctx, ns)
	wl := []string{fmt.Sprintf(`namespace="%s"`, ns), `kind="JobSet.jobset.x-k8s.io"`, `name="train-llm"`}
	series := func(name string, extra ...string) func(map[string]float64) float64 {
		return func(m map[string]float64) float64 {
			return framework.Sum(m, name, append(append([]string{}, wl...), extra...)...)
		}
	}
	waitMetrics(t, "12 GPUs, leader 4, workers 8, initializing, 3 pods Pending", map[string]float64{
		"gpus": 12, "gang": 12, "leader": 4, "workers": 8, "initializing": 1, "running": 0, "pending": 3, "info": 1,
	}, map[string]func(map[string]float64) float64{
		"gpus": series("gangmap_workload_gpus"), "gang": series("gangmap_workload_gang_min_gpus"),
		"leader": series("gangmap_workload_role_gpus", `role="leader"`), "workers": series("gangmap_workload_role_gpus", `role="workers"`),
		"initializing": series("gangmap_workload_status", `status="initializing"`), "running": series("gangmap_workload_status", `status="running"`),
		"pending": series("gangmap_workload_role_pods", `phase="Pending"`), "info": series("gangmap_workload_info"),
	})
	pgName := fmt.Sprintf("pg-%s-jobset", js.GetUID())
	pg, err := cp.WaitForPodGroup(ctx, ns, pgName, timeout)
	require.NoError(t, err)
	require.Equal(t, "initializing", pg.Annotations[kaikeys.Status])

	// The pods run (the kubelet's status), then the JobSet operator reports active Jobs.
	for _, p := range pods {
		p.Status.Phase = corev1.PodRunning
		require.NoError(t, cp.Client.Status().Update(ctx, p))
	}
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(js.GroupVersionKind())
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: js.GetName()}, cur))
	require.NoError(t, unstructured.SetNestedSlice(cur.Object, []any{
		map[string]any{"name": "leader", "ready": int64(1), "active": int64(1), "succeeded": int64(0), "failed": int64(0), "suspended": int64(0)},
		map[string]any{"name": "workers", "ready": int64(2), "active": int64(2), "succeeded": int64(0), "failed": int64(0), "suspended": int64(0)},
	}, "status", "replicatedJobsStatus"))
	require.NoError(t, cp.Client.Status().Update(ctx, cur))
	waitMetrics(t, "running, 3 pods Running", map[string]float64{"initializing": 0, "running": 1, "runningPods": 3, "leaderRunning": 1, "gpus": 12},
		map[string]func(map[string]float64) float64{
			"initializing": series("gangmap_workload_status", `status="initializing"`), "running": series("gangmap_workload_status", `status="running"`),
			"runningPods": series("gangmap_workload_role_pods", `phase="Running"`), "leaderRunning": series("gangmap_workload_role_pods", `phase="Running"`, `role="leader"`),
			"gpus": series("gangmap_workload_gpus"),
		})
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		pg, err := cp.WaitForPodGroup(ctx, ns, pgName, timeout)
		return err == nil && pg.Annotations[kaikeys.Status] == "running", err
	}), "PodGroup %s gangmap.io/status should become running", pgName)

	// gangmap get shows the same status, roles and GPUs as the metrics (both read the plan).
	out, stderr, code := runCLI(t, "get", "jobsets", "-n", ns, "-o", "json")
	require.Equal(t, 0, code, stderr)
	var got struct {
		Workloads []struct {
			Status    []string
			TotalGPUs float64
			Roles     []struct {
				Name string
				GPUs float64
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Len(t, got.Workloads, 1)
	m, err := framework.GatherMetrics()
	require.NoError(t, err)
	w := got.Workloads[0]
	require.Equal(t, []string{"running"}, w.Status)
	require.Equal(t, series("gangmap_workload_gpus")(m), w.TotalGPUs)
	for _, r := range w.Roles {
		require.Equal(t, series("gangmap_workload_role_gpus", `role="`+r.Name+`"`)(m), r.GPUs, r.Name)
	}

	// Deleted: no series of the workload is left (no stale series).
	require.NoError(t, cp.Client.Delete(ctx, cur))
	waitMetrics(t, "no series left", map[string]float64{"any": 0}, map[string]func(map[string]float64) float64{
		"any": func(m map[string]float64) float64 {
			n := 0.0
			for k := range m {
				if strings.HasPrefix(k, "gangmap_workload_") && framework.Sum(map[string]float64{k: 1}, strings.SplitN(k, "{", 2)[0], wl...) == 1 {
					n++
				}
			}
			return n
		},
	})
}

// waitMetrics waits until every figure reads its wanted value on the grouper's metrics endpoint.
func waitMetrics(t *testing.T, what string, want map[string]float64, read map[string]func(map[string]float64) float64) {
	t.Helper()
	var last map[string]float64
	err := framework.WaitFor(context.Background(), timeout, func(context.Context) (bool, error) {
		m, err := framework.GatherMetrics()
		if err != nil {
			return false, err
		}
		last = map[string]float64{}
		ok := true
		for k, w := range want {
			last[k] = read[k](m)
			ok = ok && last[k] == w
		}
		return ok, nil
	})
	require.NoError(t, err, "%s: want %v, last read %v", what, want, last)
}
