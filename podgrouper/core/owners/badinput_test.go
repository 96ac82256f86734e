package owners_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gangmap/gangmap/podgrouper/core/owners"
)

// Unit tests of the owner walk on bad owner graphs, with controller-runtime's fake client (the
// e2e tests use a real API server; here the graphs are ones an API server would rarely hold).

func badOwnersClient(objs ...client.Object) client.Client {
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = appsv1.AddToScheme(s)
	_ = rbacv1.AddToScheme(s)
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

// badMapper knows ReplicaSets and Deployments as namespaced and ClusterRoles as cluster scoped.
func badMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), meta.RESTScopeNamespace)
	m.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	m.Add(rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), meta.RESTScopeRoot)
	return m
}

func rsRef(name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: uid, Controller: ptr.To(true)}
}

func replicaSet(name string, uid types.UID, owner *metav1.OwnerReference) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid}}
	if owner != nil {
		rs.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return rs
}

func TestBadOwnerNone(t *testing.T) {
	w := &owners.Walker{Reader: badOwnersClient(), Mapper: badMapper()}
	_, err := w.Walk(context.Background(), "ns", nil)
	assert.ErrorIs(t, err, owners.ErrNoOwner)
	assert.EqualError(t, err, "the pod has no owner references")
}

func TestBadOwnerCycle(t *testing.T) {
	// a is owned by b, b by a.
	a, b := rsRef("a", "uid-a"), rsRef("b", "uid-b")
	c := badOwnersClient(replicaSet("a", "uid-a", &b), replicaSet("b", "uid-b", &a))
	for _, ttl := range []bool{false, true} {
		w := &owners.Walker{Reader: c, Mapper: badMapper()}
		if ttl {
			w.CacheTTL = 1 << 40 // the cached walk detects it too
		}
		_, err := w.Walk(context.Background(), "ns", []metav1.OwnerReference{a})
		assert.EqualError(t, err, "owner references form a cycle at ReplicaSet a")
		var ce *owners.ChainError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, []string{"a", "b"}, []string{ce.Refs[0].Name, ce.Refs[1].Name}, "the references followed, the pod's own first")
		_, err = w.Walk(context.Background(), "ns", []metav1.OwnerReference{a})
		assert.EqualError(t, err, "owner references form a cycle at ReplicaSet a", "again, from the cache")
	}

	// An object that owns itself.
	self := rsRef("self", "uid-self")
	w := &owners.Walker{Reader: badOwnersClient(replicaSet("self", "uid-self", &self)), Mapper: badMapper()}
	_, err := w.Walk(context.Background(), "ns", []metav1.OwnerReference{self})
	assert.EqualError(t, err, "owner references form a cycle at ReplicaSet self")
}

func TestBadOwnerChainTooDeep(t *testing.T) {
	var objs []client.Object
	for i := 0; i <= owners.MaxDepth; i++ {
		next := rsRef(string(rune('a'+i+1)), types.UID(rune('a'+i+1)))
		objs = append(objs, replicaSet(string(rune('a'+i)), types.UID(rune('a'+i)), &next))
	}
	w := &owners.Walker{Reader: badOwnersClient(objs...), Mapper: badMapper()}
	_, err := w.Walk(context.Background(), "ns", []metav1.OwnerReference{rsRef("a", "a")})
	assert.EqualError(t, err, "owner chain deeper than 10 at ReplicaSet k")
}

func TestBadOwnerGone(t *testing.T) {
	// The pod's owner no longer exists.
	w := &owners.Walker{Reader: badOwnersClient(), Mapper: badMapper()}
	_, err := w.Walk(context.Background(), "ns", []metav1.OwnerReference{rsRef("gone", "uid-gone")})
	assert.EqualError(t, err, `owner ReplicaSet gone: replicasets.apps "gone" not found`)

	// An owner higher up no longer exists (the Deployment was deleted with orphaning).
	dep := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web", Controller: ptr.To(true)}
	w = &owners.Walker{Reader: badOwnersClient(replicaSet("rs", "uid-rs", &dep)), Mapper: badMapper()}
	_, err = w.Walk(context.Background(), "ns", []metav1.OwnerReference{rsRef("rs", "uid-rs")})
	assert.EqualError(t, err, `owner Deployment web: deployments.apps "web" not found`)

	// The owner was deleted and another object of the same name created: the UID differs.
	w = &owners.Walker{Reader: badOwnersClient(replicaSet("rs", "uid-new", nil)), Mapper: badMapper()}
	_, err = w.Walk(context.Background(), "ns", []metav1.OwnerReference{rsRef("rs", "uid-old")})
	assert.EqualError(t, err, "owner reference ReplicaSet rs (UID uid-old): ReplicaSet rs has UID uid-new (it was replaced, or the reference is wrong); treated as no owner")

	// A reference whose apiVersion does not parse.
	bad := metav1.OwnerReference{APIVersion: "a/b/c", Kind: "Thing", Name: "x", UID: "uid-x"}
	_, err = w.Walk(context.Background(), "ns", []metav1.OwnerReference{bad})
	assert.EqualError(t, err, `owner Thing x: apiVersion "a/b/c": unexpected GroupVersion string: a/b/c`)
}

func TestBadOwnerClusterScoped(t *testing.T) {
	// A namespaced ReplicaSet owned by a cluster-scoped object: the walk reads the owner without
	// a namespace (found through the REST mapper) and it is the top owner.
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin-ish", UID: "uid-cr"}}
	crRef := metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "admin-ish", UID: "uid-cr"}
	c := badOwnersClient(cr, replicaSet("rs", "uid-rs", &crRef))
	w := &owners.Walker{Reader: c, Mapper: badMapper()}
	chain, err := w.Walk(context.Background(), "ns", []metav1.OwnerReference{rsRef("rs", "uid-rs")})
	require.NoError(t, err)
	require.Len(t, chain.Owners, 2)
	top := chain.Top()
	assert.Equal(t, "ClusterRole", top.Kind)
	assert.Equal(t, "admin-ish", top.Name)
	assert.Empty(t, top.Namespace)

	// Without a mapper the walk looks in the pod's namespace and does not find it: an error
	// naming the owner, never a wrong top owner.
	w = &owners.Walker{Reader: c}
	_, err = w.Walk(context.Background(), "ns", []metav1.OwnerReference{rsRef("rs", "uid-rs")})
	assert.EqualError(t, err, `owner ClusterRole admin-ish: clusterroles.rbac.authorization.k8s.io "admin-ish" not found`)
}

func TestBadOwnerSeveralOwners(t *testing.T) {
	// Several owners, none a controller: the first is followed. With a controller: it wins.
	a, b := replicaSet("a", "uid-a", nil), replicaSet("b", "uid-b", nil)
	w := &owners.Walker{Reader: badOwnersClient(a, b), Mapper: badMapper()}
	refA, refB := rsRef("a", "uid-a"), rsRef("b", "uid-b")
	refA.Controller, refB.Controller = nil, nil
	chain, err := w.Walk(context.Background(), "ns", []metav1.OwnerReference{refA, refB})
	require.NoError(t, err)
	assert.Equal(t, "a", chain.Top().Name)
	refB.Controller = ptr.To(true)
	chain, err = w.Walk(context.Background(), "ns", []metav1.OwnerReference{refA, refB})
	require.NoError(t, err)
	assert.Equal(t, "b", chain.Top().Name)
}
