package catalog_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// placedPod is one pod an operator creates, with exactly the labels its code sets, and where it
// must land: PodGroup, role, and leaf sub-group ("" for a flat gang).
type placedPod struct {
	labels   map[string]string
	podGroup string
	role     string
	subGroup string
}

// assertEveryPodClaimed places every pod the operator creates for the real manifest file and
// checks that each lands in its PodGroup, role and sub-group, and that together they are the
// plan's gang: every PodGroup and leaf sub-group holds exactly its planned pods, and they meet the
// PodGroup's minimum (minMember, or every sub-group's minMember).
func assertEveryPodClaimed(t *testing.T, file string, pods []placedPod) {
	t.Helper()
	p := buildPlan(t, file)
	perPG, perSG := map[string]int64{}, map[string]int64{}
	for i, pod := range pods {
		a, err := assignPod(t, file, pod.labels)
		require.NoError(t, err, "pod %d (%v) matches no role", i, pod.labels)
		assert.Equal(t, pod.podGroup, a.PodGroup.Name, "pod %d PodGroup", i)
		require.NotNil(t, a.Role)
		assert.Equal(t, pod.role, a.Role.Name, "pod %d (%v) role", i, pod.labels)
		if pod.subGroup == "" {
			assert.Nil(t, a.SubGroup, "pod %d: flat gang", i)
		} else if assert.NotNil(t, a.SubGroup, "pod %d sub-group", i) {
			assert.Equal(t, pod.subGroup, a.SubGroup.Name, "pod %d sub-group", i)
			perSG[a.PodGroup.Name+"/"+a.SubGroup.Name]++
		}
		perPG[a.PodGroup.Name]++
	}
	require.Len(t, perPG, len(p.PodGroups), "every planned PodGroup gets pods")
	for _, pg := range p.PodGroups {
		assert.Equal(t, pg.Pods, perPG[pg.Name], "%s: the operator's pods are the planned pods", pg.Name)
		if pg.MinMember != nil {
			assert.GreaterOrEqual(t, perPG[pg.Name], int64(*pg.MinMember), "%s: the pods meet minMember", pg.Name)
		}
		for _, sg := range pg.SubGroups {
			if sg.MinSubGroup != nil { // a parent: its leaves are counted
				continue
			}
			got := perSG[pg.Name+"/"+sg.Name]
			assert.Equal(t, sg.Pods, got, "%s/%s: planned pods", pg.Name, sg.Name)
			if sg.MinMember != nil {
				assert.GreaterOrEqual(t, got, int64(*sg.MinMember), "%s/%s: the pods meet minMember", pg.Name, sg.Name)
			}
		}
	}
}

// TestOperatorPodsLeaderWorkerSet: the labels of LWS v0.10 pods. Leader pods (leader StatefulSet
// <lws>, ordinal = group index): pkg/controllers/leaderworkerset_controller.go
// constructLeaderStatefulSetApplyConfiguration sets name, worker-index "0" and
// template-revision-hash on the pod template; the pod webhook (pkg/webhooks/pod_webhook.go
// Default) adds group-index (the leader's ordinal) and group-key. Worker pods (worker StatefulSet
// <lws>-<group>, ordinals from 1): pkg/controllers/pod_controller.go
// constructWorkerStatefulSetApplyConfiguration sets group-index (copied from the leader), name,
// group-key and template-revision-hash; the webhook adds worker-index (the worker's ordinal).
func TestOperatorPodsLeaderWorkerSet(t *testing.T) {
	lwsPods := func(name string, replicas, size int) []placedPod {
		var out []placedPod
		for g := 0; g < replicas; g++ {
			pg := fmt.Sprintf("pg-%s-group-%d", name, g)
			for w := 0; w < size; w++ {
				labels := map[string]string{
					"leaderworkerset.sigs.k8s.io/name":                   name,
					"leaderworkerset.sigs.k8s.io/group-index":            fmt.Sprint(g),
					"leaderworkerset.sigs.k8s.io/worker-index":           fmt.Sprint(w),
					"leaderworkerset.sigs.k8s.io/group-key":              fmt.Sprintf("%040x", g),
					"leaderworkerset.sigs.k8s.io/template-revision-hash": "5d8f6c7b9",
				}
				role := "worker"
				if w == 0 {
					role = "leader"
				}
				out = append(out, placedPod{labels, pg, role, role})
			}
		}
		return out
	}
	// sglang: replicas 2, size 2 (leaderTemplate and workerTemplate).
	t.Run("lws-sglang-gpu-limits-only", func(t *testing.T) {
		assertEveryPodClaimed(t, "lws-sglang-gpu-limits-only.yaml", lwsPods("sglang", 2, 2))
	})
	// No leaderTemplate: the leader runs the worker template, labelled as a leader all the same.
	t.Run("lws-tpu-worker-template-only", func(t *testing.T) {
		assertEveryPodClaimed(t, "lws-tpu-worker-template-only.yaml", lwsPods("leaderworkerset-sample", 3, 4))
	})
}

