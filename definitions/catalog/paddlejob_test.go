package catalog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
)

// PaddleJob (kubeflow.org/v1, training-operator v1.9.4), a kind KAI v0.17 has no plugin for
// (issue 14 item 4). Expected values from the operator's code, cited in the definition:
// replicas default 1 (paddlepaddle_defaults.go SetDefaults_PaddleJob); one pod per replica
// (common/pod.go ReconcilePods); gang minimum = schedulingPolicy.minAvailable, else every pod
// (common/job.go ReconcileJobs), master first; every replica type created in the same pass, no
// init container (envvar.go setPodEnv), so no role is held back.

const paddleCPU = "paddlejob-simple-cpu-collective-2workers.yaml"

// TestPaddleJob plans the operator's two examples (examples/paddlepaddle/simple-cpu.yaml and
// simple-gpu.yaml at v1.9.4, unchanged): collective mode, Worker only, replicas 2.
func TestPaddleJob(t *testing.T) {
	cases := map[string]planWant{
		paddleCPU: {
			podGroups: []podGroupWant{{
				name: "pg-paddle-simple-cpu-paddlejob", minSubGroup: 1, pods: 2,
				subGroups: []subGroupWant{{"worker", 2, 2}}, // no minAvailable: every pod
			}},
			roles: []roleWant{
				{"master", 0, 0, 0, 0, 0}, // no Master replica spec: collective mode
				{"worker", 2, 2, 2, 2, 0},
			},
		},
		"paddlejob-simple-gpu-collective-2workers-2gpu.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-paddle-simple-gpu-paddlejob", minSubGroup: 1, pods: 2,
				subGroups: []subGroupWant{{"worker", 2, 2}},
			}},
			roles: []roleWant{
				{"master", 0, 0, 0, 0, 0},
				{"worker", 2, 2, 2, 2, 2}, // limits nvidia.com/gpu 2 per pod
			},
			totalGPUs: 4,
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// withPaddleMaster changes the CPU example to parameter-server mode: a Master replica spec with
// the worker's template and no replicas (the operator defaults it to 1), and workers replicas.
func withPaddleMaster(workers int64) func(*testing.T, *unstructured.Unstructured) {
	return func(t *testing.T, obj *unstructured.Unstructured) {
		tmpl, found, err := unstructured.NestedMap(obj.Object, "spec", "paddleReplicaSpecs", "Worker", "template")
		require.NoError(t, err)
		require.True(t, found)
		require.NoError(t, unstructured.SetNestedMap(obj.Object, map[string]any{"template": tmpl}, "spec", "paddleReplicaSpecs", "Master"))
		require.NoError(t, unstructured.SetNestedField(obj.Object, workers, "spec", "paddleReplicaSpecs", "Worker", "replicas"))
	}
}

// edits applies several edits in order.
func edits(es ...func(*testing.T, *unstructured.Unstructured)) func(*testing.T, *unstructured.Unstructured) {
	return func(t *testing.T, obj *unstructured.Unstructured) {
		for _, e := range es {
			e(t, obj)
		}
	}
}

// TestPaddleJobGangRules: the CPU example with values changed as each case states.
func TestPaddleJobGangRules(t *testing.T) {
	const pg = "pg-paddle-simple-cpu-paddlejob"
	cases := map[string]struct {
		edit func(*testing.T, *unstructured.Unstructured)
		want planWant
	}{
		// Master (replicas defaulted to 1) + 3 workers, no minAvailable: all 4 pods, both roles.
		"master defaulted, 3 workers": {withPaddleMaster(3), planWant{
			podGroups: []podGroupWant{{name: pg, minSubGroup: 2, pods: 4,
				subGroups: []subGroupWant{{"master", 1, 1}, {"worker", 3, 3}}}},
			roles: []roleWant{{"master", 1, 1, 1, 1, 0}, {"worker", 3, 3, 3, 3, 0}},
		}},
		// schedulingPolicy.minAvailable 2: the master first (1), the rest (1) from the workers.
		"minAvailable 2": {edits(withPaddleMaster(3), set(int64(2), "spec", "runPolicy", "schedulingPolicy", "minAvailable")), planWant{
			podGroups: []podGroupWant{{name: pg, minSubGroup: 2, pods: 4,
				subGroups: []subGroupWant{{"master", 1, 1}, {"worker", 1, 3}}}},
			roles: []roleWant{{"master", 1, 1, 1, 1, 0}, {"worker", 3, 1, 3, 1, 0}},
		}},
		// elasticPolicy.minReplicas 1 is read by nothing in the operator (it still creates 3
		// workers and PADDLE_NNODES = 4): the gang stays every pod, unlike PyTorchJob.
		"elasticPolicy ignored": {edits(withPaddleMaster(3), set(int64(1), "spec", "elasticPolicy", "minReplicas"), set(int64(3), "spec", "elasticPolicy", "maxReplicas")), planWant{
			podGroups: []podGroupWant{{name: pg, minSubGroup: 2, pods: 4,
				subGroups: []subGroupWant{{"master", 1, 1}, {"worker", 3, 3}}}},
			roles: []roleWant{{"master", 1, 1, 1, 1, 0}, {"worker", 3, 3, 3, 3, 0}},
		}},
		// Worker replicas left out: the operator's default 1.
		"worker replicas defaulted": {func(t *testing.T, obj *unstructured.Unstructured) {
			unstructured.RemoveNestedField(obj.Object, "spec", "paddleReplicaSpecs", "Worker", "replicas")
		}, planWant{
			podGroups: []podGroupWant{{name: pg, minSubGroup: 1, pods: 1,
				subGroups: []subGroupWant{{"worker", 1, 1}}}},
			roles: []roleWant{{"master", 0, 0, 0, 0, 0}, {"worker", 1, 1, 1, 1, 0}},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := planEdited(t, catalogRegistry(t), paddleCPU, tc.edit)
			checkBuiltPlan(t, paddleCPU+" ("+name+")", p, tc.want)
		})
	}
}

