//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/manifest"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestPaddleJobOperatorPods: training-operator v1.9.4's examples/paddlepaddle/simple-cpu.yaml
// (Worker replicas 2) with a Master replica spec added (the worker's template, replicas left out:
// the operator defaults it to 1, paddlepaddle_defaults.go SetDefaults_PaddleJob), on the real API
// server; KAI v0.17 has no plugin for PaddleJob. The test plays the operator: one pod per replica,
// "<job>-<type>-<index>" (common/pod.go createNewPod, GenGeneralName), owned by the PaddleJob,
// with exactly its labels (GenLabels operator-name "paddlejob-controller" and job-name,
// replica-type in lower case, replica-index, and job-role "master" on the master,
// paddlepaddle_controller.go IsMasterRole). Every pod exists from the start (no init container,
// envvar.go setPodEnv), so the gang requires them all: sub-groups master 1 and worker 2.
func TestPaddleJobOperatorPods(t *testing.T) {
	ctx := context.Background()
	ns := "paddle"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	objs, err := manifest.ReadFile("../definitions/catalog/testdata/paddlejob-simple-cpu-collective-2workers.yaml")
	require.NoError(t, err)
	job := objs[0]
	job.SetNamespace(ns)
	workerTpl, found, err := unstructured.NestedMap(job.Object, "spec", "paddleReplicaSpecs", "Worker", "template")
	require.NoError(t, err)
	require.True(t, found)
	require.NoError(t, unstructured.SetNestedMap(job.Object, map[string]any{"template": workerTpl}, "spec", "paddleReplicaSpecs", "Master"))
	require.NoError(t, cp.Client.Create(ctx, job))

	tpl := &corev1.PodTemplateSpec{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(workerTpl, tpl))
	type want struct{ name, subGroup string }
	var wants []want
	create := func(replicaType string, index int) {
		labels := map[string]string{
			"training.kubeflow.org/operator-name": "paddlejob-controller",
			"training.kubeflow.org/job-name":      job.GetName(),
			"training.kubeflow.org/replica-type":  replicaType,
			"training.kubeflow.org/replica-index": fmt.Sprint(index),
		}
		if replicaType == "master" {
			labels["training.kubeflow.org/job-role"] = "master"
		}
		name := fmt.Sprintf("%s-%s-%d", job.GetName(), replicaType, index)
		require.NoError(t, cp.Client.Create(ctx, framework.PodFromTemplate(tpl, ns, name, labels, framework.UnstructuredOwnerRef(job))))
		wants = append(wants, want{name, replicaType})
	}
	create("worker", 0)
	create("worker", 1)
	create("master", 0)

	pgName := fmt.Sprintf("pg-%s-paddlejob", job.GetUID())
	pg, err := cp.WaitForPodGroup(ctx, ns, pgName, timeout)
	require.NoError(t, err)
	assert.Nil(t, pg.Spec.MinMember)
	assert.Equal(t, ptr.To[int32](2), pg.Spec.MinSubGroup)
	assert.Equal(t, []v2alpha2.SubGroup{
		{Name: "master", MinMember: ptr.To[int32](1)},
		{Name: "worker", MinMember: ptr.To[int32](2)},
	}, pg.Spec.SubGroups)
	for _, w := range wants {
		got, err := cp.WaitForPodAnnotation(ctx, ns, w.name, kaikeys.PodGroupName, timeout)
		require.NoError(t, err)
		assert.Equal(t, pgName, got.Annotations[kaikeys.PodGroupName], w.name)
		assert.Equal(t, w.subGroup, got.Labels[kaikeys.SubGroupName], w.name)
	}
}
