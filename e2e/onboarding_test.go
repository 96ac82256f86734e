//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// onboardLabel=yes on a namespace selects it for the shared grouper's onboarding policy.
const (
	onboardLabel    = "gangmap.io/onboard"
	teamQueueLabel  = "e2e.example.com/team-queue"
	onboardedByKey  = "e2e.example.com/onboarded-by"
	onboardingRule  = "jobsets"
	onboardingQueue = "team-a"
)

// writeOnboardingPolicy writes the shared grouper's onboarding policy into a new temporary
// directory: JobSet pods in namespaces labelled onboardLabel=yes get kai-scheduler, the queue of
// their namespace's teamQueueLabel and the label onboardedByKey=gangmap.
func writeOnboardingPolicy() (string, error) {
	dir, err := os.MkdirTemp("", "gangmap-e2e-onboarding-")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "policy.yaml")
	policy := `rules:
  - name: ` + onboardingRule + `
    kinds: [{group: jobset.x-k8s.io, kind: JobSet}]
    namespaceSelector: {matchLabels: {"` + onboardLabel + `": "yes"}}
    queue: {fromNamespaceLabel: "` + teamQueueLabel + `"}
    labels: {"` + onboardedByKey + `": gangmap}
`
	return p, os.WriteFile(p, []byte(policy), 0o600)
}

// unscheduledJobSet is the seed JobSet as a user writes it before onboarding: no scheduler name of
// KAI's. Its templates say default-scheduler, the name the API server gives a pod that names none
// (framework.PodFromTemplate would otherwise put kai-scheduler on a pod without one).
func unscheduledJobSet(t *testing.T, ns string) *unstructured.Unstructured {
	js, err := framework.ReadObject("testdata/jobset-leader-workers.yaml")
	require.NoError(t, err)
	js.SetNamespace(ns)
	rjs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	for _, rj := range rjs {
		require.NoError(t, unstructured.SetNestedField(rj.(map[string]any), "default-scheduler", "template", "spec", "template", "spec", "schedulerName"))
	}
	require.NoError(t, unstructured.SetNestedSlice(js.Object, rjs, "spec", "replicatedJobs"))
	return js
}

// TestOnboardingPolicy: the onboarding policy on the real API server. In a selected namespace the
// pods of a JobSet whose templates name no scheduler carry kai-scheduler, their namespace's queue
// and the policy's label from creation (the API server stored them so), and they are grouped into
// the JobSet's PodGroup with that queue; in a namespace outside the selector the same JobSet's
// pods are untouched (default-scheduler, no PodGroup).
func TestOnboardingPolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	in, out := "onboard-in", "onboard-out"
	for name, labels := range map[string]map[string]string{
		in:  {onboardLabel: "yes", teamQueueLabel: onboardingQueue},
		out: {teamQueueLabel: onboardingQueue},
	} {
		require.NoError(t, cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}))
	}

	js := unscheduledJobSet(t, in)
	require.NoError(t, cp.Client.Create(ctx, js))
	pods, err := cp.RunJobSet(ctx, js)
	require.NoError(t, err)
	require.Len(t, pods, 3)
	var pgName string
	for _, p := range pods {
		stored := &corev1.Pod{}
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(p), stored))
		assert.Equal(t, "kai-scheduler", stored.Spec.SchedulerName, p.Name)
		assert.Equal(t, onboardingQueue, stored.Labels[kaikeys.DefaultQueueLabel], p.Name)
		assert.Equal(t, "gangmap", stored.Labels[onboardedByKey], p.Name)
		assert.Equal(t, "true", stored.Annotations[kaikeys.SkipPodGrouper], p.Name)
		require.NotEmpty(t, stored.Annotations[kaikeys.PodGroupName], "%s grouped at creation", p.Name)
		pgName = stored.Annotations[kaikeys.PodGroupName]
	}
	pg, err := cp.WaitForPodGroup(ctx, in, pgName, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, onboardingQueue, pg.Spec.Queue)
	require.NotNil(t, pg.Spec.MinSubGroup)
	assert.Equal(t, int32(2), *pg.Spec.MinSubGroup, "the seed JobSet's gang: leader and workers")

	other := unscheduledJobSet(t, out)
	require.NoError(t, cp.Client.Create(ctx, other))
	otherPods, err := cp.RunJobSet(ctx, other)
	require.NoError(t, err)
	for _, p := range otherPods {
		stored := &corev1.Pod{}
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(p), stored))
		assert.Equal(t, "default-scheduler", stored.Spec.SchedulerName, p.Name)
		assert.NotContains(t, stored.Labels, onboardedByKey, p.Name)
		assert.NotContains(t, stored.Annotations, kaikeys.PodGroupName, p.Name)
	}
	pgs, err := cp.PodGroups(ctx, out)
	require.NoError(t, err)
	assert.Empty(t, pgs)
}

