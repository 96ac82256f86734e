package owners_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/podgrouper/core/owners"
)

// An owner reference never crosses namespaces (Kubernetes' garbage collector resolves a
// namespaced owner in the dependent's namespace only): a pod of namespace b naming, by UID, a
// workload of namespace a must not resolve to it, from the API server or from the owner cache.

func rsIn(ns, name string, uid types.UID) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid}}
}

func TestWalkCacheNeverCrossesNamespaces(t *testing.T) {
	ctx := context.Background()
	ref := rsRef("train", "uid-a")
	for _, ttl := range []bool{false, true} {
		w := &owners.Walker{Reader: badOwnersClient(rsIn("a", "train", "uid-a")), Mapper: badMapper()}
		if ttl {
			w.CacheTTL = 1 << 40
		}
		chain, err := w.Walk(ctx, "a", []metav1.OwnerReference{ref})
		require.NoError(t, err)
		require.Equal(t, "a", chain.Top().Namespace)

		// The same reference from namespace b: b holds no ReplicaSet train.
		_, err = w.Walk(ctx, "b", []metav1.OwnerReference{ref})
		var ie *owners.InvalidReferenceError
		require.ErrorAs(t, err, &ie, "ttl=%v", ttl)
		assert.NotEmpty(t, ie.OtherNamespace)
		assert.Equal(t, "a", ie.OtherNamespace)
		assert.Equal(t, "b", ie.Namespace)
		assert.EqualError(t, err, "owner reference ReplicaSet train (UID uid-a) names an object of namespace a from namespace b: owner references never cross namespaces; treated as no owner")

		// A reference that names another object of namespace a with the cached UID: the name is
		// checked on a hit, so it is not found.
		_, err = w.Walk(ctx, "a", []metav1.OwnerReference{rsRef("other", "uid-a")})
		assert.True(t, apierrors.IsNotFound(err), "got %v", err)
	}
}

func TestWalkCrossNamespaceWithSameNameInBothNamespaces(t *testing.T) {
	ctx := context.Background()
	w := &owners.Walker{Reader: badOwnersClient(rsIn("a", "train", "uid-a"), rsIn("b", "train", "uid-b")), Mapper: badMapper(), CacheTTL: 1 << 40}
	_, err := w.Walk(ctx, "a", []metav1.OwnerReference{rsRef("train", "uid-a")})
	require.NoError(t, err)
	_, err = w.Walk(ctx, "b", []metav1.OwnerReference{rsRef("train", "uid-a")})
	var ie *owners.InvalidReferenceError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, types.UID("uid-b"), ie.FoundUID)
	assert.Equal(t, "a", ie.OtherNamespace)
	// b's own ReplicaSet by its own UID still resolves, in b.
	chain, err := w.Walk(ctx, "b", []metav1.OwnerReference{rsRef("train", "uid-b")})
	require.NoError(t, err)
	assert.Equal(t, "b", chain.Top().Namespace)
	assert.Equal(t, types.UID("uid-b"), chain.Top().UID)
}

func TestWalkWrongUIDIsInvalidReference(t *testing.T) {
	w := &owners.Walker{Reader: badOwnersClient(rsIn("ns", "rs", "uid-new")), Mapper: badMapper()}
	_, err := w.Walk(context.Background(), "ns", []metav1.OwnerReference{rsRef("rs", "uid-old")})
	var ie *owners.InvalidReferenceError
	require.True(t, errors.As(err, &ie), "got %v", err)
	assert.Empty(t, ie.OtherNamespace)
	assert.EqualError(t, err, "owner reference ReplicaSet rs (UID uid-old): ReplicaSet rs has UID uid-new (it was replaced, or the reference is wrong); treated as no owner")
}

func TestWalkClusterScopedOwnerOfNamespacedKind(t *testing.T) {
	// A cluster-scoped owner whose own reference names a namespaced kind: the reference cannot
	// resolve (the garbage collector treats it as absent); it is never looked up in the pod's
	// namespace.
	dep := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web"}
	cr := clusterRole("admin-ish", "uid-cr", &dep)
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-web"}}
	w := &owners.Walker{Reader: badOwnersClient(cr, web, rsIn("ns", "rs", "uid-rs")), Mapper: badMapper()}
	crRef := metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "admin-ish", UID: "uid-cr"}
	_, err := w.Walk(context.Background(), "ns", []metav1.OwnerReference{crRef})
	var ie *owners.InvalidReferenceError
	require.ErrorAs(t, err, &ie)
	assert.True(t, ie.NamespacedFromCluster)
}

func clusterRole(name string, uid types.UID, owner *metav1.OwnerReference) *rbacv1.ClusterRole {
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid}}
	if owner != nil {
		cr.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return cr
}
