package findings

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/runtime/podbook"
)

// In dry-run (no client) the Reporter still reports: a Warning Event on the workload and the
// Karta, the gauge and counter; when the finding goes, a Normal GangFindingCleared Event on both.
// An unchanged finding is not sent again before ResendInterval.
func TestReporterDryRunReportsAndClears(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	p := seedPlan(t, 2)
	tr.SetPlan(p, Definition{Name: "reporter-test", KartaUID: "k-uid"}, t0)
	tr.Observe(pod("x"), Observation{Owner: uid, Unclaimed: true}, t0)
	rec := record.NewFakeRecorder(10)
	now := t0
	r := &Reporter{Tracker: tr, Config: cfg, Recorder: rec, DryRun: true, Now: func() time.Time { return now }}
	g := Gauge.WithLabelValues("JobSet", "reporter-test", string(UnclaimedPods))

	r.Tick(context.Background())
	require.Len(t, rec.Events, 2)
	assert.Contains(t, <-rec.Events, "Warning UnclaimedPods 1 pod(s) of the workload match no component's podSelector (e.g. pod x)")
	assert.Contains(t, <-rec.Events, "Warning UnclaimedPods JobSet ns/")
	assert.Equal(t, 1.0, testutil.ToFloat64(g))

	now = t0.Add(30 * time.Second)
	r.Tick(context.Background())
	assert.Empty(t, rec.Events, "not re-sent before ResendInterval")

	tr.Forget(pod("x"), now)
	r.Tick(context.Background())
	require.Len(t, rec.Events, 2)
	assert.Contains(t, <-rec.Events, "Normal GangFindingCleared UnclaimedPods cleared")
	assert.Contains(t, <-rec.Events, "Normal GangFindingCleared UnclaimedPods cleared on JobSet ns/")
	assert.Equal(t, 0.0, testutil.ToFloat64(g))
}

// TestReporterResendsAChangedFinding: a finding whose message changes (a second unclaimed pod)
// is sent again at once, not after ResendInterval, and the PodGroup's health annotation says
// the new message; an unchanged one is still not re-sent.
func TestReporterResendsAChangedFinding(t *testing.T) {
	ctx := context.Background()
	tr := NewTrackerIn(podbook.New())
	p := seedPlan(t, 2)
	require.Len(t, p.PodGroups, 1)
	tr.SetPlan(p, Definition{Name: "reporter-test"}, t0)
	tr.Observe(pod("x"), Observation{Owner: uid, Unclaimed: true}, t0)
	s := runtime.NewScheme()
	require.NoError(t, v2alpha2.AddToScheme(s))
	pg := &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: p.PodGroups[0].Name}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(pg).Build()
	rec := record.NewFakeRecorder(10)
	now := t0
	r := &Reporter{Tracker: tr, Config: cfg, Client: c, Recorder: rec, Now: func() time.Time { return now }}
	message := func() string {
		got := &v2alpha2.PodGroup{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pg), got))
		h, err := ParseHealth(got.Annotations[HealthAnnotation])
		require.NoError(t, err)
		require.Len(t, h.Findings, 1)
		return h.Findings[0].Message
	}

	r.Tick(ctx)
	require.Len(t, rec.Events, 1, "an Event on the workload (the definition has no Karta)")
	assert.Contains(t, <-rec.Events, "Warning UnclaimedPods 1 pod(s)")
	assert.Contains(t, message(), "1 pod(s)")

	now = t0.Add(2 * time.Second)
	tr.Observe(pod("y"), Observation{Owner: uid, Unclaimed: true}, now)
	r.Tick(ctx)
	require.Len(t, rec.Events, 1, "the changed finding is sent again before ResendInterval")
	assert.Contains(t, <-rec.Events, "Warning UnclaimedPods 2 pod(s)")
	assert.Contains(t, message(), "2 pod(s)")

	now = t0.Add(4 * time.Second)
	r.Tick(ctx)
	assert.Empty(t, rec.Events, "an unchanged finding is not re-sent before ResendInterval")
}

// TestHealthOnPlaceholderNamedPodGroup: an alpha plan grouped by a label the operator sets
// names its PodGroup pg-<UID>-{<key>} (gang.HasKeyPlaceholder); the pods' PodGroup is
// pg-<UID>-train. The health annotation goes on that PodGroup, once: before, the reporter wrote
// the placeholder name, found nothing, and retried on every tick for good.
func TestHealthOnPlaceholderNamedPodGroup(t *testing.T) {
	ctx := context.Background()
	tr := NewTrackerIn(podbook.New())
	p := seedPlan(t, 2)
	require.Len(t, p.PodGroups, 1)
	p.PodGroups[0].Name = gang.KAIAlphaName(uid, `{.metadata.labels["e2e.example.com/job-name"]}`)
	tr.SetPlan(p, Definition{Name: "reporter-test"}, t0)
	tr.Observe(pod("x"), Observation{Owner: uid, Unclaimed: true}, t0)

	s := runtime.NewScheme()
	require.NoError(t, v2alpha2.AddToScheme(s))
	real := &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pg-" + uid + "-train"}}
	var gets, updates int
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(real).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			gets++
			return c.Get(ctx, key, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			updates++
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	r := &Reporter{Tracker: tr, Config: cfg, Client: c, Recorder: record.NewFakeRecorder(10), Now: func() time.Time { return t0 }}

	r.Tick(ctx)
	got := &v2alpha2.PodGroup{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(real), got))
	h, err := ParseHealth(got.Annotations[HealthAnnotation])
	require.NoError(t, err, "the real PodGroup has the health annotation")
	assert.False(t, h.Healthy)
	require.Len(t, h.Findings, 1)
	assert.Equal(t, UnclaimedPods, h.Findings[0].Reason)
	assert.Equal(t, 1, updates)

	gets = 0
	for i := 0; i < 3; i++ {
		r.Tick(ctx)
	}
	assert.Zero(t, gets, "written: no retry on the next ticks")
	assert.Equal(t, 1, updates)
}