// TestOperatorPodsKnativeService: Knative Serving's revision pods. The Deployment's pod
// template carries makeLabels(revision) (pkg/reconciler/revision/resources/meta.go:
// the revision's labels, serving.knative.dev/revision = revision name, revisionUID, app = the
// revision name when unset), MakeDeployment (deploy.go); the revision's labels come from its
// Configuration (pkg/reconciler/configuration/resources/revision.go updateRevisionLabels:
// configuration, service, configurationGeneration, configurationUID, serviceUID). minScale 50:
// 50 pods of revision activator-with-cc-00001, all in the flat gang.
func TestOperatorPodsKnativeService(t *testing.T) {
	var pods []placedPod
	for i := 0; i < 50; i++ {
		pods = append(pods, placedPod{map[string]string{
			"serving.knative.dev/revision":                "activator-with-cc-00001",
			"serving.knative.dev/revisionUID":             "0c7d2d6e-1f00-4d8a-9b1e-6f1d5c2a7b01",
			"app":                                         "activator-with-cc-00001",
			"serving.knative.dev/configuration":           "activator-with-cc",
			"serving.knative.dev/configurationGeneration": "1",
			"serving.knative.dev/configurationUID":        "4b9e1c2d-8a7f-4e3b-a1c0-2d9f8e7b6a50",
			"serving.knative.dev/service":                 "activator-with-cc",
			"serving.knative.dev/serviceUID":              "9f8e7d6c-5b4a-4c3d-8e2f-1a0b9c8d7e6f",
			"pod-template-hash":                           "6d5f8b7c9",
		}, "pg-activator-with-cc-service", "revision", ""})
	}
	assertEveryPodClaimed(t, "knativeservice-minscale50-maxscale100-annotations.yaml", pods)
}

// TestOperatorPodsAppWrapper: AppWrapper v1.2 (internal/controller/appwrapper/
// resource_management.go createComponent) puts workload.codeflare.dev/appwrapper=<name> on each
// wrapped resource and on the metadata of each pod set's template (merged with Kueue's
// PodSetInfos labels); nothing on the pod tells the pod set apart, so every pod lands in the first
// pod set's role ("0-0") of the one flat gang.
func TestOperatorPodsAppWrapper(t *testing.T) {
	// A wrapped batch/v1 Job of 1 pod: the Job controller adds its own labels.
	t.Run("appwrapper-wrapped-gpu-job-req-and-limit", func(t *testing.T) {
		assertEveryPodClaimed(t, "appwrapper-wrapped-gpu-job-req-and-limit.yaml", []placedPod{{map[string]string{
			"workload.codeflare.dev/appwrapper":  "sample-gpu-job",
			"batch.kubernetes.io/job-name":       "sample-gpu-job",
			"job-name":                           "sample-gpu-job",
			"batch.kubernetes.io/controller-uid": "7d3c9a1e-0b2f-4c5d-8e6f-1a2b3c4d5e6f",
		}, "pg-sample-gpu-job-appwrapper", "0-0", ""}})
	})
	// A wrapped LeaderWorkerSet, pod sets declared: 2 leaders and 3 workers (5 pods), LWS's labels
	// beside AppWrapper's.
	t.Run("appwrapper-wrapped-lws-explicit-podsets", func(t *testing.T) {
		var pods []placedPod
		for i := 0; i < 5; i++ {
			pods = append(pods, placedPod{map[string]string{
				"workload.codeflare.dev/appwrapper":        "sample-lws",
				"leaderworkerset.sigs.k8s.io/name":         "nginx-leaderworkerset",
				"leaderworkerset.sigs.k8s.io/group-index":  fmt.Sprint(i % 2),
				"leaderworkerset.sigs.k8s.io/worker-index": fmt.Sprint(i / 2),
			}, "pg-sample-lws-appwrapper", "0-0", ""})
		}
		assertEveryPodClaimed(t, "appwrapper-wrapped-lws-explicit-podsets.yaml", pods)
	})
}

