package catalog_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
)

// MPIJob kubeflow.org/v1 (training-operator): a served API version the catalog lacked. The real
// manifest is training-operator's own example (kubeflow/trainer release-1.9,
// examples/mpi/tensorflow-mnist-elastic.yaml), unchanged.

// Launcher 1 + Worker 2, no schedulingPolicy: training-operator's gang (ReconcilePodGroup,
// minMember = GetTotalReplicas) is every replica, 3; pods 3; no GPU in either template.
func TestMPIJobV1(t *testing.T) {
	checkPlan(t, "mpijob-v1-elastic-tf-mnist.yaml", planWant{
		podGroups: []podGroupWant{{name: "pg-tensorflow-mnist-elastic-mpijob", minMember: 3, pods: 3}},
		roles: []roleWant{
			{"launcher", 1, 1, 1, 1, 0}, // Launcher replicas 1 (default 1)
			{"worker", 2, 2, 2, 2, 0},   // Worker replicas 2, cpu/memory limits only
		},
	})
}

// The v1 and v2beta1 MPIJobs are separate GVKs with separate definitions: the registry keys by
// GVK, so each version gets its own (v1's launcher is a Pod, v2beta1's a Job).
func TestMPIJobVersionsHaveTheirOwnDefinitions(t *testing.T) {
	reg := catalogRegistry(t)
	v1 := reg.Lookup(schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "MPIJob"})
	v2 := reg.Lookup(schema.GroupVersionKind{Group: "kubeflow.org", Version: "v2beta1", Kind: "MPIJob"})
	require.NotNil(t, v1)
	require.NotNil(t, v2)
	assert.Equal(t, "kubeflow-org-mpijob-v1", v1.Name())
	assert.Equal(t, "kubeflow-org-mpijob-v2beta1", v2.Name())
}

// schedulingPolicy.minAvailable 2 (runPolicy, kubeflow common RunPolicy) replaces every
// replica: launcher first (1), then 1 worker; the other worker is outside the gang.
func TestMPIJobV1MinAvailable(t *testing.T) {
	objs, err := manifest.ReadFile(filepath.Join("testdata", "mpijob-v1-elastic-tf-mnist.yaml"))
	require.NoError(t, err)
	obj := objs[0]
	require.NoError(t, unstructured.SetNestedField(obj.Object, int64(2), "spec", "runPolicy", "schedulingPolicy", "minAvailable"))
	p, err := gang.Build(context.Background(), catalogRegistry(t).Lookup(obj.GroupVersionKind()), obj)
	require.NoError(t, err)
	require.Len(t, p.PodGroups, 1)
	if assert.NotNil(t, p.PodGroups[0].MinMember) {
		assert.Equal(t, int32(2), *p.PodGroups[0].MinMember)
	}
	got := map[string]int64{}
	for _, r := range p.Roles {
		got[r.Name] = r.GangPods
	}
	assert.Equal(t, map[string]int64{"launcher": 1, "worker": 1}, got)
}

// Pods carry training-operator's training.kubeflow.org/replica-type label (mpijob.go
// defaultLauncherLabels/defaultWorkerLabels: "launcher", "worker"); the v2beta1 job-role label
// alone places no pod.
func TestMPIJobV1PodsLandInTheirRoles(t *testing.T) {
	file := "mpijob-v1-elastic-tf-mnist.yaml"
	for _, role := range []string{"launcher", "worker"} {
		a, err := assignPod(t, file, map[string]string{"training.kubeflow.org/replica-type": role, "training.kubeflow.org/job-name": "tensorflow-mnist-elastic"})
		require.NoError(t, err, role)
		assert.Equal(t, role, a.Role.Name, role)
	}
	_, err := assignPod(t, file, map[string]string{"training.kubeflow.org/job-role": "worker"})
	assert.Error(t, err, "a pod without replica-type matches no role")
}
