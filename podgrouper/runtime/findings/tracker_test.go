package findings

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
	"github.com/gangmap/gangmap/podgrouper/runtime/podbook"
)

const uid = "11111111-2222-3333-4444-555555555555"

// seedPlan is the plan of the seed JobSet (gang/testdata): leader 1 replica and workers 2
// replicas of one pod each (JobSet: replicas × parallelism 1), one gang of 3 pods; workers can
// be set to n replicas.
func seedPlan(t testing.TB, workers int64) *gang.Plan {
	t.Helper()
	return seedPlanWith(t, workers, nil, nil)
}

// seedPlanWith is seedPlan of the seed JobSet with the workload's annotations and the workers'
// pod template annotations set.
func seedPlanWith(t testing.TB, workers int64, annotations, workerTemplate map[string]string) *gang.Plan {
	t.Helper()
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	reg := definitions.NewRegistry(c)
	require.NoError(t, catalog.Register(reg))
	objs, err := manifest.ReadFile("../../../gang/testdata/jobset-leader-workers.yaml")
	require.NoError(t, err)
	obj := objs[0]
	obj.SetNamespace("ns")
	obj.SetUID(uid)
	rjs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "replicatedJobs")
	rjs[1].(map[string]any)["replicas"] = workers
	if workerTemplate != nil {
		require.NoError(t, unstructured.SetNestedStringMap(rjs[1].(map[string]any), workerTemplate, "template", "spec", "template", "metadata", "annotations"))
	}
	obj.SetAnnotations(annotations)
	require.NoError(t, unstructured.SetNestedSlice(obj.Object, rjs, "spec", "replicatedJobs"))
	p, err := gang.Build(context.Background(), reg.Lookup(obj.GroupVersionKind()), obj)
	require.NoError(t, err)
	return p
}

func pod(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

func reasons(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.String()[:len(f.Reason)+len(f.Role)+func() int {
			if f.Role == "" {
				return 0
			}
			return 2
		}()])
	}
	return out
}

// counts is a workload's observed pods: live and created per role, and unclaimed.
type counts struct {
	Live, Created map[string]int64
	Unclaimed     int64
}

// countsOf reads the workload's counters (zero counts for an unknown workload).
func countsOf(tr *Tracker, uid types.UID) counts {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	c := counts{Live: map[string]int64{}, Created: map[string]int64{}}
	if w := tr.workloads[uid]; w != nil {
		c.Unclaimed = w.rare.unclaimed
		for _, rs := range w.roles.list {
			c.Live[rs.name], c.Created[rs.name] = int64(rs.live), int64(rs.created)
		}
	}
	return c
}

func evaluate(t *testing.T, tr *Tracker, now time.Time, cfg Config) []Finding {
	t.Helper()
	reps := tr.Evaluate(now, cfg, nil)
	require.Len(t, reps, 1)
	return reps[0].Findings
}

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

var cfg = Config{MoreThanPlannedGrace: time.Minute, GangUnsatisfiableGrace: 5 * time.Minute, ResendInterval: time.Minute}

// A plan whose pods all came, once each: no finding; counting the same pod twice changes nothing.
func TestNoFindingWhenPodsMatch(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	p := seedPlan(t, 2)
	require.Equal(t, []string{"leader", "workers"}, []string{p.Roles[0].Name, p.Roles[1].Name})
	tr.SetPlan(p, Definition{Name: "d"}, t0)
	for _, o := range []struct{ pod, role string }{{"l", "leader"}, {"w0", "workers"}, {"w1", "workers"}, {"w1", "workers"}} {
		tr.Observe(pod(o.pod), Observation{Owner: uid, Role: o.role}, t0)
	}
	require.Equal(t, counts{Live: map[string]int64{"leader": 1, "workers": 2}, Created: map[string]int64{"leader": 1, "workers": 2}}, countsOf(tr, uid))
	require.Empty(t, evaluate(t, tr, t0.Add(time.Hour), cfg))
}