// TestOperatorPodsNIMService: NIM operator v3.1 pods. Standalone (Deployment, manifests/
// deployment.yaml): app=<name> plus GetServiceLabels (api/apps/v1alpha1/nimservice_types.go:
// GetStandardLabels app.kubernetes.io/name, instance, operator-version, part-of "nim-service",
// managed-by "k8s-nim-operator", then spec.labels). Multi-node (LeaderWorkerSet <name>-lws,
// manifests/lws.yaml, size GetLWSSize = pipeline parallelism): the leader template adds
// app=<name>-lws and nim-llm-role "leader" to the service labels; the worker template sets no
// labels, so workers carry only LWS's (startupPolicy LeaderCreated there: no hold). One role, one
// flat gang: every pod whose top owner is the NIMService is claimed.
func TestOperatorPodsNIMService(t *testing.T) {
	std := func(name string) map[string]string {
		return map[string]string{
			"app.kubernetes.io/name":             name,
			"app.kubernetes.io/instance":         name,
			"app.kubernetes.io/operator-version": "v3.1.2",
			"app.kubernetes.io/part-of":          "nim-service",
			"app.kubernetes.io/managed-by":       "k8s-nim-operator",
		}
	}
	t.Run("nimservice-hpa-min1-max2", func(t *testing.T) {
		const name = "meta-llama-3-2-1b-instruct"
		assertEveryPodClaimed(t, "nimservice-hpa-min1-max2.yaml", []placedPod{{
			merge(std(name), map[string]string{"app": name, "pod-template-hash": "7f9c8d6b5"}),
			"pg-meta-llama-3-2-1b-instruct-nimservice", "nimservice", ""}})
	})
	// replicas 1, pipeline parallelism 2: one LWS group of a leader and a worker.
	t.Run("nimservice-multinode-deepseek-pp2", func(t *testing.T) {
		const pg = "pg-deepseek-r1-nimservice"
		leader := merge(std("deepseek-r1"), map[string]string{
			"app": "deepseek-r1-lws", "nim-llm-role": "leader",
			"leaderworkerset.sigs.k8s.io/name": "deepseek-r1-lws", "leaderworkerset.sigs.k8s.io/group-index": "0",
			"leaderworkerset.sigs.k8s.io/worker-index": "0",
		})
		worker := map[string]string{
			"leaderworkerset.sigs.k8s.io/name": "deepseek-r1-lws", "leaderworkerset.sigs.k8s.io/group-index": "0",
			"leaderworkerset.sigs.k8s.io/worker-index": "1",
		}
		assertEveryPodClaimed(t, "nimservice-multinode-deepseek-pp2.yaml", []placedPod{
			{leader, pg, "nimservice", ""}, {worker, pg, "nimservice", ""}})
	})
}

// TestOperatorPodsMPIJobV1: training-operator v1.9 (pkg/controller.v1/mpi/mpijob_controller.go
// newLauncher / newWorker with mpijob.go defaultLauncherLabels / defaultWorkerLabels over GenLabels
// (common/job_controller.go: operator-name "mpijob-controller", job-name); getOrCreateWorker adds
// replica-index). Launcher 1 + Worker replicas 2 = 3 pods, flat gang of 3.
func TestOperatorPodsMPIJobV1(t *testing.T) {
	const pg = "pg-tensorflow-mnist-elastic-mpijob"
	labels := func(role string) map[string]string {
		return map[string]string{
			"training.kubeflow.org/operator-name": "mpijob-controller",
			"training.kubeflow.org/job-name":      "tensorflow-mnist-elastic",
			"training.kubeflow.org/replica-type":  role,
		}
	}
	pods := []placedPod{{labels("launcher"), pg, "launcher", ""}}
	for i := 0; i < 2; i++ {
		pods = append(pods, placedPod{merge(labels("worker"), map[string]string{"training.kubeflow.org/replica-index": fmt.Sprint(i)}), pg, "worker", ""})
	}
	assertEveryPodClaimed(t, "mpijob-v1-elastic-tf-mnist.yaml", pods)
}

