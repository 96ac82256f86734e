//go:build e2e_kai

package inkai_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gangmap/gangmap/e2e/framework"
)

// findingTimeout bounds the wait for a finding's Event: the reporter evaluates every 2 s
// (findings.Reporter.Interval) and UnclaimedPods is reported at once (package findings).
const findingTimeout = 30 * time.Second

// waitEvent waits until an Event of reason on the object named involved in ns exists, and returns
// its message (realkai.Cluster.WaitEvent).
func waitEvent(t *testing.T, ctx context.Context, ns, involved, reason string, timeout time.Duration) string {
	t.Helper()
	msg, err := kai.WaitEvent(ctx, ns, involved, reason, timeout)
	require.NoError(t, err, "no %s Event on %s/%s\n%s", reason, ns, involved, kai.Report(ctx, ns))
	return msg
}

// scrape returns the lines of gangmap-kai-podgrouper's metrics endpoint (KAI's
// --metrics-bind-address) that start with name and contain every one of with.
func scrape(t *testing.T, ctx context.Context, name string, with ...string) []string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+metricsAddr+"/metrics", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, name+"{") {
			continue
		}
		keep := true
		for _, w := range with {
			keep = keep && strings.Contains(l, w)
		}
		if keep {
			out = append(out, l)
		}
	}
	return out
}

// TestInKAIFindingsAndWorkloadMetrics: inside KAI, gangmap's findings and workload metrics work
// on the real KAI pod-grouper: a CustomJob (the cluster Karta e2e/testdata/customjob-karta.yaml)
// whose second worker has a misspelt role label (e2e.example.com/role: wroker; the Karta's worker
// podSelector wants "worker") gets an UnclaimedPods Warning Event naming the label (package
// findings: at once), and KAI's metrics endpoint serves gangmap_workload_role_pods for it
// (coordinator 1 and worker 1 Pending: the unclaimed pod is in no role) and gangmap_gang_findings
// {reason="UnclaimedPods"}; deleting the worker pod (KAI's reconciler returns at its NotFound)
// takes it off the series: the Observer's delete handler on KAI's pod informer.
func TestInKAIFindingsAndWorkloadMetrics(t *testing.T) {
	ctx := context.Background()
	ns := "inkai-findings"
	newBed(t, ns, 1, 2)
	job := read(t, "../../testdata/customjob.yaml", ns)
	require.NoError(t, kai.Client.Create(ctx, job))
	var pods []*corev1.Pod
	for _, r := range []struct {
		role string
		i    int
	}{{"coordinator", 0}, {"worker", 0}, {"worker", 1}} {
		p, err := framework.RolePod(job, r.role, r.i)
		require.NoError(t, err)
		pods = append(pods, p)
	}
	pods[2].Labels["e2e.example.com/role"] = "wroker"
	require.NoError(t, kai.CreatePods(ctx, pods, 3))
	podGroupsOf(t, ctx, ns, pods)

	msg := waitEvent(t, ctx, ns, job.GetName(), "UnclaimedPods", findingTimeout)
	assert.Contains(t, msg, "wroker", "the Event shows the unclaimed pod's label")
	t.Logf("UnclaimedPods: %s", msg)

	series := func(role string) []string {
		return scrape(t, ctx, "gangmap_workload_role_pods", `namespace="`+ns+`"`, `name="`+job.GetName()+`"`, `role="`+role+`"`, `phase="Pending"`)
	}
	require.NoError(t, framework.WaitFor(ctx, findingTimeout, func(context.Context) (bool, error) {
		return len(series("worker")) == 1 && strings.HasSuffix(series("worker")[0], " 1"), nil
	}), "worker series: %v", series("worker"))
	require.Len(t, series("coordinator"), 1)
	assert.True(t, strings.HasSuffix(series("coordinator")[0], " 1"), series("coordinator")[0])
	findingSeries := scrape(t, ctx, "gangmap_gang_findings", `definition="e2e-example-com-v1-customjob"`, `reason="UnclaimedPods"`)
	require.NotEmpty(t, findingSeries, "gangmap_gang_findings for the CustomJob's kind")
	t.Logf("metrics: %v %v %v", series("coordinator"), series("worker"), findingSeries)

	_, err := kai.AssertNoneBound(ctx, ns, labels.Everything(), 2*time.Second)
	require.NoError(t, err, "the gang lacks a worker: KAI binds none")
	require.NoError(t, kai.Client.Delete(ctx, pods[1]))
	require.NoError(t, framework.WaitFor(ctx, findingTimeout, func(context.Context) (bool, error) {
		s := series("worker")
		return len(s) == 0 || strings.HasSuffix(s[0], " 0"), nil
	}), "a deleted pod leaves gangmap_workload_role_pods: %v", series("worker"))
}
