package workloadmetrics

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
)

// seedPlan is the plan of the seed JobSet (leader 1 pod, workers 2 pods, 4 GPUs a pod) with the
// catalog's JobSet definition.
func seedPlan(t *testing.T) *gang.Plan {
	t.Helper()
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	r := definitions.NewRegistry(c)
	require.NoError(t, catalog.Register(r))
	objs, err := manifest.ReadFile("../../../gang/testdata/jobset-leader-workers.yaml")
	require.NoError(t, err)
	objs[0].SetNamespace("team-a")
	p, err := gang.Build(context.Background(), r.Lookup(objs[0].GroupVersionKind()), objs[0])
	require.NoError(t, err)
	return p
}

// The seed JobSet is one workload of 12 GPUs, roles leader (4) and workers (8), status
// initializing (no replicated job active yet: the catalog's JobSet status mapping); its pods
// counted by role and phase; deleting it removes every series.
func TestSeedJobSetSeries(t *testing.T) {
	tr := &Tracker{MaxWorkloads: 10}
	w := FromPlan(seedPlan(t), "u1", "JobSet.jobset.x-k8s.io")
	require.True(t, tr.SetWorkload(w))
	setPod(tr, "u1", types.NamespacedName{Namespace: "team-a", Name: "l-0"}, "leader", "Running")
	setPod(tr, "u1", types.NamespacedName{Namespace: "team-a", Name: "w-0"}, "workers", "Pending")
	setPod(tr, "u1", types.NamespacedName{Namespace: "team-a", Name: "w-1"}, "workers", "Pending")
	lbl := `kind="JobSet.jobset.x-k8s.io",name="train-llm",namespace="team-a"` // sorted, as collected
	want := `
# HELP gangmap_workload_gpus GPUs the workload's pods request when every role runs all its replicas, in devices (fractions as decimals).
# TYPE gangmap_workload_gpus gauge
gangmap_workload_gpus{` + lbl + `} 12
# HELP gangmap_workload_gang_min_gpus GPUs the workload's gang minimum requires, in devices (fractions as decimals).
# TYPE gangmap_workload_gang_min_gpus gauge
gangmap_workload_gang_min_gpus{` + lbl + `} 12
# HELP gangmap_workload_role_gpus GPUs of one role of the workload when all its replicas run, in devices (fractions as decimals).
# TYPE gangmap_workload_role_gpus gauge
gangmap_workload_role_gpus{` + lbl + `,role="leader"} 4
gangmap_workload_role_gpus{` + lbl + `,role="workers"} 8
# HELP gangmap_workload_role_pods Live pods of one role of the workload, by pod phase (Pending, Running, Succeeded, Failed, Unknown).
# TYPE gangmap_workload_role_pods gauge
gangmap_workload_role_pods{` + lbl + `,phase="Pending",role="workers"} 2
gangmap_workload_role_pods{` + lbl + `,phase="Running",role="leader"} 1
# HELP gangmap_workload_status Status of a workload gangmap groups, from its definition's status mapping (one series per matched status word: initializing, running, completed, failed, degraded, suspended, suspending, resuming, undefined), always 1.
# TYPE gangmap_workload_status gauge
gangmap_workload_status{` + lbl + `,status="initializing"} 1
`
	assert.NoError(t, testutil.CollectAndCompare(tr, strings.NewReader(want),
		"gangmap_workload_gpus", "gangmap_workload_gang_min_gpus", "gangmap_workload_role_gpus", "gangmap_workload_role_pods", "gangmap_workload_status"))
	role, ok := podRole(tr, types.NamespacedName{Namespace: "team-a", Name: "w-1"})
	assert.True(t, ok)
	assert.Equal(t, "workers", role)

	tr.ForgetPod(types.NamespacedName{Namespace: "team-a", Name: "w-1"})
	tr.ForgetWorkload("u1")
	assert.Equal(t, 2, testutil.CollectAndCount(tr), "only the tracked-workloads gauge and the drop counter")
	assert.False(t, tr.SetWorkload(w), "a deleted workload does not come back from a late update")
}

