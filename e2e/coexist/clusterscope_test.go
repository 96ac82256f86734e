//go:build e2e

package coexist

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/ownerskip"
)

// TestClusterScopedOwnerPodGroupsPerNamespace: pods of two namespaces name one cluster-scoped
// ClusterJob as their owner (Kubernetes allows a namespaced dependent a cluster-scoped owner).
// Each pod's PodGroup is written in its own namespace: same name, two objects, never one gang
// across namespaces; and gangmap writes no skip mark on the cluster-scoped owner.
func TestClusterScopedOwnerPodGroupsPerNamespace(t *testing.T) {
	ctx := context.Background()
	karta, err := framework.KartaFor("../testdata/customjob-karta.yaml", "e2e-example-com-v1-clusterjob", "e2e.example.com", "ClusterJob")
	require.NoError(t, err)
	require.NoError(t, cp.Client.Create(ctx, karta))
	t.Cleanup(func() { _ = cp.Client.Delete(context.Background(), karta) })
	waitDefinition(t, ctx, "e2e.example.com/v1", "ClusterJob", karta.GetName(), definitions.SourceCluster)
	job, err := framework.ReadObject("../testdata/customjob.yaml")
	require.NoError(t, err)
	job.SetKind("ClusterJob")
	job.SetName("shared")
	require.NoError(t, cp.Client.Create(ctx, job))
	t.Cleanup(func() { _ = cp.Client.Delete(context.Background(), job) })
	pgName := fmt.Sprintf("pg-%s-customjob", job.GetUID())

	var pods []*corev1.Pod
	for _, ns := range []string{"cluster-owner-a", "cluster-owner-b"} {
		require.NoError(t, cp.CreateNamespace(ctx, ns))
		p, err := framework.RolePod(job, "coordinator", 0)
		require.NoError(t, err)
		p.Namespace = ns
		require.NoError(t, cp.Client.Create(ctx, p))
		pods = append(pods, p)
	}
	for _, p := range pods {
		waitGrouped(t, ctx, p.Namespace, pgName, p)
		pg, err := cp.WaitForPodGroup(ctx, p.Namespace, pgName, timeout)
		require.NoError(t, err, "the PodGroup of %s is in its own namespace", p.Name)
		assert.Equal(t, p.Namespace, pg.Namespace)
		assert.NotEmpty(t, pg.Annotations[kaikeys.Definition], "gangmap wrote it")
	}
	time.Sleep(time.Second)
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(job.GroupVersionKind())
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(job), got))
	assert.False(t, ownerskip.Marked(got), "no skip mark on a cluster-scoped owner")
	assert.Empty(t, got.GetAnnotations()[ownerskip.SetBy])
}
