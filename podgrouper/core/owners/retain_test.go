package owners_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/podgrouper/core/owners"
)

// TestWalkerKeepsNoStringOfThePod: the namespace and owner reference a walk starts from are
// substrings of the admitted pod's JSON when a decoder shares one copy of the JSON among the
// decoded strings (the webhook's did until session 9). What the walker keeps, the owner
// cache (a ReplicaSet read from the API server) and the owners' locations (also of the
// Deployment read from the informers), must not pin that copy. Seen in the 20,000-pod scale run:
// one 1.75 KB copy of a pod per workload stayed live.
func TestWalkerKeepsNoStringOfThePod(t *testing.T) {
	ctx := context.Background()
	dep := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "u-dep", Controller: ptr.To(true)}
	api := &countingReader{Reader: badOwnersClient(replicaSet("web-1", "u-rs", &dep), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u-dep"}})}
	informers := informerStub{}
	informers.add(deployment("ns", "web", "u-dep", nil, nil))
	w := &owners.Walker{Reader: api, Mapper: badMapper(), CacheTTL: time.Hour, Shared: informers}

	gone := walkFromPodJSON(ctx, t, w)
	for i := 0; i < 5 && gone.Value() != nil; i++ {
		runtime.GC()
	}
	assert.Nil(t, gone.Value(), "the walker keeps a substring of the pod's JSON, pinning all of it")
	require.Equal(t, int32(1), api.gets.Load())
	chain, err := w.Walk(ctx, "ns", []metav1.OwnerReference{rsRef("web-1", "u-rs")})
	require.NoError(t, err)
	assert.Equal(t, "web", chain.Top().Name)
	assert.Equal(t, int32(1), api.gets.Load(), "the ReplicaSet is still cached (under copied strings)")
}

// walkFromPodJSON walks from a namespace and owner reference that are substrings of a 2 KB
// "pod JSON" and returns a weak pointer to that JSON's bytes.
func walkFromPodJSON(ctx context.Context, t *testing.T, w *owners.Walker) weak.Pointer[byte] {
	raw := strings.Repeat(" ", 2048) + `"ns" "web-1" "u-rs" "apps/v1"`
	field := func(s string) string {
		i := strings.Index(raw, `"`+s+`"`)
		return raw[i+1 : i+1+len(s)]
	}
	ref := metav1.OwnerReference{APIVersion: field("apps/v1"), Kind: "ReplicaSet", Name: field("web-1"), UID: types.UID(field("u-rs")), Controller: ptr.To(true)}
	chain, err := w.Walk(ctx, field("ns"), []metav1.OwnerReference{ref})
	require.NoError(t, err)
	require.Len(t, chain.Owners, 2)
	require.Equal(t, "web", chain.Top().Name)
	return weak.Make(unsafe.StringData(raw))
}
