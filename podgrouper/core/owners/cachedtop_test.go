package owners_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/owners"
)

// TestCachedTopIsWalksTop: CachedTop knows nothing before a walk, then gives the walk's top owner
// (the same shared object) for the same references, and declines what the cache cannot answer
// alone: another namespace, another name for the cached UID, an expired entry, no cache.
func TestCachedTopIsWalksTop(t *testing.T) {
	ctx := context.Background()
	dep := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "u-dep"}
	rs := replicaSet("web-1", "u-rs", &dep)
	refs := []metav1.OwnerReference{rsRef("web-1", "u-rs")}

	w := &owners.Walker{Reader: badOwnersClient(rs, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u-dep"}}), Mapper: badMapper(), CacheTTL: time.Hour}
	_, ok := w.CachedTop("ns", refs)
	assert.False(t, ok, "nothing cached yet")

	chain, err := w.Walk(ctx, "ns", refs)
	require.NoError(t, err)
	top, ok := w.CachedTop("ns", refs)
	require.True(t, ok)
	assert.Same(t, chain.Top(), top)
	assert.Equal(t, "Deployment", top.Kind)

	for name, tc := range map[string]struct {
		ns   string
		refs []metav1.OwnerReference
	}{
		"another namespace":        {"other", refs},
		"another name for the UID": {"ns", []metav1.OwnerReference{rsRef("web-2", "u-rs")}},
		"no references":            {"ns", nil},
	} {
		_, ok := w.CachedTop(tc.ns, tc.refs)
		assert.False(t, ok, name)
	}

	expired := &owners.Walker{Reader: w.Reader, Mapper: badMapper(), CacheTTL: time.Nanosecond}
	_, err = expired.Walk(ctx, "ns", refs)
	require.NoError(t, err)
	time.Sleep(time.Millisecond)
	_, ok = expired.CachedTop("ns", refs)
	assert.False(t, ok, "expired")

	uncached := &owners.Walker{Reader: w.Reader, Mapper: badMapper()}
	_, err = uncached.Walk(ctx, "ns", refs)
	require.NoError(t, err)
	_, ok = uncached.CachedTop("ns", refs)
	assert.False(t, ok, "no CacheTTL")
}

// The owners a walk reads (and caches, for CacheTTL) keep their identity, the reference the walk
// follows, and of their labels and annotations only the keys KAI's default metadata reads of owners
// (priority class, preemptibility, preemption delay, staleness grace period); not their managed
// fields, other labels and annotations (the top owner's are read from the top owner read in full),
// other references or resourceVersion, which nothing reads of an owner walked.
func TestWalkDropsManagedFields(t *testing.T) {
	ctx := context.Background()
	mf := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}}}
	dep := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "u-dep", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "u-cm"}
	rs := replicaSet("web-1", "u-rs", &dep)
	rs.OwnerReferences = []metav1.OwnerReference{other, dep}
	rs.Labels = map[string]string{"app": "web", "pod-template-hash": "abc", "priorityClassName": "high"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u-dep",
		Labels: map[string]string{"kai.scheduler/queue": "team-a", "kai.scheduler/preemptibility": "preemptible"},
		Annotations: map[string]string{"team": "ml", "kai.scheduler/preemption-delay": "5m", "kai.scheduler/staleness-grace-period": "1m",
			"kubectl.kubernetes.io/last-applied-configuration": `{"spec":{}}`}}}
	w := &owners.Walker{Reader: withManagedFields{badOwnersClient(rs, d), mf}, Mapper: badMapper(), CacheTTL: time.Hour}
	for range 2 { // read, then cached
		chain, err := w.Walk(ctx, "ns", []metav1.OwnerReference{rsRef("web-1", "u-rs")})
		require.NoError(t, err)
		require.Len(t, chain.Owners, 2)
		for _, o := range chain.Owners {
			assert.Empty(t, o.ManagedFields, o.Name)
			assert.Empty(t, o.ResourceVersion, o.Name)
		}
		mid := chain.Owners[0]
		assert.Equal(t, metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"}, mid.TypeMeta)
		assert.Equal(t, []string{"web-1", "ns", "u-rs"}, []string{mid.Name, mid.Namespace, string(mid.UID)})
		assert.Equal(t, map[string]string{"priorityClassName": "high"}, mid.Labels)
		assert.Nil(t, mid.Annotations)
		assert.Equal(t, []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "u-dep", Controller: ptr.To(true)}},
			mid.OwnerReferences, "only the controller reference the walk follows")
		assert.Equal(t, map[string]string{"kai.scheduler/preemptibility": "preemptible"}, chain.Top().Labels)
		assert.Equal(t, map[string]string{"kai.scheduler/preemption-delay": "5m", "kai.scheduler/staleness-grace-period": "1m"}, chain.Top().Annotations)
		assert.Nil(t, chain.Top().OwnerReferences)
	}
}

// withManagedFields is a reader whose objects carry managed fields, as the API server's metadata
// reads return them (the fake client drops them).
type withManagedFields struct {
	client.Reader
	mf []metav1.ManagedFieldsEntry
}

func (r withManagedFields) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := r.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	obj.SetManagedFields(r.mf)
	return nil
}
