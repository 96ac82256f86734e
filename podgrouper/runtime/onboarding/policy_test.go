package onboarding

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/definitions/onboard"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

var customJob = schema.GroupKind{Group: "e2e.example.com", Kind: "CustomJob"}

func knownCustomJob(gk schema.GroupKind) bool { return gk == customJob }

const goodPolicy = `
rules:
  - name: ml
    kinds: [{group: e2e.example.com, kind: CustomJob}]
    namespaceSelector: {matchLabels: {onboard: "yes"}}
    queue: {fromNamespaceLabel: team-queue}
    labels: {platform: ml}
  - name: fallback
    kinds: [{group: e2e.example.com, kind: CustomJob}]
    schedulerName: other-kai
    overrideScheduler: true
    queue: {value: default-queue}
`

func TestParseAndMatch(t *testing.T) {
	c, err := Parse([]byte(goodPolicy), "policy.yaml", knownCustomJob)
	require.NoError(t, err)
	assert.True(t, c.NeedsNamespaces())
	assert.Equal(t, []metav1.GroupKind{metav1.GroupKind(customJob)}, c.rules[0].Kinds)
	assert.Equal(t, map[schema.GroupKind]bool{customJob: true}, c.rules[1].kinds)

	m := c.Match(Target{Kind: customJob, NamespaceLabels: map[string]string{"onboard": "yes", "team-queue": "team-a"}}, "kai-scheduler", "kai.scheduler/queue")
	require.NotNil(t, m)
	assert.Equal(t, "ml", m.Rule)
	assert.Equal(t, "kai-scheduler", m.Settings.SchedulerName)
	assert.False(t, m.Settings.OverrideScheduler)
	assert.Equal(t, map[string]string{"kai.scheduler/queue": "team-a"}, m.Settings.DefaultLabels)
	assert.Equal(t, map[string]string{"platform": "ml"}, m.Settings.Labels)
	assert.Empty(t, m.Problem)

	// the namespace lacks the queue label: the rule is refused there (nothing set), naming the
	// field and the namespace; no later rule applies instead
	m = c.Match(Target{Kind: customJob, Namespace: "ml-b", NamespaceLabels: map[string]string{"onboard": "yes"}}, "kai-scheduler", "kai.scheduler/queue")
	require.NotNil(t, m)
	assert.Equal(t, "ml", m.Rule)
	assert.True(t, m.Settings.Empty())
	require.NotNil(t, m.Refused)
	assert.Equal(t, NamespaceProblem{Rule: "ml", Field: "rules[0].queue.fromNamespaceLabel", Namespace: "ml-b", Label: "team-queue"}, *m.Refused)
	assert.Contains(t, m.Refused.Error(), `onboarding policy rules[0].queue.fromNamespaceLabel: namespace "ml-b", selected by rule "ml", has no label "team-queue"`)

	// another namespace falls to the second rule
	m = c.Match(Target{Kind: customJob, NamespaceLabels: map[string]string{}}, "kai-scheduler", "kai.scheduler/queue")
	require.NotNil(t, m)
	assert.Equal(t, "fallback", m.Rule)
	assert.Equal(t, "other-kai", m.Settings.SchedulerName)
	assert.True(t, m.Settings.OverrideScheduler)

	// another kind: no rule
	assert.Nil(t, c.Match(Target{Kind: schema.GroupKind{Group: "batch", Kind: "Job"}}, "kai-scheduler", "q"))
}