// onlyUnclaimed evaluates tr at t0 and returns its one finding, which must be UnclaimedPods.
func onlyUnclaimed(t *testing.T, tr *Tracker) Finding {
	t.Helper()
	fs := evaluate(t, tr, t0, cfg)
	require.Len(t, fs, 1)
	require.Equal(t, UnclaimedPods, fs[0].Reason)
	return fs[0]
}

// Unclaimed pods are reported at once, and clear when they go.
func TestUnclaimedPods(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	tr.SetPlan(seedPlan(t, 2), Definition{Name: "d"}, t0)
	tr.Observe(pod("x"), Observation{Owner: uid, Unclaimed: true}, t0)
	f := onlyUnclaimed(t, tr)
	require.Contains(t, f.Message, "1 pod(s)")
	require.Contains(t, f.Message, "pod x")
	tr.Forget(pod("x"), t0)
	require.Empty(t, evaluate(t, tr, t0, cfg))
}

// A pod of an instance or replica the plan does not count waits in the gang in no sub-group as
// an unclaimed pod does (README), so it is reported at once in UnclaimedPods, with its own
// words; it clears when the plan counts it (the workload scaled up); both kinds add up.
func TestPodsOutsidePlanAreUnclaimed(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	tr.SetPlan(seedPlan(t, 2), Definition{Name: "d"}, t0)
	tr.Observe(pod("w9"), Observation{Owner: uid, OutsidePlan: true}, t0)
	f := onlyUnclaimed(t, tr)
	require.Equal(t, "1", f.Counts)
	require.Equal(t, "1 pod(s) of the workload are in an instance or replica the gang plan does not count (e.g. pod w9): they wait in the gang's PodGroup in no sub-group, unscheduled (a flat gang counts them), never bound outside the gang; check the definition's instanceIdPath, replicasPath and pod templates against the workload (Event GangmapPodOutsidePlan on each pod names its instance)", f.Message)

	tr.Observe(pod("x"), Observation{Owner: uid, Unclaimed: true}, t0)
	f = onlyUnclaimed(t, tr)
	require.Equal(t, "2", f.Counts)
	require.True(t, strings.HasPrefix(f.Message, "1 pod(s) of the workload match no component's podSelector (e.g. pod x)"), f.Message)
	require.Contains(t, f.Message, "; also 1 pod(s) of the workload are in an instance or replica the gang plan does not count (e.g. pod w9)")

	tr.Forget(pod("x"), t0)
	tr.Observe(pod("w9"), Observation{Owner: uid, Role: "workers"}, t0) // the plan counts it now
	require.Empty(t, evaluate(t, tr, t0, cfg))
	tr.mu.Lock()
	defer tr.mu.Unlock()
	require.Zero(t, tr.workloads[uid].rare.outside)
	require.Empty(t, tr.workloads[uid].rare.outsidePod)
}

// Four live worker pods for a plan of two: MoreThanPlanned only after the grace period; a
// finished pod does not count as live.
func TestMoreThanPlannedAfterGrace(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	tr.SetPlan(seedPlan(t, 2), Definition{Name: "d"}, t0)
	tr.Observe(pod("l"), Observation{Owner: uid, Role: "leader"}, t0)
	for i := range 4 {
		tr.Observe(pod(fmt.Sprint("w", i)), Observation{Owner: uid, Role: "workers"}, t0)
	}
	require.Empty(t, evaluate(t, tr, t0.Add(59*time.Second), cfg))
	fs := evaluate(t, tr, t0.Add(time.Minute), cfg)
	require.Equal(t, []string{"MoreThanPlanned(workers)"}, reasons(fs))
	require.Contains(t, fs[0].Message, "4 live pods for 1m0s, the plan counts 2")
	// Its age is in the message, not in what it counts: the reporter does not re-send it as it ages.
	later := evaluate(t, tr, t0.Add(90*time.Second), cfg)
	require.Contains(t, later[0].Message, "4 live pods for 1m30s")
	require.Equal(t, "4/2", fs[0].Counts)
	require.Equal(t, fs[0].Counts, later[0].Counts)
	// Two finish: 2 live, as planned.
	tr.Observe(pod("w0"), Observation{Owner: uid, Role: "workers", Terminal: true}, t0.Add(2*time.Minute))
	tr.Observe(pod("w1"), Observation{Owner: uid, Role: "workers", Terminal: true}, t0.Add(2*time.Minute))
	require.Empty(t, evaluate(t, tr, t0.Add(time.Hour), cfg))
}

