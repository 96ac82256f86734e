package ownerskip_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/ownerskip"
)

func workload(annotations map[string]string) *unstructured.Unstructured {
	w := &unstructured.Unstructured{}
	w.SetAPIVersion("e2e.example.com/v1")
	w.SetKind("CustomJob")
	w.SetNamespace("ns")
	w.SetName("train")
	w.SetUID("uid-1")
	w.SetAnnotations(annotations)
	return w
}

func read(t *testing.T, c client.Client, w *unstructured.Unstructured) map[string]string {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(w.GroupVersionKind())
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(w), got))
	return got.GetAnnotations()
}

func TestMarkAndUnmark(t *testing.T) {
	ctx := context.Background()
	w := workload(map[string]string{"team": "a"})
	c := fake.NewClientBuilder().WithObjects(w.DeepCopy()).Build()
	m := &ownerskip.Marker{Client: c}

	wrote, err := m.Mark(ctx, w)
	require.NoError(t, err)
	assert.True(t, wrote)
	assert.Equal(t, map[string]string{"team": "a", kaikeys.SkipPodGrouper: "true", ownerskip.SetBy: ownerskip.SetByValue}, read(t, c, w))

	marked := workload(read(t, c, w))
	assert.True(t, ownerskip.Marked(marked))
	wrote, err = m.Mark(ctx, marked)
	require.NoError(t, err)
	assert.False(t, wrote, "an owner marked already is not written again")

	wrote, err = m.Unmark(ctx, marked)
	require.NoError(t, err)
	assert.True(t, wrote)
	assert.Equal(t, map[string]string{"team": "a"}, read(t, c, w), "gangmap's mark is gone, the rest stays")
}

// A skip annotation a user set is theirs: gangmap neither writes it nor ever removes it.
func TestUserSkipIsLeftAlone(t *testing.T) {
	ctx := context.Background()
	w := workload(map[string]string{kaikeys.SkipPodGrouper: "true"})
	c := fake.NewClientBuilder().WithObjects(w.DeepCopy()).Build()
	m := &ownerskip.Marker{Client: c}
	wrote, err := m.Mark(ctx, w)
	require.NoError(t, err)
	assert.False(t, wrote)
	wrote, err = m.Unmark(ctx, w)
	require.NoError(t, err)
	assert.False(t, wrote)
	assert.Equal(t, map[string]string{kaikeys.SkipPodGrouper: "true"}, read(t, c, w))

	// Only the exact value "true" counts (KAI's rule).
	assert.False(t, ownerskip.Marked(workload(map[string]string{kaikeys.SkipPodGrouper: "True"})))
}

func TestNilMarkerMarksNothing(t *testing.T) {
	var m *ownerskip.Marker
	wrote, err := m.Mark(context.Background(), workload(nil))
	assert.NoError(t, err)
	assert.False(t, wrote)
}

func TestStripMark(t *testing.T) {
	a := map[string]string{kaikeys.SkipPodGrouper: "true", ownerskip.SetBy: ownerskip.SetByValue, "team": "a"}
	ownerskip.StripMark(a)
	assert.Equal(t, map[string]string{"team": "a"}, a)
	user := map[string]string{kaikeys.SkipPodGrouper: "true"}
	ownerskip.StripMark(user)
	assert.Equal(t, map[string]string{kaikeys.SkipPodGrouper: "true"}, user, "a user's own skip annotation is copied as KAI copies it")
}

// A cluster-scoped top owner (one any namespace's pod may name) is never marked: the mark would
// make KAI skip that owner's pods in every other namespace.
func TestClusterScopedOwnerNotMarked(t *testing.T) {
	ctx := context.Background()
	w := workload(map[string]string{"team": "a"})
	w.SetNamespace("")
	c := fake.NewClientBuilder().WithObjects(w.DeepCopy()).Build()
	wrote, err := (&ownerskip.Marker{Client: c}).Mark(ctx, w)
	require.NoError(t, err)
	assert.False(t, wrote)
	assert.Equal(t, map[string]string{"team": "a"}, read(t, c, w))
}
