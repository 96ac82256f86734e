package findings

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/apis/scheduling/v2alpha2"
)

// In dry-run (no client) the Reporter still reports: a Warning Event on the workload and the
// Karta, the gauge and counter; when the finding goes, a Normal GangFindingCleared Event on both.
// An unchanged finding is not sent again before ResendInterval.
func TestReporterDryRunReportsAndClears(t *testing.T) {
	tr := NewTracker()
	p := seedPlan(t, 2)
	tr.SetPlan(p, Definition{Name: "reporter-test", Source: "cluster", KartaUID: "k-uid"}, t0)
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
	tr := NewTracker()
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
	tr := NewTracker()
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
	tr := NewTracker()
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
