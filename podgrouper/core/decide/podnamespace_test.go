package decide

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// namespacedAs is a grouper whose metadata names the PodGroup's namespace as it is told.
type namespacedAs string

func (n namespacedAs) Name() string { return "test" }

func (n namespacedAs) GetPodGroupMetadata(_ context.Context, _ *unstructured.Unstructured, _ *corev1.Pod, _ ...*metav1.PartialObjectMetadata) (*podgroup.Metadata, error) {
	return &podgroup.Metadata{Namespace: string(n), Name: "pg-x", MinAvailable: 1}, nil
}

// A PodGroup is only ever written in the pod's namespace: a decision naming another namespace
// (as a grouper keyed on a cluster-scoped owner could) is refused, never written.
func TestDecisionOnlyInThePodsNamespace(t *testing.T) {
	ctx := context.Background()
	owner := &unstructured.Unstructured{}
	owner.SetAPIVersion("e2e.example.com/v1")
	owner.SetKind("ClusterJob")
	owner.SetName("shared")
	owner.SetUID("uid-x")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "p"}}
	d := &Decider{}

	dec, err := d.decidePodGroup(ctx, namespacedAs("team-b"), owner.GroupVersionKind(), owner, nil, pod)
	require.NoError(t, err)
	assert.Equal(t, "team-b", dec.Metadata.Namespace)

	dec, err = d.decidePodGroup(ctx, namespacedAs("team-a"), owner.GroupVersionKind(), owner, nil, pod)
	assert.Nil(t, dec)
	assert.EqualError(t, err, "Plan: PodGroup team-a/pg-x is not in the pod's namespace team-b")
}
