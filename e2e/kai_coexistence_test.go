//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/manifest"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/controller"
)

var customJobGVK = schema.GroupVersionKind{Group: "e2e.example.com", Version: "v1", Kind: "CustomJob"}

// TestWebhookGroupsPodAtCreation: a pod of a defined, non-native kind created through the API
// carries KAI's skip annotation, its PodGroup name and its sub-group label in the create response
// itself (gangmap's webhook), with no KAI pod-grouper anywhere; a pod created with generateName
// too. The controller then writes the PodGroup and has nothing to repair (no Warning Event).
func TestWebhookGroupsPodAtCreation(t *testing.T) {
	ctx := context.Background()
	ns := "webhook"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	job := createCustomJob(t, ctx, ns, "wh", 2, "")
	pgName := fmt.Sprintf("pg-%s-customjob", job.GetUID())

	coordinator := customJobPod(t, job, "coordinator", "wh-coordinator-0")
	worker := customJobPod(t, job, "worker", "")
	worker.GenerateName = "wh-worker-"
	for _, pod := range []*corev1.Pod{coordinator, worker} {
		require.NoError(t, cp.Client.Create(ctx, pod))
		// cp.Client.Create fills pod from the API server's create response.
		assert.Equal(t, "true", pod.Annotations[kaikeys.SkipPodGrouper], pod.Name)
		assert.Equal(t, pgName, pod.Annotations[kaikeys.PodGroupName], pod.Name)
		assert.Equal(t, pod.Labels["e2e.example.com/role"], pod.Labels[kaikeys.SubGroupName], pod.Name)
	}
	_, err := cp.WaitForPodGroup(ctx, ns, pgName, timeout)
	require.NoError(t, err)
	// The controller agrees with the webhook: nothing to patch, no repair Event.
	time.Sleep(time.Second)
	for _, pod := range []*corev1.Pod{coordinator, worker} {
		got := &corev1.Pod{}
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(pod), got))
		assert.Equal(t, pod.ResourceVersion, got.ResourceVersion, "the controller did not patch %s", pod.Name)
	}
	assert.False(t, hasEvent(t, ctx, ns, job.GetName(), controller.ReasonRepaired), "no repair Event on the workload")
}

// TestNativeKindPodUntouchedByWebhookAndController: a pod whose top owner is a batch/v1 Job (KAI
// groups it natively) is admitted unchanged by the webhook and never written by the controller.
func TestNativeKindPodUntouchedByWebhookAndController(t *testing.T) {
	ctx := context.Background()
	ns := "webhook-native"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	ensureCustomJobDefinition(t, ctx)
	pod := nativeJobPod(t, ctx, ns)
	assert.Empty(t, pod.Annotations[kaikeys.SkipPodGrouper], "the create response is unchanged")
	assert.Empty(t, pod.Annotations[kaikeys.PodGroupName], "the create response is unchanged")
	assert.Empty(t, pod.Labels[kaikeys.SubGroupName], "the create response is unchanged")
	time.Sleep(2 * time.Second)
	assertLeftAlone(t, ctx, pod)
}

// TestRepairWhenWebhookNotCalled: in a namespace the webhook's namespace selector excludes (as
// when the webhook is down: failurePolicy Ignore admits the pod unchanged), the pod is created
// without gangmap's labels, and the controller repairs it within seconds, with a Warning Event on
// the workload (once its repairs are quiet, 5 s) saying KAI may already have grouped it and that
// this grouper serves the webhook, so the call failed or a selector left the pod out.
func TestRepairWhenWebhookNotCalled(t *testing.T) {
	ctx := context.Background()
	ns := "no-webhook"
	require.NoError(t, cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{webhookLabel: "disabled"}}}))
	job := createCustomJob(t, ctx, ns, "repair", 2, "")
	pgName := fmt.Sprintf("pg-%s-customjob", job.GetUID())

	pod := customJobPod(t, job, "worker", "repair-worker-0")
	created := time.Now()
	require.NoError(t, cp.Client.Create(ctx, pod))
	assert.Empty(t, pod.Annotations[kaikeys.PodGroupName], "the webhook was not called")
	assert.Empty(t, pod.Annotations[kaikeys.SkipPodGrouper], "the webhook was not called")

	got, err := cp.WaitForPodAnnotation(ctx, ns, pod.Name, kaikeys.SkipPodGrouper, 10*time.Second)
	require.NoError(t, err)
	t.Logf("repaired %v after creation", time.Since(created).Round(10*time.Millisecond))
	assert.Equal(t, pgName, got.Annotations[kaikeys.PodGroupName])
	assert.Equal(t, "worker", got.Labels[kaikeys.SubGroupName])
	assertEvent(t, ctx, ns, job.GetName(), controller.ReasonRepaired, "labelled 1 pod after creation (repair-worker-0): 1 joined PodGroup "+pgName)
	assertEvent(t, ctx, ns, job.GetName(), controller.ReasonRepaired, "this grouper serves gangmap's admission webhook, so the API server's call to it failed or timed out")
	assert.False(t, hasEvent(t, ctx, ns, pod.Name, controller.ReasonRepaired), "no repair Event on the pod itself")
	_, err = cp.WaitForPodGroup(ctx, ns, pgName, timeout)
	require.NoError(t, err)
}

// ensureCustomJobDefinition applies the CustomJob Karta (another test may have applied it) and
// waits until the shared grouper uses it.
func ensureCustomJobDefinition(t *testing.T, ctx context.Context) {
	t.Helper()
	_, err := cp.ApplyFile(ctx, "testdata/customjob-karta.yaml", "")
	if err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	require.NoError(t, framework.WaitFor(ctx, timeout, func(context.Context) (bool, error) {
		c := grouper.Registry.Lookup(customJobGVK)
		return c != nil && c.Loaded.Source == definitions.SourceCluster, nil
	}), "the grouper loads the CustomJob definition")
}

// createCustomJob creates testdata/customjob.yaml as name in ns with the given worker replicas
// (and schedulerName in both templates unless empty), after making sure the definition is used.
func createCustomJob(t *testing.T, ctx context.Context, ns, name string, workers int64, schedulerName string) *unstructured.Unstructured {
	t.Helper()
	ensureCustomJobDefinition(t, ctx)
	objs, err := manifest.ReadFile("testdata/customjob.yaml")
	require.NoError(t, err)
	job := objs[0]
	job.SetName(name)
	job.SetNamespace(ns)
	require.NoError(t, unstructured.SetNestedField(job.Object, workers, "spec", "worker", "replicas"))
	if schedulerName != "" {
		for _, role := range []string{"coordinator", "worker"} {
			require.NoError(t, unstructured.SetNestedField(job.Object, schedulerName, "spec", role, "template", "spec", "schedulerName"))
		}
	}
	require.NoError(t, cp.Client.Create(ctx, job))
	return job
}

// customJobPod is the pod the CustomJob operator would create for role (not created yet).
func customJobPod(t *testing.T, job *unstructured.Unstructured, role, name string) *corev1.Pod {
	t.Helper()
	return framework.PodFromTemplate(customTemplate(t, job, role), job.GetNamespace(), name, nil, framework.UnstructuredOwnerRef(job))
}

// hasEvent reports whether an Event with reason exists on the named object in ns.
func hasEvent(t *testing.T, ctx context.Context, ns, name, reason string) bool {
	t.Helper()
	evs, err := cp.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			return true
		}
	}
	return false
}
