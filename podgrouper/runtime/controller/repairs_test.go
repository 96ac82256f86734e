package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/ownerskip"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// patchCounter is a fake API client that counts PATCHes by kind.
func patchCounter(objs ...client.Object) (client.Client, *sync.Map) {
	counts := &sync.Map{}
	c := fake.NewClientBuilder().WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			kind := fmt.Sprintf("%T", obj)
			if u, ok := obj.(*unstructured.Unstructured); ok {
				kind = u.GetKind()
			}
			n, _ := counts.LoadOrStore(kind, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			return c.Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	return c, counts
}

func count(m *sync.Map, kind string) int64 {
	n, ok := m.Load(kind)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

// drain returns the Events the fake recorder holds now.
func drain(rec *record.FakeRecorder) []string {
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

// TestMarkOwnerOncePerWorkload: ten reconciles of one workload's pods at once, each with the
// cached (unmarked) workload, mark it with one PATCH, and exactly one of them reports that it
// marked it (the one whose Event says so); later reconciles that still read the unmarked version
// from the cache write nothing.
func TestMarkOwnerOncePerWorkload(t *testing.T) {
	ctx := context.Background()
	w := workloadAt("7")
	c, patches := patchCounter(w.DeepCopy())
	rec := record.NewFakeRecorder(100)
	r := &PodReconciler{Client: c, Recorder: rec, Owners: &ownerskip.Marker{Client: c}}
	var wg sync.WaitGroup
	var marked atomic.Int64
	start := make(chan struct{})
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if r.markOwner(ctx, &decide.Decision{Owner: w.DeepCopy()}) {
				marked.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	assert.False(t, r.markOwner(ctx, &decide.Decision{Owner: w.DeepCopy()}), "a later reconcile with the stale cached workload")
	assert.Equal(t, int64(1), count(patches, "CustomJob"), "one PATCH of the workload")
	assert.Equal(t, int64(1), marked.Load(), "one reconcile reports the mark")
	assert.Empty(t, drain(rec), "markOwner writes no Event of its own (writePodGroup does)")
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(w.GroupVersionKind())
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(w), got))
	assert.Equal(t, "true", got.GetAnnotations()[kaikeys.SkipPodGrouper])
}

// repairPod is pod i of workload w as it reached the API server without gangmap's webhook: KAI's
// pod-grouper named it when moved, else nothing had.
func repairPod(w *unstructured.Unstructured, i int, moved bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.GetNamespace(), Name: fmt.Sprintf("%s-%d", w.GetName(), i),
		UID: w.GetUID() + k8stypes.UID(fmt.Sprintf("-pod-%d", i))}}
	if moved {
		p.Annotations = map[string]string{kaikeys.PodGroupName: "pg-" + w.GetName() + "-kai"}
	}
	return p
}

// TestRepairsOneEventPerWorkload: 20 workloads of 10 pods each labelled after creation (3 of
// each workload's pods were in KAI's PodGroup) give 10 PATCHes per workload and one
// GangmapRepairedPod Warning Event per workload with the count, the PodGroups and what is known
// of the webhook; gangmap_pods_repaired_total counts every pod. A stale reconcile of a repaired pod
// counts nothing.
func TestRepairsOneEventPerWorkload(t *testing.T) {
	for _, served := range []bool{false, true} {
		t.Run(fmt.Sprintf("webhookServed=%v", served), func(t *testing.T) {
			ctx := context.Background()
			var objs []client.Object
			var decisions []*decide.Decision
			var podsOf [][]*corev1.Pod
			for w := 0; w < 20; w++ {
				owner := workloadAt("1")
				owner.SetName(fmt.Sprintf("w%03d", w))
				owner.SetUID(owner.GetUID() + k8stypes.UID(fmt.Sprintf("-%d", w)))
				var ps []*corev1.Pod
				for i := 0; i < 10; i++ {
					p := repairPod(owner, i, i < 3)
					objs = append(objs, p.DeepCopy())
					ps = append(ps, p)
				}
				podsOf = append(podsOf, ps)
				decisions = append(decisions, &decide.Decision{Owner: owner, Metadata: &podgroup.Metadata{Namespace: "ns", Name: "pg-" + owner.GetName()}})
			}
			c, patches := patchCounter(objs...)
			rec := record.NewFakeRecorder(10000)
			r := &PodReconciler{Client: c, Recorder: rec, WebhookServed: served}
			r.init()
			before := testutil.ToFloat64(repairs)
			for i := 0; i < 10; i++ {
				for w := range decisions {
					r.Book.Group(client.ObjectKeyFromObject(podsOf[w][i]), decisions[w].Owner.GetUID())
					require.NoError(t, r.labelPod(ctx, podsOf[w][i], decisions[w]))
				}
			}
			// A stale reconcile: the cached pod still lacks the annotations.
			require.NoError(t, r.labelPod(ctx, repairPod(decisions[0].Owner, 0, true), decisions[0]))
			assert.Empty(t, drain(rec), "no Event while the episodes last")
			r.FlushEvents()
			assert.Equal(t, int64(201), count(patches, "*v1.Pod"), "one PATCH per pod (and the stale reconcile's)")
			assert.Equal(t, 200.0, testutil.ToFloat64(repairs)-before)
			events := drain(rec)
			require.Len(t, events, 20, "one Event per workload")
			for _, e := range events {
				assert.True(t, strings.HasPrefix(e, "Warning "+ReasonRepaired+" labelled 10 pods after creation (w"), e)
				assert.Regexp(t, `: 7 joined PodGroup pg-w\d{3}, 3 moved from PodGroup pg-w\d{3}-kai to pg-w\d{3}\. They had no kai.scheduler/skip-podgrouper`, e)
				if served {
					assert.Contains(t, e, "this grouper serves gangmap's admission webhook, so the API server's call to it failed or timed out")
				} else {
					assert.Contains(t, e, "this grouper does not serve gangmap's admission webhook (--webhook-port=0)")
				}
				assert.NotContains(t, e, "created without gangmap's admission webhook")
			}
		})
	}
}