// Workers never come while the leader runs: GangUnsatisfiable after the grace period, the clock
// restarting when a worker pod comes; fixed by a plan that no longer requires them.
func TestGangUnsatisfiable(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	tr.SetPlan(seedPlan(t, 2), Definition{Name: "d"}, t0)
	tr.Observe(pod("l"), Observation{Owner: uid, Role: "leader"}, t0)
	require.Empty(t, evaluate(t, tr, t0.Add(4*time.Minute), cfg))
	tr.Observe(pod("w0"), Observation{Owner: uid, Role: "workers"}, t0.Add(4*time.Minute))
	require.Empty(t, evaluate(t, tr, t0.Add(8*time.Minute), cfg), "a worker came at 4m: the clock restarted")
	fs := evaluate(t, tr, t0.Add(9*time.Minute), cfg)
	require.Equal(t, []string{"GangUnsatisfiable(workers)"}, reasons(fs))
	require.Contains(t, fs[0].Message, "requires 2 pods of the role, 1 exist")
	// A plan of 1 worker (the definition fixed): satisfied.
	tr.SetPlan(seedPlan(t, 1), Definition{Name: "d"}, t0.Add(10*time.Minute))
	require.Empty(t, evaluate(t, tr, t0.Add(time.Hour), cfg))
}

// No pod of the workload at all (suspended): nothing is unsatisfiable.
func TestNoPodsNoFinding(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	tr.SetPlan(seedPlan(t, 2), Definition{Name: "d"}, t0)
	tr.Observe(pod("l"), Observation{Owner: uid, Role: "leader"}, t0)
	tr.Forget(pod("l"), t0.Add(time.Second))
	require.Empty(t, evaluate(t, tr, t0.Add(time.Hour), cfg))
}

// Scaling up: the plan asks for 4 workers before they come; they come within the grace period.
func TestScalingNoFalseAlarm(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	tr.SetPlan(seedPlan(t, 2), Definition{Name: "d"}, t0)
	tr.Observe(pod("l"), Observation{Owner: uid, Role: "leader"}, t0)
	for i := range 2 {
		tr.Observe(pod(fmt.Sprint("w", i)), Observation{Owner: uid, Role: "workers"}, t0)
	}
	tr.SetPlan(seedPlan(t, 4), Definition{Name: "d"}, t0.Add(time.Minute))
	for i := 2; i < 4; i++ {
		tr.Observe(pod(fmt.Sprint("w", i)), Observation{Owner: uid, Role: "workers"}, t0.Add(time.Minute+time.Second))
	}
	require.Empty(t, evaluate(t, tr, t0.Add(time.Hour), cfg))
	// Scaling down to 2: two extra pods until deleted, within the grace period.
	tr.SetPlan(seedPlan(t, 2), Definition{Name: "d"}, t0.Add(2*time.Hour))
	tr.Forget(pod("w2"), t0.Add(2*time.Hour+10*time.Second))
	tr.Forget(pod("w3"), t0.Add(2*time.Hour+10*time.Second))
	require.Empty(t, evaluate(t, tr, t0.Add(3*time.Hour), cfg))
}