// TestOperatorPodsJobSet: JobSet v0.11 (pkg/controllers/jobset_controller.go constructJob calls
// labelAndAnnotateObject on the Job and its pod template: jobset-name, jobset-uid,
// replicatedjob-name, replicatedjob-replicas, global-replicas, job-index, job-key,
// job-global-index, restart-attempt, group-name, group-replicas, job-group-index). paralleljobs:
// workers (1 Job × 4 pods) and driver (1 Job × 1 pod).
func TestOperatorPodsJobSet(t *testing.T) {
	const pg = "pg-paralleljobs-jobset"
	labels := func(rjob string, global int) map[string]string {
		return map[string]string{
			"jobset.sigs.k8s.io/jobset-name":            "paralleljobs",
			"jobset.sigs.k8s.io/jobset-uid":             "2f6d1b3a-7c8e-4d9f-a0b1-c2d3e4f5a6b7",
			"jobset.sigs.k8s.io/replicatedjob-name":     rjob,
			"jobset.sigs.k8s.io/replicatedjob-replicas": "1",
			"jobset.sigs.k8s.io/global-replicas":        "2",
			"jobset.sigs.k8s.io/job-index":              "0",
			"jobset.sigs.k8s.io/job-key":                fmt.Sprintf("%040x", global),
			"jobset.sigs.k8s.io/job-global-index":       fmt.Sprint(global),
			"jobset.sigs.k8s.io/restart-attempt":        "0",
			"jobset.sigs.k8s.io/group-name":             "default",
			"jobset.sigs.k8s.io/group-replicas":         "2",
			"jobset.sigs.k8s.io/job-group-index":        fmt.Sprint(global),
			"batch.kubernetes.io/job-name":              "paralleljobs-" + rjob + "-0",
		}
	}
	var pods []placedPod
	for i := 0; i < 4; i++ {
		pods = append(pods, placedPod{labels("workers", 0), pg, "workers", "workers"})
	}
	pods = append(pods, placedPod{labels("driver", 1), pg, "driver", "driver"})
	assertEveryPodClaimed(t, "jobset-paralleljobs-two-rjobs.yaml", pods)
}

// TestOperatorPodsInferenceService: KServe v0.16 Standard mode. Component pods carry
// component = predictor | transformer | explainer and serving.kserve.io/inferenceservice
// (pkg/controller/v1beta1/inferenceservice/components/{predictor,transformer,explainer}.go
// buildObjectMeta) and app = isvc.<component name> (reconcilers/deployment/
// deployment_reconciler.go createRawDefaultDeployment, constants.GetRawServiceLabel).
// Multi-node worker pods: component predictor too (predictor.go reconcileWorker) and
// app = isvc.<predictor name>-worker (createRawWorkerDeployment, GetRawWorkerServiceLabel).
func TestOperatorPodsInferenceService(t *testing.T) {
	comp := func(isvc, component, app string) map[string]string {
		return map[string]string{
			"component":                          component,
			"serving.kserve.io/inferenceservice": isvc,
			"app":                                app,
		}
	}
	t.Run("multi-node head and worker", func(t *testing.T) {
		const pg = "pg-huggingface-llama3-inferenceservice"
		assertEveryPodClaimed(t, "inferenceservice-multinode-workerspec-pp2-tp1.yaml", []placedPod{
			{comp("huggingface-llama3", "predictor", "isvc.huggingface-llama3-predictor"), pg, "predictor", "predictor"},
			{comp("huggingface-llama3", "predictor", "isvc.huggingface-llama3-predictor-worker"), pg, "worker", "worker"},
		})
	})
	t.Run("transformer and predictor", func(t *testing.T) {
		const pg = "pg-bert-v2-inferenceservice"
		assertEveryPodClaimed(t, "inferenceservice-transformer-predictor-two-components.yaml", []placedPod{
			{comp("bert-v2", "predictor", "isvc.bert-v2-predictor"), pg, "predictor", "predictor"},
			{comp("bert-v2", "transformer", "isvc.bert-v2-transformer"), pg, "transformer", "transformer"},
		})
	})
}

