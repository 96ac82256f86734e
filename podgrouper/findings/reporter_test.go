package findings

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/record"
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
