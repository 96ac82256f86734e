//go:build e2e_kai

package realkai_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// llmPodSpec is a vLLM pod spec asking for gpus GPUs.
func llmPodSpec(gpus int64) map[string]any {
	return map[string]any{"containers": []any{map[string]any{"name": "main", "image": "registry.example/vllm:1",
		"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": gpus}, "requests": map[string]any{"nvidia.com/gpu": gpus}}}}}
}

// kserveLWS is the LeaderWorkerSet KServe's controller writes for one multi-node workload of an
// LLMInferenceService (kserve pkg/controller/v1alpha2/llmisvc/workload_multi_node.go
// expectedMainMultiNodeLWS / expectedPrefillMultiNodeLWS): named <llmisvc>-kserve-mn[-prefill],
// owned by the LLMInferenceService, startupPolicy LeaderCreated (every release since v0.16), size
// = parallelism data / dataLocal, the leader running spec[.prefill].template with the leader
// labels and the workers spec[.prefill].worker with the worker labels (leaderLabels,
// workerLabels; the labels the catalog definition's selectors are tested against in
// definitions/catalog operatorlabels_test.go).
func kserveLWS(svc *unstructured.Unstructured, suffix, role string, size int64, leader, worker map[string]any) *unstructured.Unstructured {
	common := map[string]any{"app.kubernetes.io/name": svc.GetName(), "app.kubernetes.io/part-of": "llminferenceservice"}
	with := func(extra map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range common {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	leaderComponent, workerComponent := "llminferenceservice-workload-leader", "llminferenceservice-workload-worker"
	if role == "prefill" {
		leaderComponent, workerComponent = leaderComponent+"-prefill", workerComponent+"-prefill"
	}
	lws := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"spec": map[string]any{"replicas": int64(1), "startupPolicy": "LeaderCreated", "leaderWorkerTemplate": map[string]any{
			"size": size,
			"leaderTemplate": map[string]any{"metadata": map[string]any{"labels": with(map[string]any{
				"app.kubernetes.io/component": leaderComponent, "kserve.io/component": "workload", "llm-d.ai/role": role})}, "spec": leader},
			"workerTemplate": map[string]any{"metadata": map[string]any{"labels": with(map[string]any{
				"app.kubernetes.io/component": workerComponent})}, "spec": worker},
		}}}}
	lws.SetName(svc.GetName() + "-kserve-mn" + suffix)
	lws.SetNamespace(svc.GetNamespace())
	lws.SetOwnerReferences([]metav1.OwnerReference{framework.UnstructuredOwnerRef(svc)})
	return lws
}

// TestLLMInferenceServiceMultiNode: a disaggregated multi-node LLMInferenceService (v1alpha2):
// decode with parallelism data 4 / dataLocal 1 (a leader and 3 workers) and prefill with data 2 /
// dataLocal 1 (a leader and 1 worker), every pod 2 GPUs: one gang of 6 pods and 12 GPUs
// (definitions/catalog serving-kserve-io-llminferenceservice-v1alpha2.yaml: one PodGroup, a
// sub-group per role, each requiring all its pods; LeaderCreated holds nothing). KServe creates
// both LeaderWorkerSets, and the LWS controller creates leaders and workers at once
// (LeaderCreated; framework.StepLeaderWorkerSet).
//   - On 5 nodes of 2 GPUs (10 GPUs) KAI binds none of the 6 pods (all-or-nothing:
//     allocate.go Execute commits a job's statement only when its gang is placed).
//   - With a sixth node KAI binds all 6.
func TestLLMInferenceServiceMultiNode(t *testing.T) {
	ctx := context.Background()
	b := newBed(t, "llmisvc-multinode", 5, 2)
	svc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService",
		"spec": map[string]any{
			"model":       map[string]any{"uri": "hf://meta-llama/Llama-3.1-70B", "name": "llama"},
			"replicas":    int64(1),
			"parallelism": map[string]any{"data": int64(4), "dataLocal": int64(1), "tensor": int64(2)},
			"template":    llmPodSpec(2),
			"worker":      llmPodSpec(2),
			"prefill": map[string]any{"replicas": int64(1), "parallelism": map[string]any{"data": int64(2), "dataLocal": int64(1), "tensor": int64(2)},
				"template": llmPodSpec(2), "worker": llmPodSpec(2)},
		}}}
	svc.SetName("llama")
	b.pin(svc)
	require.NoError(t, kai.Client.Create(ctx, svc))
	spec := svc.Object["spec"].(map[string]any)
	prefill := spec["prefill"].(map[string]any)
	for _, lws := range []*unstructured.Unstructured{
		kserveLWS(svc, "", "decode", 4, spec["template"].(map[string]any), spec["worker"].(map[string]any)),
		kserveLWS(svc, "-prefill", "prefill", 2, prefill["template"].(map[string]any), prefill["worker"].(map[string]any)),
	} {
		require.NoError(t, kai.Client.Create(ctx, lws))
		pods, err := kai.StepLeaderWorkerSet(ctx, b.ns, lws.GetName())
		require.NoError(t, err)
		require.NotEmpty(t, pods)
	}
	sel := labels.SelectorFromSet(labels.Set{"app.kubernetes.io/part-of": "llminferenceservice", "app.kubernetes.io/name": "llama"})
	all, err := kai.Place(ctx, b.ns, sel)
	require.NoError(t, err)
	require.Len(t, all.Pending, 6, "KServe and the LWS controller created 6 pods")
	grouped := map[string]bool{}
	for _, p := range all.Pending {
		got, err := kai.WaitForPodAnnotation(ctx, b.ns, p.Name, kaikeys.PodGroupName, admitTimeout)
		require.NoError(t, err, kai.Report(ctx, b.ns))
		grouped[got.Annotations[kaikeys.PodGroupName]] = true
	}
	assert.Len(t, grouped, 1, "the 6 pods are in one PodGroup")

	_, err = kai.AssertNoneBound(ctx, b.ns, sel, holdPeriod)
	require.NoError(t, err, "10 GPUs for a 12-GPU gang: KAI binds none of its pods")
	b.addNodes(t, 1, 2)
	_, err = kai.WaitAllBound(ctx, b.ns, sel, 6, admitTimeout)
	require.NoError(t, err, "12 GPUs: KAI binds the whole gang")
}
