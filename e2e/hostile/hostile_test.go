//go:build e2e

package hostile

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/webhook"
)

// appWrapperLabel is the label the AppWrapper controller puts on every pod of an AppWrapper,
// with the AppWrapper's name (the catalog definition's pod selector reads it).
const appWrapperLabel = "workload.codeflare.dev/appwrapper"

// hostileCase is an AppWrapper whose author wrote a hostile string (or shape) where the
// catalog's AppWrapper definition reads it, one per builtin class its expressions use.
type hostileCase struct {
	name       string
	components []any
}

// jobTemplate is a wrapped batch/v1 Job as in AppWrapper's samples (one container, no GPU).
func jobTemplate() map[string]any {
	return map[string]any{"apiVersion": "batch/v1", "kind": "Job", "spec": map[string]any{
		"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
			"containers": []any{map[string]any{"name": "c", "image": "registry.example/none:0"}}}}}}
}

// hostileCases: 300 KB of author text in the pod set path (split into 150,000 steps, the input
// the catalog's old `scan` took 47 s on; 300,000 digits exploded, checked and converted by
// tonumber; 100,000 index steps given to getpath); a wrapped JobSet of 500 replicated jobs
// whose replicas, parallelism and completions are all 2^31-1 (the inferred pod counts multiply
// and add to about 2.3e21, past int64); and 8,000 components inferred one by one. Each object stays under
// etcd's 1.5 MiB request limit, so the API server stores it as written.
func hostileCases() []hostileCase {
	many := make([]any, 8000)
	for i := range many {
		many[i] = map[string]any{"template": map[string]any{"apiVersion": "v1", "kind": "Pod"}}
	}
	const maxInt32 = int64(1<<31 - 1)
	rjs := make([]any, 500)
	for i := range rjs {
		rjs[i] = map[string]any{"name": fmt.Sprintf("r%d", i), "replicas": maxInt32, "template": map[string]any{
			"spec": map[string]any{"parallelism": maxInt32, "completions": maxInt32, "template": map[string]any{}}}}
	}
	jobSet := map[string]any{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "spec": map[string]any{"replicatedJobs": rjs}}
	return []hostileCase{
		{"path-dots", []any{map[string]any{"template": jobTemplate(),
			"podSets": []any{map[string]any{"path": strings.Repeat("a.", 150_000), "replicas": int64(2)}}}}},
		{"path-digits", []any{map[string]any{"template": jobTemplate(),
			"podSets": []any{map[string]any{"path": "template.spec." + strings.Repeat("1", 300_000), "replicas": int64(2)}}}}},
		{"path-indices", []any{map[string]any{"template": jobTemplate(),
			"podSets": []any{map[string]any{"path": strings.Repeat("[0]", 100_000), "replicas": int64(2)}}}}},
		{"jobset-products", []any{map[string]any{"template": jobSet}}},
		{"many-components", many},
	}
}

// TestHostileAppWrapperPodAdmitted: for each hostile AppWrapper, a pod created through the API
// server, which calls gangmap's webhook with failurePolicy Fail and timeoutSeconds 10, is
// created: the webhook answered within timeoutSeconds (else the API server fails the create),
// and it grouped the pod or, its plan failing, held it from KAI's pod-grouper (the skip
// annotation only). Afterwards the grouper still groups a normal AppWrapper's pod.
func TestHostileAppWrapperPodAdmitted(t *testing.T) {
	ctx := context.Background()
	requireFailingWebhook(ctx, t)
	ns := "hostile"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	for _, c := range hostileCases() {
		t.Run(c.name, func(t *testing.T) {
			aw := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
				"metadata": map[string]any{"name": c.name, "namespace": ns},
				"spec":     map[string]any{"components": c.components},
			}}
			require.NoError(t, cp.Client.Create(ctx, aw), "the API server stores the AppWrapper as written")
			pod := podOf(ctx, t, aw)
			before := admissions(t)
			start := time.Now()
			err := cp.Client.Create(ctx, pod)
			elapsed := time.Since(start)
			require.NoError(t, err, "pod create (a webhook answer later than %ds fails it)", webhookTimeoutSeconds)
			delta := admissions(t).minus(before)
			assert.Zero(t, delta[webhook.ResultSkipped], "the webhook judged the pod not gangmap's: the case tests nothing")
			assert.GreaterOrEqual(t, delta[webhook.ResultMutated]+delta[webhook.ResultError], 1.0, "the API server called gangmap's webhook for the pod")
			require.Len(t, pod.Spec.Containers, 1)
			assert.Equal(t, "registry.example/none:0", pod.Spec.Containers[0].Image)
			outcome := "held from KAI's pod-grouper"
			if pg := pod.Annotations[kaikeys.PodGroupName]; pg != "" {
				outcome = "grouped into " + pg
			} else {
				assert.Empty(t, pod.Labels[kaikeys.SubGroupName], "a pod held carries no sub-group")
				assert.Equal(t, "true", pod.Annotations[kaikeys.SkipPodGrouper],
					"a pod of a defined kind whose plan failed is held from KAI's pod-grouper (webhook.PodMutator.hold), never left for it to group alone")
			}
			t.Logf("%s: pod %s in %v (webhook results %v)", c.name, outcome, elapsed.Round(time.Millisecond), delta)
		})
	}
	t.Run("normal-workload-after", func(t *testing.T) { requireNormalAppWrapperGrouped(ctx, t, ns) })
}