// TestOperatorPodsMilvus: milvus-operator v1.3.8 pod labels (pkg/controllers/
// deployment_updater.go updatePodTemplate → desiredPodTemplateLabels with GetSelectorLabels:
// NewComponentAppLabels(instance, component name) plus milvus.io/deployment-group for a group's
// Deployment). Per-zone groups g1 and g2: streamingnode 1+1, querynode 2+2, datanode 2+2,
// proxy 1+1 pods, each component one sub-group whatever its group; and the mixcoord pod, which
// the sample does not list: the manifest has no image, so the operator's default v2.6.11 makes
// it deploy Milvus2_6Components (GetComponentsBySpec), mixcoord at replicas 1, ungrouped.
func TestOperatorPodsMilvus(t *testing.T) {
	const pg = "pg-my-release-milvus"
	pods := []placedPod{{map[string]string{
		"app.kubernetes.io/instance":   "my-release",
		"app.kubernetes.io/component":  "mixcoord",
		"app.kubernetes.io/name":       "milvus",
		"app.kubernetes.io/managed-by": "milvus-operator",
	}, pg, "mixcoord", "mixcoord"}}
	for _, c := range []struct {
		component string
		perGroup  int
	}{{"streamingnode", 1}, {"querynode", 2}, {"datanode", 2}, {"proxy", 1}} {
		for _, group := range []string{"g1", "g2"} {
			for i := 0; i < c.perGroup; i++ {
				pods = append(pods, placedPod{map[string]string{
					"app.kubernetes.io/instance":   "my-release",
					"app.kubernetes.io/component":  c.component,
					"app.kubernetes.io/name":       "milvus",
					"app.kubernetes.io/managed-by": "milvus-operator",
					"milvus.io/deployment-group":   group,
				}, pg, c.component, c.component})
			}
		}
	}
	assertEveryPodClaimed(t, "milvus-deployment-groups.yaml", pods)
}

// TestOperatorPodsTrainingAndBatch: every pod of real PyTorchJob, MPIJob v2beta1 and Volcano Job
// manifests, labelled as the operators label them (sources as in TestOperatorLabelsTrainingOperators:
// training-operator common/pod.go ReconcilePods/CreateNewPod; mpi-operator
// mpi_job_controller.go defaultLabels; volcano job_controller_util.go createJobPod).
func TestOperatorPodsTrainingAndBatch(t *testing.T) {
	t.Run("pytorchjob: 2 workers", func(t *testing.T) {
		var pods []placedPod
		for i := 0; i < 2; i++ {
			pods = append(pods, placedPod{map[string]string{
				"training.kubeflow.org/operator-name": "pytorchjob-controller",
				"training.kubeflow.org/job-name":      "elastic-example-imagenet",
				"training.kubeflow.org/replica-type":  "worker",
				"training.kubeflow.org/replica-index": fmt.Sprint(i),
			}, "pg-elastic-example-imagenet-pytorchjob", "worker", "worker"})
		}
		assertEveryPodClaimed(t, "pytorchjob-kai-elastic-min1-max3.yaml", pods)
	})
	t.Run("mpijob v2beta1: launcher and 2 workers", func(t *testing.T) {
		const pg = "pg-tensorflow-benchmarks-mpijob"
		labels := func(role string) map[string]string {
			return map[string]string{
				"training.kubeflow.org/operator-name": "mpi-operator",
				"training.kubeflow.org/job-name":      "tensorflow-benchmarks",
				"training.kubeflow.org/job-role":      role,
			}
		}
		pods := []placedPod{{labels("launcher"), pg, "launcher", ""}}
		for i := 0; i < 2; i++ {
			pods = append(pods, placedPod{merge(labels("worker"), map[string]string{"training.kubeflow.org/replica-index": fmt.Sprint(i)}), pg, "worker", ""})
		}
		assertEveryPodClaimed(t, "mpijob-tf-benchmarks-worker-gpu-limits.yaml", pods)
	})
	t.Run("volcano job: master 1, workers 9", func(t *testing.T) {
		const pg = "pg-elastic-job-job"
		labels := func(task string, index int) map[string]string {
			return map[string]string{
				"volcano.sh/job-name":      "elastic-job",
				"volcano.sh/job-namespace": "default",
				"volcano.sh/queue-name":    "default",
				"volcano.sh/task-spec":     task,
				"volcano.sh/task-index":    fmt.Sprint(index),
			}
		}
		pods := []placedPod{{labels("master", 0), pg, "master", ""}}
		for i := 0; i < 9; i++ {
			pods = append(pods, placedPod{labels("worker", i), pg, "worker", ""})
		}
		assertEveryPodClaimed(t, "volcanojob-elastic-minavailable3-of-10.yaml", pods)
	})
}