// TestParseRefusesBadPolicies: each bad policy is refused with the field path of its problem.
func TestParseRefusesBadPolicies(t *testing.T) {
	for _, tc := range []struct{ policy, want string }{
		{`rules: [{name: a, kinds: [{group: x.io, kind: Unknown}]}]`, `rules[0].kinds[0]: Not found: "Unknown.x.io (no gangmap definition`},
		{`rules: [{name: a, kinds: [{group: e2e.example.com, kind: CustomJob}], namespaceSelector: {matchExpressions: [{key: a, operator: Bogus}]}}]`, `rules[0].namespaceSelector: Invalid value`},
		{`rules: [{name: a, kinds: [{group: e2e.example.com, kind: CustomJob}], queue: {}}]`, `rules[0].queue: Invalid value`},
		{`rules: [{name: a, kinds: [{group: e2e.example.com, kind: CustomJob}], queue: {value: q, fromOwnerLabel: k}}]`, `set exactly one of value, fromNamespaceLabel, fromOwnerLabel`},
		{`rules: [{name: a, kinds: [{group: e2e.example.com, kind: CustomJob}], queue: {fromNamespaceLabel: "bad key!"}}]`, `rules[0].queue.fromNamespaceLabel: Invalid value`},
		{`rules: [{name: a, kinds: [{group: e2e.example.com, kind: CustomJob}], labels: {"a": "bad value!"}}]`, `rules[0].labels[a]: Invalid value`},
		{`rules: [{name: a, kinds: []}]`, `rules[0].kinds: Required value`},
		{`rules: [{name: a, kinds: [{group: e2e.example.com, kind: CustomJob}]}, {name: a, kinds: [{group: e2e.example.com, kind: CustomJob}]}]`, `rules[1].name: Duplicate value`},
		{`rules: [{name: a, kinds: [{group: e2e.example.com, kind: CustomJob}], queu: {value: q}}]`, `unknown field "rules[0].queu"`},
		{"rules:\n- name: a\n  name: b\n  kinds: [{group: e2e.example.com, kind: CustomJob}]\n", `already set`},
		// KAI's grouping keys are the grouper's, per pod: an admin's rule setting them on every pod
		// (the skip annotation would hide from KAI's pod-grouper the pods gangmap does not group)
		{`rules: [{name: a, kinds: [{group: e2e.example.com, kind: CustomJob}], annotations: {kai.scheduler/skip-podgrouper: "true"}}]`, `rules[0].annotations[kai.scheduler/skip-podgrouper]: Forbidden: kai.scheduler/skip-podgrouper is set by the pod-grouper per pod`},
		{`rules: [{name: a, kinds: [{group: e2e.example.com, kind: CustomJob}], annotations: {pod-group-name: pg-1}}]`, `rules[0].annotations[pod-group-name]: Forbidden`},
		{`rules: [{name: a, kinds: [{group: e2e.example.com, kind: CustomJob}], labels: {kai.scheduler/subgroup-name: leader}}]`, `rules[0].labels[kai.scheduler/subgroup-name]: Forbidden`},
		{`rules: [{name: a, kinds: [{group: e2e.example.com, kind: CustomJob}], labels: {pod-group-name: pg-1}}]`, `rules[0].labels[pod-group-name]: Forbidden`},
	} {
		_, err := Parse([]byte(tc.policy), "p.yaml", knownCustomJob)
		require.Error(t, err, tc.policy)
		assert.Contains(t, err.Error(), tc.want, tc.policy)
		assert.True(t, strings.Contains(err.Error(), "p.yaml"), "names the file: %v", err)
	}
}

// TestGroupingKeysAreKAIs: the keys onboarding refuses are exactly KAI's pod-grouper keys that
// gangmap's webhook and controller write per pod.
func TestGroupingKeysAreKAIs(t *testing.T) {
	assert.ElementsMatch(t, []string{kaikeys.PodGroupName, kaikeys.SubGroupName, kaikeys.SkipPodGrouper}, onboard.GroupingKeys())
}

// TestSourceKeepsLastValidPolicy: a bad file is refused and the previous policy stays in force;
// a refused file naming a kind without a definition takes effect once the definition exists.
func TestSourceKeepsLastValidPolicy(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	known := false
	s := &Source{Path: p, Known: func(gk schema.GroupKind) bool { return known && gk == customJob }}

	require.NoError(t, s.Sync(ctx), "a missing file is an empty policy")
	assert.True(t, s.Current().Empty())

	require.NoError(t, os.WriteFile(p, []byte(goodPolicy), 0o600))
	require.Error(t, s.Sync(ctx), "CustomJob has no definition yet")
	assert.True(t, s.Current().Empty())
	known = true
	require.NoError(t, s.Sync(ctx), "the same file, read again once the definition exists")
	good := s.Current()
	require.False(t, good.Empty())

	require.NoError(t, os.WriteFile(p, []byte("rules: [{name: x}]"), 0o600))
	require.Error(t, s.Sync(ctx))
	assert.Same(t, good, s.Current(), "the previous policy stays")
}