// paddlePod returns the labels training-operator v1.9.4 writes on a PaddleJob pod
// (common/pod.go createNewPod): GenLabels (operator-name "paddlejob-controller", job-name),
// replica-type lower case (ReconcilePods strings.ToLower), replica-index, and job-role "master"
// on master pods (paddlepaddle_controller.go IsMasterRole). Template labels: none in the example.
func paddlePod(job, replicaType string, index int) map[string]string {
	l := map[string]string{
		"training.kubeflow.org/operator-name": "paddlejob-controller",
		"training.kubeflow.org/job-name":      job,
		"training.kubeflow.org/replica-type":  replicaType,
		"training.kubeflow.org/replica-index": fmt.Sprint(index),
	}
	if replicaType == "master" {
		l["training.kubeflow.org/job-role"] = "master"
	}
	return l
}

// TestPaddleJobOperatorPods places every pod the operator creates, with exactly its labels: each
// lands in its role's sub-group, and together they are the plan's pods and meet its minima.
func TestPaddleJobOperatorPods(t *testing.T) {
	t.Run("collective: 2 workers", func(t *testing.T) {
		var pods []placedPod
		for i := 0; i < 2; i++ {
			pods = append(pods, placedPod{paddlePod("paddle-simple-cpu", "worker", i), "pg-paddle-simple-cpu-paddlejob", "worker", "worker"})
		}
		assertEveryPodClaimed(t, paddleCPU, pods)
	})
	t.Run("parameter server: master and 3 workers", func(t *testing.T) {
		obj := workloadOf(t, paddleCPU)
		withPaddleMaster(3)(t, obj)
		def := catalogRegistry(t).Lookup(obj.GroupVersionKind())
		p, err := gang.Build(context.Background(), def, obj)
		require.NoError(t, err)
		perSG := map[string]int64{}
		place := func(labels map[string]string) *gang.Assignment {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "kubeflow", Labels: labels}}
			podMap, err := expr.FromObject(pod)
			require.NoError(t, err)
			pl, err := def.PlacePod(context.Background(), podMap)
			require.NoError(t, err, "%v", labels)
			a, err := p.Assign(pl)
			require.NoError(t, err, "%v", labels)
			require.NotNil(t, a.SubGroup)
			perSG[a.SubGroup.Name]++
			return a
		}
		a := place(paddlePod("paddle-simple-cpu", "master", 0))
		assert.Equal(t, "master", a.Role.Name)
		for i := 0; i < 3; i++ {
			a := place(paddlePod("paddle-simple-cpu", "worker", i))
			assert.Equal(t, "worker", a.Role.Name)
			assert.Equal(t, "pg-paddle-simple-cpu-paddlejob", a.PodGroup.Name)
		}
		require.Len(t, p.PodGroups, 1)
		for _, sg := range p.PodGroups[0].SubGroups {
			assert.Equal(t, sg.Pods, perSG[sg.Name], sg.Name)
			require.NotNil(t, sg.MinMember)
			assert.GreaterOrEqual(t, perSG[sg.Name], int64(*sg.MinMember), sg.Name)
		}
		assert.Equal(t, map[string]int64{"master": 1, "worker": 3}, perSG)
	})
	t.Run("the spec's capitalised type is not the pod's label", func(t *testing.T) {
		l := paddlePod("paddle-simple-cpu", "worker", 0)
		l["training.kubeflow.org/replica-type"] = "Worker"
		_, err := assignPod(t, paddleCPU, l)
		assert.Error(t, err, "the operator writes lower case only; Worker is nobody's label")
	})
}