// The cap: past MaxWorkloads a new workload gets no series, the drop is counted and logged once.
func TestCap(t *testing.T) {
	var logs []string
	tr := &Tracker{MaxWorkloads: 1, Log: funcr.New(func(_, args string) { logs = append(logs, args) }, funcr.Options{})}
	p := seedPlan(t)
	assert.True(t, tr.SetWorkload(FromPlan(p, "a", "JobSet.jobset.x-k8s.io")))
	assert.False(t, tr.SetWorkload(FromPlan(p, "b", "JobSet.jobset.x-k8s.io")))
	assert.False(t, tr.SetWorkload(FromPlan(p, "c", "JobSet.jobset.x-k8s.io")))
	assert.True(t, tr.SetWorkload(FromPlan(p, "a", "JobSet.jobset.x-k8s.io")), "a tracked workload is updated")
	setPod(tr, "b", types.NamespacedName{Name: "x"}, "leader", "Running")
	_, ok := podRole(tr, types.NamespacedName{Name: "x"})
	assert.False(t, ok)
	assert.NoError(t, testutil.CollectAndCompare(tr, strings.NewReader(`
# HELP gangmap_workload_metrics_dropped_total Updates of workloads that got no gangmap_workload_* series because --max-workload-metrics workloads already have them.
# TYPE gangmap_workload_metrics_dropped_total counter
gangmap_workload_metrics_dropped_total 2
# HELP gangmap_workload_metrics_workloads Workloads that have gangmap_workload_* series (at most --max-workload-metrics).
# TYPE gangmap_workload_metrics_workloads gauge
gangmap_workload_metrics_workloads 1
`), "gangmap_workload_metrics_dropped_total", "gangmap_workload_metrics_workloads"))
	require.Len(t, logs, 1)
	assert.Contains(t, logs[0], "raise --max-workload-metrics")
}

// Every series has a help text, and the metric names pass Prometheus' lint.
func TestLint(t *testing.T) {
	tr := &Tracker{MaxWorkloads: 10}
	tr.SetWorkload(FromPlan(seedPlan(t), "u1", "JobSet.jobset.x-k8s.io"))
	problems, err := testutil.CollectAndLint(tr)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// A pod counts once under its current role, phase and workload: a phase change moves it, a pod
// that moves to another workload leaves the first, and a pod of a forgotten workload counts
// nowhere (its record stays in the Book until the pod goes, and never touches another entry).
func TestPodCountsFollowThePod(t *testing.T) {
	tr := &Tracker{MaxWorkloads: 10}
	p := seedPlan(t)
	w1, w2 := FromPlan(p, "u1", "JobSet.jobset.x-k8s.io"), FromPlan(p, "u2", "JobSet.jobset.x-k8s.io")
	w2.Name = "other"
	require.True(t, tr.SetWorkload(w1))
	require.True(t, tr.SetWorkload(w2))
	pod := types.NamespacedName{Namespace: "team-a", Name: "w-0"}
	setPod(tr, "u1", pod, "workers", "Pending")
	setPod(tr, "u1", pod, "workers", "Pending") // a reconcile again
	setPod(tr, "u1", types.NamespacedName{Namespace: "team-a", Name: "w-1"}, "workers", "Pending")
	setPod(tr, "u1", pod, "workers", "Running")
	pods := func() map[string]float64 {
		out := map[string]float64{}
		ch := make(chan prometheus.Metric, 100)
		tr.Collect(ch)
		close(ch)
		for m := range ch {
			if !strings.Contains(m.Desc().String(), "gangmap_workload_role_pods") {
				continue
			}
			var d dto.Metric
			require.NoError(t, m.Write(&d))
			l := map[string]string{}
			for _, lp := range d.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			out[l["name"]+"/"+l["role"]+"/"+l["phase"]] = d.GetGauge().GetValue()
		}
		return out
	}
	assert.Equal(t, map[string]float64{"train-llm/workers/Running": 1, "train-llm/workers/Pending": 1}, pods())

	setPod(tr, "u2", pod, "workers", "Running")
	assert.Equal(t, map[string]float64{"train-llm/workers/Pending": 1, "other/workers/Running": 1}, pods())

	tr.ForgetWorkload("u2")
	setPod(tr, "u1", pod, "leader", "Running") // back to u1: nothing to take off u2's gone entry
	assert.Equal(t, map[string]float64{"train-llm/workers/Pending": 1, "train-llm/leader/Running": 1}, pods())
	tr.ForgetPod(pod)
	tr.ForgetPod(pod)
	assert.Equal(t, map[string]float64{"train-llm/workers/Pending": 1}, pods())
	_, ok := podRole(tr, pod)
	assert.False(t, ok)
}

// podRole returns the role recorded for a pod under a live entry, if any.
func podRole(t *Tracker, pod types.NamespacedName) (string, bool) {
	t.init()
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.Pods.Metric(pod)
	if !ok || t.live(m) == nil {
		return "", false
	}
	return m.Role, true
}

// setPod records a pod of a tracked workload with its role and phase, as TrackPod does for a pod
// with a role; a pod of an untracked workload is ignored.
func setPod(t *Tracker, uid types.UID, pod types.NamespacedName, role, phase string) {
	t.init()
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.workloads[uid]; e != nil {
		t.setPodLocked(e, pod, role, phase)
	}
}