// TestCheckNamespace: at load and on namespace changes, a namespace a rule selects that lacks the
// rule's queue label is a problem naming the field and the namespace; namespaces the rule does not
// select, that carry the label, or where an earlier rule covers every kind of the rule are not.
func TestCheckNamespace(t *testing.T) {
	other := schema.GroupKind{Group: "e2e.example.com", Kind: "OtherJob"}
	c, err := Parse([]byte(`
rules:
  - name: ml
    kinds: [{group: e2e.example.com, kind: CustomJob}]
    namespaceSelector: {matchLabels: {onboard: "yes"}}
    queue: {fromNamespaceLabel: team-queue}
  - name: shadowed
    kinds: [{group: e2e.example.com, kind: CustomJob}]
    queue: {fromNamespaceLabel: other-queue}
  - name: everywhere
    kinds: [{group: e2e.example.com, kind: CustomJob}, {group: e2e.example.com, kind: OtherJob}]
    queue: {fromNamespaceLabel: other-queue}
`), "p.yaml", func(gk schema.GroupKind) bool { return gk == customJob || gk == other })
	require.NoError(t, err)
	assert.True(t, c.ReadsNamespaceQueues())

	ps := c.CheckNamespace("ml-b", map[string]string{"onboard": "yes"})
	require.Len(t, ps, 2)
	assert.Equal(t, NamespaceProblem{Rule: "ml", Field: "rules[0].queue.fromNamespaceLabel", Namespace: "ml-b", Label: "team-queue"}, *ps[0])
	assert.Equal(t, NamespaceProblem{Rule: "everywhere", Field: "rules[2].queue.fromNamespaceLabel", Namespace: "ml-b", Label: "other-queue"}, *ps[1],
		"rule shadowed covers no kind rule ml does not; everywhere adds OtherJob")

	assert.Empty(t, c.CheckNamespace("ml-a", map[string]string{"onboard": "yes", "team-queue": "a", "other-queue": "b"}))
	ps = c.CheckNamespace("web", map[string]string{"other-queue": ""})
	require.Len(t, ps, 2, "an empty label value is no queue")
	assert.Equal(t, "shadowed", ps[0].Rule, "not selected by rule ml: rule shadowed applies")

	fixed, err := Parse([]byte(goodPolicy), "p.yaml", knownCustomJob)
	require.NoError(t, err)
	assert.Empty(t, fixed.CheckNamespace("x", map[string]string{}), "the fallback rule's queue is a fixed value")
	var none *Compiled
	assert.Empty(t, none.CheckNamespace("x", nil))
	assert.False(t, none.ReadsNamespaceQueues())
}

// TestOwnerLabelKeys: the top-owner label keys a policy reads are its rules' queue.fromOwnerLabel,
// each once, in rule order (the owner walk keeps only those of an owner's labels besides KAI's).
func TestOwnerLabelKeys(t *testing.T) {
	c, err := Parse([]byte(`
rules:
  - {name: a, kinds: [{group: e2e.example.com, kind: CustomJob}], queue: {fromOwnerLabel: team}}
  - {name: b, kinds: [{group: e2e.example.com, kind: CustomJob}], queue: {value: q}}
  - {name: c, kinds: [{group: e2e.example.com, kind: CustomJob}], queue: {fromOwnerLabel: example.com/queue}}
  - {name: d, kinds: [{group: e2e.example.com, kind: CustomJob}], queue: {fromOwnerLabel: team}}
`), "policy.yaml", knownCustomJob)
	require.NoError(t, err)
	assert.Equal(t, []string{"team", "example.com/queue"}, c.OwnerLabelKeys())
	good, err := Parse([]byte(goodPolicy), "policy.yaml", knownCustomJob)
	require.NoError(t, err)
	assert.Nil(t, good.OwnerLabelKeys())
	assert.Nil(t, (*Compiled)(nil).OwnerLabelKeys())
}