// TestOnboardingPolicyNamespaceWithoutQueue: a namespace the policy's rule selects but which lacks
// the label the rule takes the queue from is reported as soon as it exists (the grouper's check
// on namespace changes): a Warning Event on the Namespace naming the policy field and the
// namespace, and the gangmap_onboarding_namespace_problems gauge. Pod creation there is never
// blocked: the JobSet's pods are stored unchanged (default-scheduler, no PodGroup), with a
// Warning Event on the JobSet. Once the namespace gets the label the problem is cleared (a
// Normal Event, gauge 0) and the next JobSet there is onboarded with that queue.
func TestOnboardingPolicyNamespaceWithoutQueue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := "onboard-noqueue"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{onboardLabel: "yes"}}}
	require.NoError(t, cp.Client.Create(ctx, ns))

	missing := waitNamespaceEvent(ctx, t, name, "GangmapOnboardingQueueMissing")
	assert.Equal(t, corev1.EventTypeWarning, missing.Type)
	assert.Contains(t, missing.Message, `onboarding policy rules[0].queue.fromNamespaceLabel: namespace "`+name+`", selected by rule "`+onboardingRule+`", has no label "`+teamQueueLabel+`"`)
	m, err := framework.GatherMetrics()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, framework.Sum(m, "gangmap_onboarding_namespace_problems", `rule="`+onboardingRule+`"`), 1.0)

	js := unscheduledJobSet(t, name)
	js.SetName("not-onboarded")
	require.NoError(t, cp.Client.Create(ctx, js))
	pods, err := cp.RunJobSet(ctx, js)
	require.NoError(t, err, "pod creation is never blocked")
	require.Len(t, pods, 3)
	for _, p := range pods {
		stored := &corev1.Pod{}
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(p), stored))
		assert.Equal(t, "default-scheduler", stored.Spec.SchedulerName, p.Name)
		assert.NotContains(t, stored.Labels, onboardedByKey, p.Name)
		assert.NotContains(t, stored.Annotations, kaikeys.PodGroupName, p.Name)
	}
	pgs, err := cp.PodGroups(ctx, name)
	require.NoError(t, err)
	assert.Empty(t, pgs)
	require.Eventually(t, func() bool {
		list := &corev1.EventList{}
		if err := cp.Client.List(ctx, list, client.InNamespace(name)); err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == js.GetName() && e.Reason == "GangmapOnboarded" && e.Type == corev1.EventTypeWarning &&
				strings.Contains(e.Message, "Pods not onboarded: onboarding policy rules[0].queue.fromNamespaceLabel") {
				return true
			}
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "Warning Event on the JobSet")

	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(ns), ns))
	ns.Labels[teamQueueLabel] = onboardingQueue
	require.NoError(t, cp.Client.Update(ctx, ns))
	found := waitNamespaceEvent(ctx, t, name, "GangmapOnboardingQueueFound")
	assert.Equal(t, corev1.EventTypeNormal, found.Type)

	next := unscheduledJobSet(t, name)
	require.NoError(t, cp.Client.Create(ctx, next))
	pods, err = cp.RunJobSet(ctx, next)
	require.NoError(t, err)
	for _, p := range pods {
		stored := &corev1.Pod{}
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(p), stored))
		assert.Equal(t, "kai-scheduler", stored.Spec.SchedulerName, p.Name)
		assert.Equal(t, onboardingQueue, stored.Labels[kaikeys.DefaultQueueLabel], p.Name)
	}
}

// waitNamespaceEvent waits for an Event with reason on Namespace name (client-go records Events
// of cluster-scoped objects in the default namespace).
func waitNamespaceEvent(ctx context.Context, t *testing.T, name, reason string) *corev1.Event {
	t.Helper()
	var found *corev1.Event
	require.Eventually(t, func() bool {
		list := &corev1.EventList{}
		if err := cp.Client.List(ctx, list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			return false
		}
		for i := range list.Items {
			e := &list.Items[i]
			if e.InvolvedObject.Kind == "Namespace" && e.InvolvedObject.Name == name && e.Reason == reason {
				found = e
				return true
			}
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "Event %s on namespace %s", reason, name)
	return found
}
