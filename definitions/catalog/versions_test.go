package catalog_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Served API versions the catalog lacked (issue 14 item 4): each has its own definition, keyed
// by GVK, tested on the framework's own samples at a release that wrote that version.

// TestServedVersionsHaveTheirOwnDefinitions: every served version named below resolves to its
// own catalog file, beside the newer version's.
func TestServedVersionsHaveTheirOwnDefinitions(t *testing.T) {
	reg := catalogRegistry(t)
	for gvk, name := range map[schema.GroupVersionKind]string{
		{Group: "serving.kserve.io", Version: "v1alpha1", Kind: "LLMInferenceService"}: "serving-kserve-io-llminferenceservice-v1alpha1",
		{Group: "serving.kserve.io", Version: "v1alpha2", Kind: "LLMInferenceService"}: "serving-kserve-io-llminferenceservice-v1alpha2",
		{Group: "ray.io", Version: "v1alpha1", Kind: "RayCluster"}:                     "ray-io-raycluster-v1alpha1",
		{Group: "ray.io", Version: "v1alpha1", Kind: "RayJob"}:                         "ray-io-rayjob-v1alpha1",
		{Group: "ray.io", Version: "v1alpha1", Kind: "RayService"}:                     "ray-io-rayservice-v1alpha1",
	} {
		c := reg.Lookup(gvk)
		if assert.NotNil(t, c, "%s", gvk) {
			assert.Equal(t, name, c.Name(), "%s", gvk)
		}
	}
	// AppWrapper v1beta1 is not served by the AppWrapper operator (its CRD has only v1beta2).
	assert.Nil(t, reg.Lookup(schema.GroupVersionKind{Group: "workload.codeflare.dev", Version: "v1beta1", Kind: "AppWrapper"}))
}

// LLMInferenceService v1alpha1 on KServe v0.16.0's own samples (the release whose controller
// writes v1alpha1 in its children's owner references). Same roles and sizes as v1alpha2, but
// v0.16 creates the multi-node LeaderWorkerSets with startupPolicy LeaderCreated
// (workload_multi_node.go): workers exist as soon as their leader does, so they are required.
func TestLLMInferenceServiceV1alpha1(t *testing.T) {
	cases := map[string]planWant{
		// data 16 / dataLocal 8 = groups of 2 pods (a leader + 1 worker) for main and prefill,
		// replicas 1 each, 8 GPUs a pod; the router scheduler has a template here: 1 pod, no GPU.
		"llminferenceservice-v1alpha1-dp-ep-deepseek-pd-worker.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-deepseek-r1-0528-pd-llminferenceservice", minSubGroup: 5, pods: 5,
				subGroups: []subGroupWant{{"main", 1, 1}, {"main-worker", 1, 1}, {"prefill", 1, 1}, {"prefill-worker", 1, 1}, {"router-scheduler", 1, 1}},
			}},
			roles: []roleWant{
				{"main", 1, 1, 1, 1, 8},
				{"main-worker", 1, 1, 1, 1, 8}, // LeaderCreated: required
				{"prefill", 1, 1, 1, 1, 8},
				{"prefill-worker", 1, 1, 1, 1, 8},
				{"router-scheduler", 1, 1, 1, 1, 0}, // router.scheduler.template, one pod
			},
			totalGPUs: 32,
		},
		// P/D on one node each: main replicas 1 + prefill replicas 2, 1 GPU a pod; the scheduler's
		// template is in the object: 1 pod.
		"llminferenceservice-v1alpha1-pd-qwen-gpu.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-qwen2-7b-instruct-pd-llminferenceservice", minSubGroup: 3, pods: 4,
				subGroups: []subGroupWant{{"main", 1, 1}, {"prefill", 2, 2}, {"router-scheduler", 1, 1}},
			}},
			roles: []roleWant{
				{"main", 1, 1, 1, 1, 1},
				{"main-worker", 0, 0, 0, 0, 0},
				{"prefill", 2, 2, 2, 2, 1},
				{"prefill-worker", 0, 0, 0, 0, 0},
				{"router-scheduler", 1, 1, 1, 1, 0},
			},
			totalGPUs: 3,
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// TestLLMInferenceServiceV1alpha1Labels places pods with the labels KServe v0.16.0's controller
// writes (pkg/controller/v1alpha1/llmisvc/workload_multi_node.go expectedMainMultiNodeLWS /
// expectedPrefillMultiNodeLWS leaderLabels and workerLabels, workload_single_node.go
// singleNodeLabels / expectedPrefillMainDeployment, scheduler.go) plus the LWS pod labels.
func TestLLMInferenceServiceV1alpha1Labels(t *testing.T) {
	const file = "llminferenceservice-v1alpha1-dp-ep-deepseek-pd-worker.yaml"
	const pg = "pg-deepseek-r1-0528-pd-llminferenceservice"
	pod := func(component, workerIndex string) map[string]string {
		l := map[string]string{
			"app.kubernetes.io/component": component,
			"app.kubernetes.io/name":      "deepseek-r1-0528-pd",
			"app.kubernetes.io/part-of":   "llminferenceservice",
		}
		if workerIndex != "" {
			l["leaderworkerset.sigs.k8s.io/group-index"] = "0"
			l["leaderworkerset.sigs.k8s.io/worker-index"] = workerIndex
		}
		return l
	}
	assertOperatorPods(t, map[string]operatorPod{
		"decode leader":    {file, pod("llminferenceservice-workload-leader", "0"), pg, "main", true},
		"decode worker":    {file, pod("llminferenceservice-workload-worker", "1"), pg, "main-worker", true},
		"prefill leader":   {file, pod("llminferenceservice-workload-leader-prefill", "0"), pg, "prefill", true},
		"prefill worker":   {file, pod("llminferenceservice-workload-worker-prefill", "1"), pg, "prefill-worker", true},
		"router scheduler": {file, pod("llminferenceservice-router-scheduler", ""), pg, "router-scheduler", true},
	})
}

