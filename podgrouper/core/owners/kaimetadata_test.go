package owners_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gangmap/gangmap/podgrouper/core/defaultgrouper"
	"github.com/gangmap/gangmap/podgrouper/core/owners"
)

// TestSlimOwnersGiveKAIsDefaultMetadata: KAI's default metadata (defaultgrouper.Metadata) is the
// same from the owners the walker keeps (slimmed, read from the API server or from the shared
// informers, first read or cached) as from the owners read whole, for 100 random chains
// (ReplicaSet, then Deployment) whose owners and pods carry, or not, every key the default
// grouper reads of owners and pods (priority class, existing or not; preemptibility, valid or
// not; the two durations, parsable or not), the top owner's queue and project, and noise.
func TestSlimOwnersGiveKAIsDefaultMetadata(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	require.NoError(t, schedulingv1.AddToScheme(s))
	classes := fake.NewClientBuilder().WithScheme(s).WithObjects(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}}).Build()
	dg := &defaultgrouper.Grouper{Reader: classes}
	rng := rand.New(rand.NewPCG(19, 6))
	pick := func(m map[string]string, key string, values ...string) {
		if i := rng.IntN(len(values) + 1); i < len(values) {
			m[key] = values[i]
		}
	}
	someLabels := func() map[string]string {
		m := map[string]string{"app": "web"}
		pick(m, "priorityClassName", "high", "missing")
		pick(m, "kai.scheduler/preemptibility", "preemptible", "non-preemptible", "bogus")
		pick(m, "kai.scheduler/queue", "team-a")
		pick(m, "project", "p1")
		return m
	}
	someAnnotations := func() map[string]string {
		m := map[string]string{"note": "x"}
		pick(m, "kai.scheduler/preemption-delay", "5m", "soon")
		pick(m, "kai.scheduler/staleness-grace-period", "1m", "never")
		pick(m, "kai.scheduler/topology", "rack")
		return m
	}
	depRef := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "u-dep", Controller: ptr.To(true)}
	for i := range 100 {
		rs := replicaSet("web-1", "u-rs", &depRef)
		rs.Labels, rs.Annotations = someLabels(), someAnnotations()
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u-dep", Labels: someLabels(), Annotations: someAnnotations()}}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: someLabels(), Annotations: someAnnotations()}}
		if rng.IntN(2) == 0 {
			pod.Spec.PriorityClassName = "high"
		}
		top := deployment("ns", "web", "u-dep", d.Labels, d.Annotations)
		whole := []*metav1.PartialObjectMetadata{
			{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"}, ObjectMeta: rs.ObjectMeta},
			{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: d.ObjectMeta},
		}
		want, err := dg.Metadata(ctx, top.DeepCopy(), pod, whole)
		require.NoError(t, err)

		informers := informerStub{}
		informers.add(top)
		for name, w := range map[string]*owners.Walker{
			"API server": {Reader: badOwnersClient(rs, d), Mapper: badMapper(), CacheTTL: time.Hour},
			"informers":  {Reader: badOwnersClient(rs), Mapper: badMapper(), CacheTTL: time.Hour, Shared: informers},
		} {
			for _, pass := range []string{"read", "cached"} {
				chain, err := w.Walk(ctx, "ns", []metav1.OwnerReference{rsRef("web-1", "u-rs")})
				require.NoError(t, err)
				got, err := dg.Metadata(ctx, top.DeepCopy(), pod, chain.Owners)
				require.NoError(t, err)
				require.Equal(t, want, got, "chain %d, %s, %s: owners %v / %v, pod %v", i, name, pass, whole[0].ObjectMeta, whole[1].ObjectMeta, pod.ObjectMeta)
			}
		}
	}
}