// requireFailingWebhook checks the configuration the API server uses: failurePolicy Fail and
// timeoutSeconds above the grouper's decision timeout (the webhook's own bound).
func requireFailingWebhook(ctx context.Context, t *testing.T) {
	t.Helper()
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Name: webhookConfigName}, cfg))
	require.Len(t, cfg.Webhooks, 1)
	wh := cfg.Webhooks[0]
	require.Equal(t, admissionregistrationv1.Fail, *wh.FailurePolicy)
	require.Equal(t, int32(webhookTimeoutSeconds), *wh.TimeoutSeconds)
	require.Less(t, grouperOptions.WebhookTimeout, time.Duration(*wh.TimeoutSeconds)*time.Second)
}

// requireNormalAppWrapperGrouped: AppWrapper's wrapped-gpu-job sample (a batch/v1 Job of one pod
// with 4 GPUs, pod sets inferred) gets its PodGroup, as on a grouper that never saw a hostile
// workload: minMember 1 (Job parallelism defaults to 1), 4 GPUs.
func requireNormalAppWrapperGrouped(ctx context.Context, t *testing.T, ns string) {
	objs, err := cp.ApplyFile(ctx, "testdata/appwrapper-wrapped-gpu-job-req-and-limit.yaml", ns)
	require.NoError(t, err)
	require.Len(t, objs, 1)
	pod := podOf(ctx, t, objs[0])
	before := admissions(t)
	require.NoError(t, cp.Client.Create(ctx, pod))
	delta := admissions(t).minus(before)
	assert.GreaterOrEqual(t, delta[webhook.ResultMutated]+delta[webhook.ResultError], 1.0, "the API server called gangmap's webhook for the pod")
	got, err := cp.WaitForPodAnnotation(ctx, ns, pod.Name, kaikeys.PodGroupName, time.Minute)
	require.NoError(t, err)
	pg, err := cp.WaitForPodGroup(ctx, ns, got.Annotations[kaikeys.PodGroupName], time.Minute)
	require.NoError(t, err)
	require.NotNil(t, pg.Spec.MinMember)
	assert.Equal(t, int32(1), *pg.Spec.MinMember)
	assert.Equal(t, "4", pg.Annotations[kaikeys.GPUs])
}

// podOf makes the first pod of aw as its controller would: for a wrapped batch/v1 Job, the Job
// (owned by the AppWrapper) and a pod of its template owned by the Job; otherwise a pod owned by
// the AppWrapper. Every pod carries the AppWrapper's label and asks for KAI's scheduler (the
// sample's template names no scheduler; a KAI user adds it).
func podOf(ctx context.Context, t *testing.T, aw *unstructured.Unstructured) *corev1.Pod {
	t.Helper()
	labels := map[string]string{appWrapperLabel: aw.GetName()}
	comps, _, _ := unstructured.NestedSlice(aw.Object, "spec", "components")
	require.NotEmpty(t, comps)
	tpl, _ := comps[0].(map[string]any)["template"].(map[string]any)
	if tpl["apiVersion"] == "batch/v1" && tpl["kind"] == "Job" {
		job := &batchv1.Job{}
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(tpl, job))
		job.Name, job.Namespace = aw.GetName(), aw.GetNamespace()
		job.OwnerReferences = []metav1.OwnerReference{framework.UnstructuredOwnerRef(aw)}
		job.Spec.Template.Labels = labels
		// The author names KAI's scheduler in the wrapped template, as KAI requires; the API
		// server would default it to default-scheduler.
		job.Spec.Template.Spec.SchedulerName = "kai-scheduler"
		require.NoError(t, cp.Client.Create(ctx, job))
		return framework.PodFromTemplate(&job.Spec.Template, aw.GetNamespace(), aw.GetName()+"-0", labels,
			framework.OwnerRef(job, "batch/v1", "Job"))
	}
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "c", Image: "registry.example/none:0"}}}}
	return framework.PodFromTemplate(tmpl, aw.GetNamespace(), aw.GetName()+"-0", labels, framework.UnstructuredOwnerRef(aw))
}

// webhookResults are gangmap_webhook_admissions_total by result, read from the in-process
// grouper's metrics registry.
type webhookResults map[string]float64

func admissions(t *testing.T) webhookResults {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	require.NoError(t, err)
	out := webhookResults{}
	for _, f := range families {
		if f.GetName() != "gangmap_webhook_admissions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

func (r webhookResults) minus(before webhookResults) webhookResults {
	out := webhookResults{}
	for k, v := range r {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