// Ray v1alpha1 on KubeRay v0.6.0's own samples (the last minor release whose samples are
// v1alpha1). v1alpha1 has no numOfHosts: one pod per replica. Desired replicas = replicas
// clamped to [minReplicas, maxReplicas] (KubeRay); the gang by KAI's Ray plugin rule (default
// workerGangReplicas "minReplicas": minReplicas if > 0, else desired).
func TestRayV1alpha1(t *testing.T) {
	cases := map[string]planWant{
		// Two worker groups: small-group replicas 3 (min 1, max 10): 3 pods, KAI requires
		// minReplicas 1; medium-group replicas 1 (min 0): 1 pod, min 0 so desired 1 required.
		"raycluster-v1alpha1-heterogeneous-two-groups.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-raycluster-heterogeneous-raycluster", minSubGroup: 3, pods: 5,
				subGroups: []subGroupWant{{"headgroup", 1, 1}, {"small-group", 1, 3}, {"medium-group", 1, 1}},
			}},
			roles: []roleWant{
				{"headgroup", 1, 1, 1, 1, 0},
				{"small-group", 3, 1, 3, 1, 0},
				{"medium-group", 1, 1, 1, 1, 0},
			},
		},
		// RayJob sample (a ConfigMap beside it): head + small-group replicas 1 (min 1, max 5).
		"rayjob-v1alpha1-sample-configmap.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-rayjob-sample-rayjob", minSubGroup: 2, pods: 2,
				subGroups: []subGroupWant{{"headgroup", 1, 1}, {"small-group", 1, 1}},
			}},
			roles: []roleWant{{"headgroup", 1, 1, 1, 1, 0}, {"small-group", 1, 1, 1, 1, 0}},
		},
		// RayService sample: head + small-group replicas 1 (min 1, max 5).
		"rayservice-v1alpha1-sample.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-rayservice-sample-rayservice", minSubGroup: 2, pods: 2,
				subGroups: []subGroupWant{{"headgroup", 1, 1}, {"small-group", 1, 1}},
			}},
			roles: []roleWant{{"headgroup", 1, 1, 1, 1, 0}, {"small-group", 1, 1, 1, 1, 0}},
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// TestRayV1alpha1PodsLandInTheirGroups: KubeRay's labelPod labels (ray.io/node-type, ray.io/group)
// place a v1alpha1 cluster's pods in their node group's sub-group.
func TestRayV1alpha1PodsLandInTheirGroups(t *testing.T) {
	const file = "raycluster-v1alpha1-heterogeneous-two-groups.yaml"
	const pg = "pg-raycluster-heterogeneous-raycluster"
	pod := func(nodeType, group string) map[string]string {
		return map[string]string{"ray.io/cluster": "raycluster-heterogeneous", "ray.io/node-type": nodeType, "ray.io/group": group, "ray.io/is-ray-node": "yes"}
	}
	assertOperatorPods(t, map[string]operatorPod{
		"head":          {file, pod("head", "headgroup"), pg, "headgroup", true},
		"small worker":  {file, pod("worker", "small-group"), pg, "small-group", true},
		"medium worker": {file, pod("worker", "medium-group"), pg, "medium-group", true},
	})
}
