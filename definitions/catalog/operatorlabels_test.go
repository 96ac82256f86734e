package catalog_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// operatorPod is a pod as an operator creates it: exactly the labels the operator's code sets
// (source named in each case), placed in the plan of a real manifest.
type operatorPod struct {
	file     string
	labels   map[string]string
	podGroup string
	role     string // the role (sub-group name) the pod belongs to
	subGroup bool   // whether the PodGroup has sub-groups
}

// assertOperatorPods places each pod and checks it lands in its role's sub-group.
func assertOperatorPods(t *testing.T, cases map[string]operatorPod) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := assignPod(t, tc.file, tc.labels)
			require.NoError(t, err, "a pod with the operator's labels matches no role")
			assert.Equal(t, tc.podGroup, a.PodGroup.Name)
			require.NotNil(t, a.Role)
			assert.Equal(t, tc.role, a.Role.Name)
			if !tc.subGroup {
				assert.Nil(t, a.SubGroup)
			} else if assert.NotNil(t, a.SubGroup) {
				assert.Equal(t, tc.role, a.SubGroup.Name)
			}
		})
	}
}

// TestOperatorLabelsLLMInferenceService places the pods of a multi-node, disaggregated
// LLMInferenceService (template + worker, prefill.template + prefill.worker) with the labels
// KServe's controller writes in its LeaderWorkerSet templates (kserve
// pkg/controller/llmisvc/workload_multi_node.go: expectedMainMultiNodeLWS and
// expectedPrefillMultiNodeLWS, leaderLabels / workerLabels), plus the LWS labels every LWS pod
// carries (leaderworkerset.sigs.k8s.io/name, group-index, worker-index: "0" on the leader).
// The leaders' "…-workload-leader[-prefill]" and the prefill workers' "…-worker-prefill" matched
// no role before issue 14.
func TestOperatorLabelsLLMInferenceService(t *testing.T) {
	const file = "llminferenceservice-v1alpha2-dp-ep-deepseek-pd-worker.yaml"
	const pg = "pg-deepseek-r1-0528-pd-llminferenceservice"
	lws := func(component, lwsName, workerIndex string, extra map[string]string) map[string]string {
		l := map[string]string{
			"app.kubernetes.io/component":              component,
			"app.kubernetes.io/name":                   "deepseek-r1-0528-pd",
			"app.kubernetes.io/part-of":                "llminferenceservice",
			"leaderworkerset.sigs.k8s.io/name":         lwsName,
			"leaderworkerset.sigs.k8s.io/group-index":  "0",
			"leaderworkerset.sigs.k8s.io/worker-index": workerIndex,
		}
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	leader := func(role string) map[string]string {
		return map[string]string{"kserve.io/component": "workload", "llm-d.ai/role": role}
	}
	assertOperatorPods(t, map[string]operatorPod{
		"decode leader (spec.template set)": {file,
			lws("llminferenceservice-workload-leader", "deepseek-r1-0528-pd-kserve-mn", "0", leader("decode")),
			pg, "main", true},
		"decode worker": {file,
			lws("llminferenceservice-workload-worker", "deepseek-r1-0528-pd-kserve-mn", "1", nil),
			pg, "main-worker", true},
		"prefill leader (spec.prefill.template set)": {file,
			lws("llminferenceservice-workload-leader-prefill", "deepseek-r1-0528-pd-kserve-mn-prefill", "0", leader("prefill")),
			pg, "prefill", true},
		"prefill worker": {file,
			lws("llminferenceservice-workload-worker-prefill", "deepseek-r1-0528-pd-kserve-mn-prefill", "1", nil),
			pg, "prefill-worker", true},
		// Without a leader template the LWS leader runs the worker template: the worker labels,
		// plus kserve.io/component and llm-d.ai/role, and worker-index "0".
		"prefill leader from the worker template": {file,
			lws("llminferenceservice-workload-worker-prefill", "deepseek-r1-0528-pd-kserve-mn-prefill", "0", leader("prefill")),
			pg, "prefill", true},
	})
}

// TestOperatorLabelsTrainingOperators places pods with the labels the training operators set.
func TestOperatorLabelsTrainingOperators(t *testing.T) {
	assertOperatorPods(t, map[string]operatorPod{
		// training-operator pkg/controller.v1/common/pod.go: ReconcilePods lower-cases the
		// replica type (strings.ToLower) and CreateNewPod sets GenLabels (operator-name,
		// job-name), replica-type and replica-index.
		"pytorchjob worker": {"pytorchjob-kai-elastic-min1-max3.yaml", map[string]string{
			"training.kubeflow.org/operator-name": "pytorchjob-controller",
			"training.kubeflow.org/job-name":      "elastic-example-imagenet",
			"training.kubeflow.org/replica-type":  "worker",
			"training.kubeflow.org/replica-index": "2",
		}, "pg-elastic-example-imagenet-pytorchjob", "worker", true},
		// mpi-operator pkg/controller/mpi_job_controller.go: defaultLabels(job, role) sets
		// operator-name, job-name and job-role "launcher" (newLauncherPodTemplate) or "worker"
		// (newWorker, plus replica-index). No sub-groups (KAI's MPI plugin makes none).
		"mpijob launcher": {"mpijob-tf-benchmarks-worker-gpu-limits.yaml", map[string]string{
			"training.kubeflow.org/operator-name": "mpi-operator",
			"training.kubeflow.org/job-name":      "tensorflow-benchmarks",
			"training.kubeflow.org/job-role":      "launcher",
		}, "pg-tensorflow-benchmarks-mpijob", "launcher", false},
		"mpijob worker": {"mpijob-tf-benchmarks-worker-gpu-limits.yaml", map[string]string{
			"training.kubeflow.org/operator-name": "mpi-operator",
			"training.kubeflow.org/job-name":      "tensorflow-benchmarks",
			"training.kubeflow.org/job-role":      "worker",
			"training.kubeflow.org/replica-index": "0",
		}, "pg-tensorflow-benchmarks-mpijob", "worker", false},
		// volcano pkg/controllers/job/job_controller_util.go createJobPod: task-index, job-name,
		// task-spec (the task's name), job-namespace, queue-name. Flat gang (no sub-groups).
		"volcano master": {"volcanojob-elastic-minavailable3-of-10.yaml", map[string]string{
			"volcano.sh/task-index":    "0",
			"volcano.sh/job-name":      "elastic-job",
			"volcano.sh/task-spec":     "master",
			"volcano.sh/job-namespace": "default",
			"volcano.sh/queue-name":    "default",
		}, "pg-elastic-job-job", "master", false},
		"volcano worker": {"volcanojob-elastic-minavailable3-of-10.yaml", map[string]string{
			"volcano.sh/task-index":    "3",
			"volcano.sh/job-name":      "elastic-job",
			"volcano.sh/task-spec":     "worker",
			"volcano.sh/job-namespace": "default",
			"volcano.sh/queue-name":    "default",
		}, "pg-elastic-job-job", "worker", false},
	})
}

// TestOperatorLabelsRaySparkServing places pods with the labels KubeRay, Spark, Milvus, Dynamo
// and Grove set.
func TestOperatorLabelsRaySparkServing(t *testing.T) {
	ray := func(nodeType, group string) map[string]string {
		// kuberay ray-operator/controllers/ray/common/pod.go labelPod: is-ray-node, cluster,
		// node-type ("head" | "worker"), group ("headgroup" for the head), identifier,
		// app.kubernetes.io/name and created-by.
		return map[string]string{
			"ray.io/is-ray-node":           "yes",
			"ray.io/cluster":               "raycluster-half-gpu",
			"ray.io/node-type":             nodeType,
			"ray.io/group":                 group,
			"ray.io/identifier":            "raycluster-half-gpu-" + nodeType,
			"app.kubernetes.io/name":       "kuberay",
			"app.kubernetes.io/created-by": "kuberay-operator",
		}
	}
	const rayPG = "pg-raycluster-half-gpu-raycluster"
	spark := func(role string) map[string]string {
		// Spark resource-managers/kubernetes Constants: SPARK_ROLE_LABEL "spark-role" with
		// SPARK_POD_DRIVER_ROLE "driver" / SPARK_POD_EXECUTOR_ROLE "executor", set by Spark's
		// driver and executor pod builders; spark-app-selector on both.
		return map[string]string{
			"spark-role":                    role,
			"spark-app-selector":            "spark-0123456789abcdef",
			"sparkoperator.k8s.io/app-name": "spark-pi-dynamic-allocation",
		}
	}
	const sparkPG = "pg-spark-pi-dynamic-allocation-sparkapplication"
	assertOperatorPods(t, map[string]operatorPod{
		"ray head":   {"raycluster-kai-gpu-fraction-annotation.yaml", ray("head", "headgroup"), rayPG, "headgroup", true},
		"ray worker": {"raycluster-kai-gpu-fraction-annotation.yaml", ray("worker", "shared-gpu"), rayPG, "shared-gpu", true},
		"spark driver": {"sparkapplication-dynamic-allocation-min1-max5.yaml", spark("driver"),
			sparkPG, "driver", true},
		"spark executor": {"sparkapplication-dynamic-allocation-min1-max5.yaml",
			merge(spark("executor"), map[string]string{"spark-exec-id": "1"}), sparkPG, "executor", true},
		// milvus-operator pkg/controllers: the component label value is the lower-case
		// component name (MixCoordName "mixcoord", DataNodeName "datanode", QueryNodeName
		// "querynode", ...), not the spec.components key (dataNode, queryNode).
		"milvus datanode": {"milvus-cluster-components-map-resources.yaml", map[string]string{
			"app.kubernetes.io/name":      "milvus",
			"app.kubernetes.io/instance":  "my-release",
			"app.kubernetes.io/component": "datanode",
		}, "pg-my-release-milvus", "datanode", true},
		"milvus querycoord": {"milvus-cluster-components-map-resources.yaml", map[string]string{
			"app.kubernetes.io/name":      "milvus",
			"app.kubernetes.io/instance":  "my-release",
			"app.kubernetes.io/component": "querycoord",
		}, "pg-my-release-milvus", "querycoord", true},
		// Dynamo operator (deploy/cloud/operator/internal/dynamo/graph.go): the pod label
		// nvidia.com/dynamo-component is the component name as written in the spec
		// (podLabels[KubeLabelDynamoComponent] = componentName), with the graph deployment
		// name and Dynamo namespace.
		"dynamo v1beta1 Frontend": {"dynamographdeployment-v1beta1-sglang-disagg-multinode-components-list.yaml", map[string]string{
			"nvidia.com/dynamo-component":             "Frontend",
			"nvidia.com/dynamo-graph-deployment-name": "sglang-disagg-multinode",
			"nvidia.com/dynamo-namespace":             "sglang-disagg-multinode",
		}, "pg-sglang-disagg-multinode-dynamographdeployment", "frontend", true},
		// Grove operator/internal/controller/podclique/components/pod/pod.go getLabels: the
		// PodClique's labels (part-of, podcliquescalinggroup[-replica-index]) plus podclique (the
		// PodClique's name), podcliqueset-replica-index and podgang.
		"grove scaling-group clique": {"podcliqueset-multinode-disagg-pcsg.yaml", map[string]string{
			"app.kubernetes.io/managed-by":                 "grove-operator",
			"app.kubernetes.io/part-of":                    "multinode-disaggregated",
			"grove.io/podcliqueset-replica-index":          "0",
			"grove.io/podcliquescalinggroup":               "multinode-disaggregated-0-prefill",
			"grove.io/podcliquescalinggroup-replica-index": "0",
			"grove.io/podclique":                           "multinode-disaggregated-0-prefill-0-pleader",
			"grove.io/podgang":                             "multinode-disaggregated-0",
		}, "pg-multinode-disaggregated-podcliqueset-0", "pleader", true},
	})
}

// merge returns a copy of a with b's entries added.
func merge(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// TestOperatorLabelsTrainJob places TrainJob pods with the labels JobSet writes
// (jobset.sigs.k8s.io/jobset-name, replicatedjob-name, job-index) for the replicated-job names of
// Trainer's runtimes (kubeflow/trainer pkg/constants: Node "node", DatasetInitializer
// "dataset-initializer"; pre-release v2 JobTrainerNode "trainer-node", JobInitializer
// "initializer"). Node pods join the flat gang; initializer pods never do.
func TestOperatorLabelsTrainJob(t *testing.T) {
	const file = "trainjob-flux-resourcespernode-gpu.yaml"
	jobset := func(rjob string) map[string]string {
		return map[string]string{
			"jobset.sigs.k8s.io/jobset-name":        "lammps-flux",
			"jobset.sigs.k8s.io/replicatedjob-name": rjob,
			"jobset.sigs.k8s.io/job-index":          "0",
		}
	}
	assertOperatorPods(t, map[string]operatorPod{
		"node":                     {file, jobset("node"), "pg-lammps-flux-trainjob", "node", false},
		"pre-release trainer-node": {file, jobset("trainer-node"), "pg-lammps-flux-trainjob", "node", false},
	})
	for _, rjob := range []string{"dataset-initializer", "model-initializer", "initializer"} {
		_, err := assignPod(t, file, jobset(rjob))
		require.Error(t, err, rjob)
		assert.Contains(t, err.Error(), "role initializer has 0 pods in the plan", rjob)
	}
}