// Drift: the plan's path misses are a finding at once.
func TestDrift(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	p := seedPlan(t, 2)
	p.Misses = []definitions.PathMiss{{Path: "spec.x", Expression: ".spec.x"}}
	tr.SetPlan(p, Definition{Name: "d"}, t0)
	fs := evaluate(t, tr, t0, cfg)
	require.Equal(t, []string{"Drift"}, reasons(fs))
	require.Contains(t, fs[0].Message, "spec.x")
}

// BenchmarkObserve measures the per-pod bookkeeping of the pod controller: the plan set again
// (the same cached plan: a pointer compare) and the pod observed (a map update and counters).
// Goal: well under the 20µs per-pod decision budget, with no allocation for a pod seen before.
func BenchmarkObserve(b *testing.B) {
	tr := NewTrackerIn(podbook.New())
	p := seedPlan(b, 999)
	keys := make([]types.NamespacedName, 1000)
	for i := range keys {
		keys[i] = pod(fmt.Sprint("w", i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tr.SetPlan(p, Definition{Name: "d"}, t0)
		tr.Observe(keys[i%len(keys)], Observation{Owner: uid, Role: "workers", Terminal: i%7 == 0}, t0)
	}
}

// BenchmarkEvaluate measures one evaluation of 1000 workloads (the reporter's tick).
func BenchmarkEvaluate(b *testing.B) {
	tr := NewTrackerIn(podbook.New())
	for w := range 1000 {
		p := seedPlan(b, 2)
		p.Workload.UID = fmt.Sprint("uid-", w)
		tr.SetPlan(p, Definition{Name: "d"}, t0)
		for i := range 3 {
			tr.Observe(pod(fmt.Sprint(w, "-", i)), Observation{Owner: types.UID(p.Workload.UID), Role: []string{"leader", "workers", "workers"}[i]}, t0)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tr.Evaluate(t0, cfg, nil)
	}
}

// The tracker does not keep a workload's plan alive (the plan cache alone bounds the plans held),
// yet the same plan set again is still recognised, and the findings, PodGroup names included,
// outlive the plan.
func TestTrackerDoesNotKeepThePlan(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	p := seedPlan(t, 2)
	names := []string{p.PodGroups[0].Name}
	tr.SetPlan(p, Definition{Name: "d"}, t0)
	tr.Observe(pod("l"), Observation{Owner: uid, Role: "leader"}, t0)
	ref := tr.workloads[uid].plan
	tr.SetPlan(p, Definition{Name: "changed"}, t0)
	require.Equal(t, "d", tr.workloads[uid].definition.Name, "the same plan again is a no-op")
	runtime.GC()
	require.Nil(t, ref.Value(), "the plan was collected")
	reports := tr.Evaluate(t0, cfg, nil)
	require.Len(t, reports, 1)
	require.Equal(t, names, reports[0].PodGroups)
	require.Equal(t, int64(1), countsOf(tr, uid).Created["leader"])
}

// The same plan built again (the grouper's plan cache evicted it, and a pod event rebuilt it)
// does not restart a short role's GangUnsatisfiable clock; a plan that requires more does.
func TestEqualPlanKeepsTheClock(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	tr.SetPlan(seedPlan(t, 2), Definition{Name: "d"}, t0)
	tr.Observe(pod("l"), Observation{Owner: uid, Role: "leader"}, t0)
	tr.Observe(pod("w0"), Observation{Owner: uid, Role: "workers"}, t0)
	tr.SetPlan(seedPlan(t, 2), Definition{Name: "d"}, t0.Add(4*time.Minute))
	fs := evaluate(t, tr, t0.Add(5*time.Minute+time.Second), cfg)
	require.Equal(t, []string{"GangUnsatisfiable(workers)"}, reasons(fs), "the clock started at t0")
	require.Contains(t, fs[0].Message, "requires 2 pods of the role, 1 exist")

	tr.SetPlan(seedPlan(t, 3), Definition{Name: "d"}, t0.Add(6*time.Minute))
	require.Empty(t, evaluate(t, tr, t0.Add(10*time.Minute), cfg), "3 workers required from 6m: the clock restarted")
	fs = evaluate(t, tr, t0.Add(11*time.Minute+time.Second), cfg)
	require.Equal(t, []string{"GangUnsatisfiable(workers)"}, reasons(fs))
	require.Contains(t, fs[0].Message, "requires 3 pods of the role, 1 exist")
}

// Evaluate reports the workloads with findings and those it is asked for; with no filter, all.
func TestEvaluateReportsFindingsAndTheAskedFor(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	p := seedPlan(t, 2)
	tr.SetPlan(p, Definition{Name: "d"}, t0)
	healthy := *p
	healthy.Workload.UID, healthy.Workload.Name = "healthy-uid", "healthy"
	tr.SetPlan(&healthy, Definition{Name: "d"}, t0)
	tr.Observe(pod("x"), Observation{Owner: uid, Unclaimed: true}, t0)
	names := func(rs []Report) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Workload.UID)
		}
		sort.Strings(out)
		return out
	}
	none := func(types.UID) bool { return false }
	require.Equal(t, []string{uid}, names(tr.Evaluate(t0, cfg, none)))
	asked := func(u types.UID) bool { return u == "healthy-uid" }
	require.Equal(t, []string{uid, "healthy-uid"}, names(tr.Evaluate(t0, cfg, asked)))
	require.Equal(t, []string{uid, "healthy-uid"}, names(tr.Evaluate(t0, cfg, nil)))
}