// A healthy workload leaves no state in the Reporter, and one whose findings cleared (in dry-run:
// no annotation to write) drops its state; a finding that comes back is sent again at once.
func TestReporterKeepsNoStateOfHealthyWorkloads(t *testing.T) {
	tr := NewTrackerIn(podbook.New())
	tr.SetPlan(seedPlan(t, 2), Definition{Name: "state-test"}, t0)
	rec := record.NewFakeRecorder(10)
	now := t0
	r := &Reporter{Tracker: tr, Config: cfg, Recorder: rec, DryRun: true, Now: func() time.Time { return now }}
	g := Gauge.WithLabelValues("JobSet", "state-test", string(UnclaimedPods))

	r.Tick(context.Background())
	assert.Empty(t, r.state)
	assert.Empty(t, rec.Events)

	tr.Observe(pod("x"), Observation{Owner: uid, Unclaimed: true}, now)
	r.Tick(context.Background())
	assert.Len(t, r.state, 1)
	require.Len(t, rec.Events, 1)
	assert.Contains(t, <-rec.Events, "Warning UnclaimedPods 1 pod(s)")
	assert.Equal(t, 1.0, testutil.ToFloat64(g))

	now = now.Add(time.Second)
	tr.Forget(pod("x"), now)
	r.Tick(context.Background())
	assert.Empty(t, r.state)
	require.Len(t, rec.Events, 1)
	assert.Contains(t, <-rec.Events, "Normal GangFindingCleared UnclaimedPods cleared")
	assert.Equal(t, 0.0, testutil.ToFloat64(g))

	now = now.Add(time.Second)
	tr.Observe(pod("x"), Observation{Owner: uid, Unclaimed: true}, now)
	r.Tick(context.Background())
	require.Len(t, rec.Events, 1, "sent again at once, not after ResendInterval")
	assert.Contains(t, <-rec.Events, "Warning UnclaimedPods 1 pod(s)")
	assert.Equal(t, 1.0, testutil.ToFloat64(g))
}

// manyRolesPlan is the plan of a JobSet of n replicated jobs of one pod each: n roles in one gang,
// by the catalog's JobSet definition without its start rule (quadratic in the replicated jobs).
func manyRolesPlan(t *testing.T, n int) *gang.Plan {
	t.Helper()
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	defs, err := catalog.Load()
	require.NoError(t, err)
	var def *definitions.Compiled
	for _, ld := range defs {
		if k := ld.Karta.Spec.Gangmap; ld.Name() == "jobset-x-k8s-io-jobset-v1alpha2" && k != nil && k.Gang != nil {
			k.Gang.Startup = nil
			def, err = definitions.Compile(ld, c)
			require.NoError(t, err)
		}
	}
	require.NotNil(t, def)
	objs, err := manifest.ReadFile("../../../gang/testdata/jobset-leader-workers.yaml")
	require.NoError(t, err)
	obj := objs[0]
	obj.SetNamespace("ns")
	obj.SetUID(uid)
	rjs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "replicatedJobs")
	many := make([]any, n)
	for i := range many {
		rj := runtime.DeepCopyJSONValue(rjs[0]).(map[string]any)
		rj["name"] = fmt.Sprintf("role-%04d", i)
		many[i] = rj
	}
	require.NoError(t, unstructured.SetNestedSlice(obj.Object, many, "spec", "replicatedJobs"))
	p, err := gang.Build(context.Background(), def, obj)
	require.NoError(t, err)
	require.Len(t, p.Roles, n)
	return p
}

