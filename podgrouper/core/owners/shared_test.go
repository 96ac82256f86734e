package owners_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/owners"
)

// informerStub is an owners.SharedReader holding unstructured objects by kind and key, as a
// workload informer's store does.
type informerStub map[string]*unstructured.Unstructured

func (s informerStub) Watches(gvk schema.GroupVersionKind) bool { return gvk.Kind == "Deployment" }

func (s informerStub) GetShared(_ context.Context, gvk schema.GroupVersionKind, key types.NamespacedName) (*unstructured.Unstructured, bool) {
	u, ok := s[gvk.Kind+"/"+key.String()]
	return u, ok
}

func (s informerStub) add(u *unstructured.Unstructured) {
	s[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = u
}

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	gets atomic.Int32
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets.Add(1)
	return r.Reader.Get(ctx, key, obj, opts...)
}

func deployment(ns, name string, uid types.UID, labels, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(uid)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	u.SetResourceVersion("42")
	return u
}

// TestWalkReadsSharedOwners: an owner the shared reader (the workload informers) holds is read
// from it, never from the API server, and slimmed as an owner read from the API server is; the
// walker keeps no copy (CachedTop knows nothing of it). An object of another UID there (a
// replaced owner the informer has not caught up with) is not used: the API server decides, and
// what it says of a kind the informers watch is not kept either (nor an owner not there yet).
func TestWalkReadsSharedOwners(t *testing.T) {
	ctx := context.Background()
	dep := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "u-dep", Controller: ptr.To(true)}
	rs := replicaSet("web-1", "u-rs", &dep)
	api := &countingReader{Reader: badOwnersClient(rs, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u-dep"}})}
	informers := informerStub{}
	informers.add(deployment("ns", "web", "u-dep", map[string]string{"app": "web", "priorityClassName": "high"},
		map[string]string{"kai.scheduler/staleness-grace-period": "1m", "note": "x"}))
	w := &owners.Walker{Reader: api, Mapper: badMapper(), CacheTTL: time.Hour, Shared: informers}
	refs := []metav1.OwnerReference{rsRef("web-1", "u-rs")}

	for range 2 {
		chain, err := w.Walk(ctx, "ns", refs)
		require.NoError(t, err)
		require.Len(t, chain.Owners, 2)
		top := chain.Top()
		assert.Equal(t, metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, top.TypeMeta)
		assert.Equal(t, []string{"web", "ns", "u-dep", ""}, []string{top.Name, top.Namespace, string(top.UID), top.ResourceVersion})
		assert.Equal(t, map[string]string{"priorityClassName": "high"}, top.Labels)
		assert.Equal(t, map[string]string{"kai.scheduler/staleness-grace-period": "1m"}, top.Annotations)
	}
	assert.Equal(t, int32(1), api.gets.Load(), "only the ReplicaSet is read from the API server, once")
	_, ok := w.CachedTop("ns", refs)
	assert.False(t, ok, "the walker keeps no copy of an owner the informer holds")

	// The informer still holds the replaced Deployment (another UID): the API server's answer,
	// not kept (the informer will catch up), so read again by the next walk.
	informers.add(deployment("ns", "web", "u-old", nil, nil))
	for i := range 2 {
		chain, err := w.Walk(ctx, "ns", refs)
		require.NoError(t, err)
		assert.Equal(t, types.UID("u-dep"), chain.Top().UID)
		assert.Nil(t, chain.Top().Labels, "read from the API server: the Deployment there has no labels")
		assert.Equal(t, int32(2+i), api.gets.Load())
	}
	_, ok = w.CachedTop("ns", refs)
	assert.False(t, ok)

	// Not in the informer yet (created a moment ago): the same.
	delete(informers, "Deployment/ns/web")
	_, err := w.Walk(ctx, "ns", refs)
	require.NoError(t, err)
	assert.Equal(t, int32(4), api.gets.Load())
	_, ok = w.CachedTop("ns", refs)
	assert.False(t, ok)
}

// TestSharedOwnersNeverCrossNamespaces: an owner read from the informers is located like one
// read from the API server, so a pod of another namespace naming it by UID is told so; an
// informer object of the reference's name but another namespace is never the owner.
func TestSharedOwnersNeverCrossNamespaces(t *testing.T) {
	ctx := context.Background()
	informers := informerStub{}
	informers.add(deployment("a", "web", "u-a", nil, nil))
	w := &owners.Walker{Reader: badOwnersClient(), Mapper: badMapper(), CacheTTL: time.Hour, Shared: informers}
	ref := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "u-a"}
	chain, err := w.Walk(ctx, "a", []metav1.OwnerReference{ref})
	require.NoError(t, err)
	assert.Equal(t, "a", chain.Top().Namespace)

	_, err = w.Walk(ctx, "b", []metav1.OwnerReference{ref})
	var ie *owners.InvalidReferenceError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "a", ie.OtherNamespace)
	assert.Equal(t, "b", ie.Namespace)

	// A reference naming the object by another name: not found in a, whatever the UID.
	_, err = w.Walk(ctx, "a", []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "other", UID: "u-a"}})
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
}

// TestExtraLabelsAreKept: the label keys ExtraLabels names (the onboarding policy's
// queue.fromOwnerLabel) are kept on owners too; after they change, an owner cached under the old
// keys is read again.
func TestExtraLabelsAreKept(t *testing.T) {
	ctx := context.Background()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u-dep",
		Labels: map[string]string{"team": "ml", "queue-of": "q1", "app": "web"}}}
	api := &countingReader{Reader: badOwnersClient(d)}
	keys := []string{"team"}
	w := &owners.Walker{Reader: api, Mapper: badMapper(), CacheTTL: time.Hour, ExtraLabels: func() []string { return keys }}
	ref := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "u-dep"}}
	for range 2 {
		chain, err := w.Walk(ctx, "ns", ref)
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"team": "ml"}, chain.Top().Labels)
	}
	assert.Equal(t, int32(1), api.gets.Load())
	keys = []string{"queue-of", "team"}
	chain, err := w.Walk(ctx, "ns", ref)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"team": "ml", "queue-of": "q1"}, chain.Top().Labels)
	assert.Equal(t, int32(2), api.gets.Load(), "read again under the new keys")
}
