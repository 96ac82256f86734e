package workloadmap

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A namespaced pod may have a cluster-scoped top owner (Kubernetes allows a namespaced dependent a
// cluster-scoped owner), so pods of several namespaces can name the same one. Each pod's PodGroup
// is written in the pod's own namespace: pods of team-a and team-b get PodGroups of the same name
// in their own namespaces, two objects, never one merged gang across namespaces. What the owner
// gives (queue label, annotations) comes from an object only a cluster-scope writer can change,
// never from another namespace's user.
func TestClusterScopedOwnerPodGroupsStayInThePodsNamespace(t *testing.T) {
	g := newGrouper(t)
	lws := workload(t, "lws-replicas2-size4-8gpu-limits.yaml", func(u *unstructured.Unstructured) {
		u.SetNamespace("")
		u.SetLabels(map[string]string{"kai.scheduler/queue": "cluster-queue"})
	})
	labels := map[string]string{"leaderworkerset.sigs.k8s.io/group-index": "1", "leaderworkerset.sigs.k8s.io/worker-index": "2"}
	var names []string
	for _, ns := range []string{"team-a", "team-b"} {
		p := pod("w", labels)
		p.Namespace = ns
		md, err := g.GetPodGroupMetadata(context.Background(), lws, p)
		require.NoError(t, err)
		assert.Equal(t, ns, md.Namespace, "the PodGroup is written in the pod's namespace")
		assert.Equal(t, "cluster-queue", md.Queue)
		require.NotNil(t, md.FindSubGroupForPod(ns, "w"))
		assert.Nil(t, md.FindSubGroupForPod("team-a", "w-other"))
		names = append(names, md.Namespace+"/"+md.Name)
	}
	assert.Equal(t, []string{"team-a/pg-11111111-2222-3333-4444-555555555555-group-1", "team-b/pg-11111111-2222-3333-4444-555555555555-group-1"}, names, "one PodGroup per namespace")
}