// TestReporterBoundsAWorkloadsFindings: a JobSet of 900 replicated jobs (roles: its author's data)
// whose operator created the pod of one role has 899 GangUnsatisfiable findings. The PodGroup's
// health annotation lists the first MaxHealthFindings and counts the rest (all of them, 286 KB,
// passed the API server's 256 KiB limit on a PodGroup's annotations, so the update failed at every
// evaluation, each a request against the client's rate limit); the workload gets
// MaxHealthFindings Warning Events and one that counts the others, not 899; the gauge counts
// them all. When the pods come, the findings clear with as bounded Events.
func TestReporterBoundsAWorkloadsFindings(t *testing.T) {
	ctx := context.Background()
	const n = 900
	tr := NewTrackerIn(podbook.New())
	p := manyRolesPlan(t, n)
	require.Len(t, p.PodGroups, 1)
	tr.SetPlan(p, Definition{Name: "many-roles"}, t0)
	tr.Observe(pod("first"), Observation{Owner: uid, Role: p.Roles[0].Name}, t0)
	s := runtime.NewScheme()
	require.NoError(t, v2alpha2.AddToScheme(s))
	pg := &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: p.PodGroups[0].Name}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(pg).Build()
	rec := record.NewFakeRecorder(2 * n)
	now := t0.Add(cfg.GangUnsatisfiableGrace + time.Second)
	r := &Reporter{Tracker: tr, Config: cfg, Client: c, Recorder: rec, Now: func() time.Time { return now }}
	g := Gauge.WithLabelValues("JobSet", "many-roles", string(GangUnsatisfiable))

	r.Tick(ctx)
	// The gauge counts workloads (its help and docs/findings.md): one workload with 899 roles
	// short of pods is one GangUnsatisfiable workload.
	assert.Equal(t, 1.0, testutil.ToFloat64(g))
	require.Len(t, rec.Events, MaxHealthFindings+1)
	for range MaxHealthFindings {
		assert.Contains(t, <-rec.Events, "Warning GangUnsatisfiable role role-")
	}
	assert.Contains(t, <-rec.Events, fmt.Sprintf("Warning GangFindingsMore %d more finding(s) not sent as Events (at most %d at once)", n-1-MaxHealthFindings, MaxHealthFindings))
	got := &v2alpha2.PodGroup{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pg), got))
	v := got.Annotations[HealthAnnotation]
	assert.Less(t, len(v), 16<<10, "the annotation stays small")
	h, err := ParseHealth(v)
	require.NoError(t, err)
	assert.False(t, h.Healthy)
	assert.Len(t, h.Findings, MaxHealthFindings)
	assert.Equal(t, n-1-MaxHealthFindings, h.Omitted)

	all, err := json.Marshal(Health{Findings: tr.Evaluate(now, cfg, nil)[0].Findings})
	require.NoError(t, err)
	assert.Greater(t, len(all), 256<<10, "all %d findings would pass the API server's limit on a PodGroup's annotations", n-1)
	for i, role := range p.Roles[1:] {
		tr.Observe(pod(fmt.Sprintf("p%d", i)), Observation{Owner: uid, Role: role.Name}, now)
	}
	now = now.Add(time.Second)
	r.Tick(ctx)
	assert.Zero(t, testutil.ToFloat64(g))
	require.Len(t, rec.Events, MaxHealthFindings+1)
	for range MaxHealthFindings {
		assert.Contains(t, <-rec.Events, "Normal GangFindingCleared GangUnsatisfiable (role role-")
	}
	assert.Contains(t, <-rec.Events, fmt.Sprintf("Normal GangFindingCleared %d more finding(s) cleared", n-1-MaxHealthFindings))
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pg), got))
	h, err = ParseHealth(got.Annotations[HealthAnnotation])
	require.NoError(t, err)
	assert.True(t, h.Healthy)
	assert.Zero(t, h.Omitted)
}

// The gauge counts a workload once per reason however many of its roles have that finding, and
// takes it off only when the last of them clears.
func TestGaugeCountsWorkloadsNotRoles(t *testing.T) {
	ctx := context.Background()
	tr := NewTrackerIn(podbook.New())
	p := manyRolesPlan(t, 3)
	tr.SetPlan(p, Definition{Name: "gauge-per-workload"}, t0)
	tr.Observe(pod("first"), Observation{Owner: uid, Role: p.Roles[0].Name}, t0)
	now := t0.Add(cfg.GangUnsatisfiableGrace + time.Second)
	r := &Reporter{Tracker: tr, Config: cfg, Recorder: record.NewFakeRecorder(100), Now: func() time.Time { return now }}
	g := Gauge.WithLabelValues("JobSet", "gauge-per-workload", string(GangUnsatisfiable))

	r.Tick(ctx)
	require.Len(t, tr.Evaluate(now, cfg, nil)[0].Findings, 2, "roles 1 and 2 have no pods")
	assert.Equal(t, 1.0, testutil.ToFloat64(g), "one workload")

	tr.Observe(pod("second"), Observation{Owner: uid, Role: p.Roles[1].Name}, now)
	now = now.Add(time.Second)
	r.Tick(ctx)
	require.Len(t, tr.Evaluate(now, cfg, nil)[0].Findings, 1)
	assert.Equal(t, 1.0, testutil.ToFloat64(g), "role 2 still short")

	tr.Observe(pod("third"), Observation{Owner: uid, Role: p.Roles[2].Name}, now)
	now = now.Add(time.Second)
	r.Tick(ctx)
	assert.Empty(t, tr.Evaluate(now, cfg, nil)[0].Findings)
	assert.Zero(t, testutil.ToFloat64(g))
}
