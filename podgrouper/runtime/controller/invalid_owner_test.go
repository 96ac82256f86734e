package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/owners"
)

// A pod whose owner reference names another namespace's workload (by UID, which PodGroup names
// and Events show) or a replaced owner is not grouped, is told once with a Warning Event, and is
// not retried (no error, so no backoff loop with an error log per retry).

// invalidOwnerReconciler returns a reconciler on a fake API server holding objs, its pods also in
// its pod cache, and the recorder of its Events.
func invalidOwnerReconciler(t *testing.T, objs ...client.Object) (*PodReconciler, *record.FakeRecorder) {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(s))
	require.NoError(t, appsv1.AddToScheme(s))
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), meta.RESTScopeNamespace)
	rec := record.NewFakeRecorder(10)
	pods := newBenchPodCache(t)
	t.Cleanup(pods.close)
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods.add(t, p.DeepCopy())
		}
	}
	return &PodReconciler{
		Client:   c,
		Pods:     pods.cache,
		Decider:  &decide.Decider{Client: c, APIReader: c, Walker: &owners.Walker{Reader: c, Mapper: m, CacheTTL: 1 << 40}, SchedulerName: "kai-scheduler"},
		Recorder: rec,
	}, rec
}

func podOwnedBy(ns, name string, ref metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("pod-" + ns + "-" + name), OwnerReferences: []metav1.OwnerReference{ref}},
		Spec:       corev1.PodSpec{SchedulerName: "kai-scheduler", Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
}

func rsOwnerRef(name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: uid, Controller: ptr.To(true)}
}

func reconcileTwice(t *testing.T, r *PodReconciler, pod *corev1.Pod) {
	t.Helper()
	for i := 0; i < 2; i++ {
		res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pod)})
		require.NoError(t, err, "reconcile %d: an invalid owner reference is not retried", i)
		assert.Equal(t, ctrl.Result{}, res)
	}
}

func events(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestReconcileCrossNamespaceOwnerOnceNoRetry(t *testing.T) {
	rsA := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "team-a", UID: "uid-a"}}
	pod := podOwnedBy("team-b", "intruder", rsOwnerRef("train", "uid-a"))
	r, rec := invalidOwnerReconciler(t, rsA, pod)
	// The walker has resolved team-a's ReplicaSet (a pod of team-a was grouped), so its UID is
	// cached: before the fix the team-b pod resolved to it from the cache.
	_, err := r.Decider.Walker.Walk(context.Background(), "team-a", []metav1.OwnerReference{rsOwnerRef("train", "uid-a")})
	require.NoError(t, err)

	reconcileTwice(t, r, pod)
	assert.Equal(t, []string{"Warning GangmapInvalidOwnerReference owner reference ReplicaSet train (UID uid-a) names an object of namespace team-a from namespace team-b: owner references never cross namespaces; treated as no owner"}, events(rec))

	got := &corev1.Pod{}
	require.NoError(t, r.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), got))
	assert.Empty(t, got.Annotations, "the pod is not patched")
	assert.Empty(t, got.Labels)
}

func TestReconcileWrongUIDOwnerOnceNoRetry(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ns", UID: "uid-new"}}
	pod := podOwnedBy("ns", "old", rsOwnerRef("train", "uid-old"))
	r, rec := invalidOwnerReconciler(t, rs, pod)
	reconcileTwice(t, r, pod)
	assert.Equal(t, []string{"Warning GangmapInvalidOwnerReference owner reference ReplicaSet train (UID uid-old): ReplicaSet train has UID uid-new (it was replaced, or the reference is wrong); treated as no owner"}, events(rec))
}

// TestReconcileUnknownOwnerKindNoRetry: a pod whose owner reference names a kind the API server
// does not serve (the RESTMapper answers no match, as a real API server's discovery does for
// nope.example.com/v1 Nope) has no owner object, so no definition can apply: it is not grouped,
// not patched, and not retried. Before, every reconcile returned the walk's error: an error log
// with a stack trace and a discovery call at every backoff step, for as long as the pod lived,
// from a reference any pod's author can write.
func TestReconcileUnknownOwnerKindNoRetry(t *testing.T) {
	ref := metav1.OwnerReference{APIVersion: "nope.example.com/v1", Kind: "Nope", Name: "x", UID: "uid-x", Controller: ptr.To(true)}
	pod := podOwnedBy("ns", "unknown-owner", ref)
	r, rec := invalidOwnerReconciler(t, pod)
	c := r.Client
	noMatch := interceptor.Funcs{Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if obj.GetObjectKind().GroupVersionKind().Kind == "Nope" {
			return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "nope.example.com", Kind: "Nope"}, SearchedVersions: []string{"v1"}}
		}
		return cl.Get(ctx, key, obj, opts...)
	}}
	wc := interceptor.NewClient(c.(client.WithWatch), noMatch)
	r.Client, r.Decider.Client, r.Decider.APIReader, r.Decider.Walker.Reader = wc, wc, wc, wc
	reconcileTwice(t, r, pod)
	assert.Empty(t, events(rec))
	got := &corev1.Pod{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(pod), got))
	assert.Empty(t, got.Annotations, "the pod is not patched")
}