// A selector that misses the workers (issue 27: a misspelt value): the leader's pod is claimed,
// the two worker pods are claimed by no component. The workers' sub-group can never be
// completed, so GangNotAdmittable is reported at once (no grace period), naming the sub-group,
// with an unclaimed pod's labels next to what the selectors want.
func TestGangNotAdmittableWhenASelectorMissesARole(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	tr.SetPlan(seedPlan(t, 2), Definition{Name: "d"}, t0)
	tr.Observe(pod("l"), Observation{Owner: uid, Role: "leader"}, t0)
	for _, n := range []string{"w-0", "w-1"} {
		tr.Observe(pod(n), Observation{Owner: uid, Unclaimed: true}, t0)
		tr.NoteUnclaimed(uid, n, map[string]string{"role": "worker", "app": "train"}, func() string { return `worker: .metadata.labels.role == "wroker"` })
	}
	fs := evaluate(t, tr, t0, cfg)
	require.Equal(t, []string{"UnclaimedPods", "GangNotAdmittable(workers)"}, reasons(fs))
	msg := fs[1].Message
	assert.Contains(t, msg, "KAI cannot admit the gang: sub-group workers requires 2 pods, 0 are placed in it, while 2 pod(s) of the workload match no component")
	assert.Contains(t, msg, "pod w-0 with labels {app=train, role=worker}")
	assert.Contains(t, msg, `the selectors want worker: .metadata.labels.role == "wroker"`)
	assert.Contains(t, fs[0].Message, "unscheduled")

	// Fixed: the pods are claimed by the workers' role; nothing is left to report.
	for _, n := range []string{"w-0", "w-1"} {
		tr.Observe(pod(n), Observation{Owner: uid, Role: "workers"}, t0)
	}
	assert.Empty(t, evaluate(t, tr, t0, cfg))
}

// SelectorsOf reads each component's podSelector: the catalog JobSet names its instance by the
// replicatedjob-name label the JobSet controller sets.
func TestSelectorsOfCatalogJobSet(t *testing.T) {
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	reg := definitions.NewRegistry(c)
	require.NoError(t, catalog.Register(reg))
	js := reg.Lookup(schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"})
	require.NotNil(t, js)
	assert.Equal(t, `replicatedjob: .metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"] names an instance`, SelectorsOf(js))
	assert.Empty(t, SelectorsOf(nil))
}
