package strays

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestEnqueueKeepsOnlyTheIdentity enqueues a whole workload: the collector keeps its identity
// (not the object: what Collect reads and what its Events' involvedObject records) and the names
// to keep.
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
	require.Equal(t, corev1.ObjectReference{APIVersion: "e2e.example.com/v1", Kind: "CustomJob", Namespace: "team-a", Name: "train", UID: "uid-1", ResourceVersion: "42"}, q.owner)
	require.Equal(t, []string{"pg-1"}, q.keep)
	c.queue.ShutDown()
}
