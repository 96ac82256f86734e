package onboarding

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestNamespaceAuditor: at policy load every selected namespace lacking the queue label is
// reported once (Warning Event naming the field and the namespace, gauge per rule); a check after a
// namespace change reports only what changed (the label added: Normal Event, gauge 0); a policy
// reload reports its problems again; a policy without namespace queues reads no namespace.
func TestNamespaceAuditor(t *testing.T) {
	ctx := context.Background()
	policy, err := Parse([]byte(goodPolicy), "policy.yaml", knownCustomJob)
	require.NoError(t, err)
	ns := func(name string, labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	c := fake.NewClientBuilder().WithObjects(
		ns("ml-a", map[string]string{"onboard": "yes", "team-queue": "a"}),
		ns("ml-b", map[string]string{"onboard": "yes"}),
		ns("web", nil),
	).Build()
	rec := record.NewFakeRecorder(20)
	current := policy
	a := &NamespaceAuditor{Policy: func() *Compiled { return current }, Namespaces: c, Recorder: rec}

	require.NoError(t, a.Audit(ctx, true))
	ev := drain(rec)
	require.Len(t, ev, 1, "only ml-b: web is not selected, ml-a has the label")
	assert.True(t, strings.HasPrefix(ev[0], `Warning `+QueueMissingReason+` onboarding policy rules[0].queue.fromNamespaceLabel: namespace "ml-b"`), ev[0])
	assert.Equal(t, 1.0, testutil.ToFloat64(namespaceProblems.WithLabelValues("ml")))

	require.NoError(t, a.Audit(ctx, false))
	assert.Empty(t, drain(rec), "nothing changed: not reported again")

	require.NoError(t, a.Audit(ctx, true))
	assert.Len(t, drain(rec), 1, "a policy load reports its problems again")

	b := ns("ml-b", map[string]string{"onboard": "yes", "team-queue": "b"})
	require.NoError(t, c.Update(ctx, b))
	require.NoError(t, a.Audit(ctx, false))
	ev = drain(rec)
	require.Len(t, ev, 1)
	assert.True(t, strings.HasPrefix(ev[0], "Normal "+QueueFoundReason+" onboarding rule ml"), ev[0])
	assert.Equal(t, 0, testutil.CollectAndCount(namespaceProblems), "no rule refused anywhere")

	current, err = Parse([]byte("rules: [{name: fixed, kinds: [{group: e2e.example.com, kind: CustomJob}], queue: {value: q}}]"), "p.yaml", knownCustomJob)
	require.NoError(t, err)
	a.Namespaces = nil // a policy without namespace queues must not read namespaces
	require.NoError(t, a.Audit(ctx, true))
	assert.Empty(t, drain(rec))
}
