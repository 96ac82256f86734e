package strays

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestEnqueueKeepsOnlyTheIdentity enqueues a whole workload: the collector keeps its identity
// (not the object), and the workload it looks at later has exactly that identity (what Collect
// reads and what its Events' involvedObject records) and the names to keep.
func TestEnqueueKeepsOnlyTheIdentity(t *testing.T) {
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.example.com/v1", "kind": "CustomJob",
		"metadata": map[string]any{"namespace": "team-a", "name": "train", "uid": "uid-1", "resourceVersion": "42",
			"labels": map[string]any{"a": "b"}},
		"spec": map[string]any{"replicas": int64(3)},
	}}
	c := &Collector{}
	c.Enqueue(Workload{Owner: w, Keep: []string{"pg-1"}})
	q, ok := c.workloads["uid-1"]
	require.True(t, ok)
	require.Equal(t, ownerRef{apiVersion: "e2e.example.com/v1", kind: "CustomJob", namespace: "team-a", name: "train", uid: "uid-1", resourceVersion: "42"}, q.owner)
	got := q.workload()
	require.Equal(t, map[string]any{
		"apiVersion": "e2e.example.com/v1", "kind": "CustomJob",
		"metadata": map[string]any{"namespace": "team-a", "name": "train", "uid": "uid-1", "resourceVersion": "42"},
	}, got.Owner.Object)
	require.Equal(t, []string{"pg-1"}, got.Keep)
	c.queue.ShutDown()
}