// TestOperatorPodsRaySpark: every pod of a RayCluster (kuberay common/pod.go labelPod) and of a
// SparkApplication (Spark's spark-role, spark-operator pkg/common/spark.go LabelSparkRole).
func TestOperatorPodsRaySpark(t *testing.T) {
	t.Run("raycluster: head and 2 workers", func(t *testing.T) {
		const pg = "pg-raycluster-half-gpu-raycluster"
		labels := func(nodeType, group string) map[string]string {
			return map[string]string{
				"ray.io/is-ray-node": "yes", "ray.io/cluster": "raycluster-half-gpu",
				"ray.io/node-type": nodeType, "ray.io/group": group,
				"ray.io/identifier":      "raycluster-half-gpu-" + nodeType,
				"app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator",
			}
		}
		assertEveryPodClaimed(t, "raycluster-kai-gpu-fraction-annotation.yaml", []placedPod{
			{labels("head", "headgroup"), pg, "headgroup", "headgroup"},
			{labels("worker", "shared-gpu"), pg, "shared-gpu", "shared-gpu"},
			{labels("worker", "shared-gpu"), pg, "shared-gpu", "shared-gpu"},
		})
	})
	t.Run("sparkapplication: driver and 2 executors", func(t *testing.T) {
		const pg = "pg-spark-pi-dynamic-allocation-sparkapplication"
		labels := func(role string) map[string]string {
			return map[string]string{
				"spark-role": role, "spark-app-selector": "spark-0123456789abcdef",
				"sparkoperator.k8s.io/app-name":                   "spark-pi-dynamic-allocation",
				"sparkoperator.k8s.io/launched-by-spark-operator": "true",
			}
		}
		assertEveryPodClaimed(t, "sparkapplication-dynamic-allocation-min1-max5.yaml", []placedPod{
			{labels("driver"), pg, "driver", "driver"},
			{merge(labels("executor"), map[string]string{"spark-exec-id": "1"}), pg, "executor", "executor"},
			{merge(labels("executor"), map[string]string{"spark-exec-id": "2"}), pg, "executor", "executor"},
		})
	})
}

// TestOperatorPodsLLMInferenceServiceAndTrainJob: every pod of the multi-node DP/EP
// LLMInferenceService (KServe workload_multi_node.go leaderLabels/workerLabels, LWS labels; the
// router scheduler's template is not in the object, so it has no planned pod), and the node pods
// of a TrainJob (JobSet labelAndAnnotateObject on Trainer's replicated job "node").
func TestOperatorPodsLLMInferenceServiceAndTrainJob(t *testing.T) {
	t.Run("llminferenceservice: decode and prefill leader + worker", func(t *testing.T) {
		const pg = "pg-deepseek-r1-0528-pd-llminferenceservice"
		pod := func(component, lws, index string) map[string]string {
			return map[string]string{
				"app.kubernetes.io/component": component, "app.kubernetes.io/name": "deepseek-r1-0528-pd",
				"app.kubernetes.io/part-of":        "llminferenceservice",
				"leaderworkerset.sigs.k8s.io/name": lws, "leaderworkerset.sigs.k8s.io/group-index": "0",
				"leaderworkerset.sigs.k8s.io/worker-index": index,
			}
		}
		assertEveryPodClaimed(t, "llminferenceservice-v1alpha2-dp-ep-deepseek-pd-worker.yaml", []placedPod{
			{pod("llminferenceservice-workload-leader", "deepseek-r1-0528-pd-kserve-mn", "0"), pg, "main", "main"},
			{pod("llminferenceservice-workload-worker", "deepseek-r1-0528-pd-kserve-mn", "1"), pg, "main-worker", "main-worker"},
			{pod("llminferenceservice-workload-leader-prefill", "deepseek-r1-0528-pd-kserve-mn-prefill", "0"), pg, "prefill", "prefill"},
			{pod("llminferenceservice-workload-worker-prefill", "deepseek-r1-0528-pd-kserve-mn-prefill", "1"), pg, "prefill-worker", "prefill-worker"},
		})
	})
	t.Run("trainjob: numNodes 2 node pods", func(t *testing.T) {
		var pods []placedPod
		for i := 0; i < 2; i++ {
			pods = append(pods, placedPod{map[string]string{
				"jobset.sigs.k8s.io/jobset-name":           "lammps-flux",
				"jobset.sigs.k8s.io/replicatedjob-name":    "node",
				"jobset.sigs.k8s.io/job-index":             "0",
				"batch.kubernetes.io/job-completion-index": fmt.Sprint(i),
			}, "pg-lammps-flux-trainjob", "node", ""})
		}
		assertEveryPodClaimed(t, "trainjob-flux-resourcespernode-gpu.yaml", pods)
	})
}
