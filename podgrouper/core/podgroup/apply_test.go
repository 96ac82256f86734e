package podgroup

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

const (
	nodePoolKey = "kai.scheduler/node-pool"
	queueKey    = "kai.scheduler/queue"
)

// writeCounter counts the writes that reach the fake API server.
type writeCounter struct{ creates, updates, patches atomic.Int32 }

func (w *writeCounter) total() int32 { return w.creates.Load() + w.updates.Load() + w.patches.Load() }

func newApplier(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) (*Applier, client.Client, *writeCounter) {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, v2alpha2.AddToScheme(scheme))
	w := &writeCounter{}
	create, update, patch := funcs.Create, funcs.Update, funcs.Patch
	funcs.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		w.creates.Add(1)
		if create != nil {
			return create(ctx, c, obj, opts...)
		}
		return c.Create(ctx, obj, opts...)
	}
	funcs.Update = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		w.updates.Add(1)
		if update != nil {
			return update(ctx, c, obj, opts...)
		}
		return c.Update(ctx, obj, opts...)
	}
	funcs.Patch = func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		w.patches.Add(1)
		if patch != nil {
			return patch(ctx, c, obj, p, opts...)
		}
		return c.Patch(ctx, obj, p, opts...)
	}
	c := fake.NewClientBuilder().
		WithScheme(scheme).
		WithStatusSubresource(&v2alpha2.PodGroup{}).
		WithObjects(objs...).
		WithInterceptorFuncs(funcs).
		Build()
	return &Applier{Client: c, NodePoolLabelKey: nodePoolKey, QueueLabelKey: queueKey}, c, w
}

// karta returns the metadata of a Karta v2 PodGroup: two flat subgroups under minSubGroup.
func karta() *Metadata {
	return &Metadata{
		Name: "pg-uid-1-customjob", Namespace: "ns", Owner: testOwner,
		Labels:      map[string]string{queueKey: "team-a", nodePoolKey: "pool-a", "app": "job"},
		Annotations: map[string]string{"gangmap.io/gpus": "12"},
		Queue:       "team-a", PriorityClassName: "train",
		MinSubGroup: ptr.To(int32(2)),
		SubGroups: []*SubGroupMetadata{
			{Name: "coordinator", MinAvailable: 1, PodsReferences: []string{"c-0"}},
			{Name: "worker", MinAvailable: 2, PodsReferences: []string{"w-0", "w-1"}},
		},
	}
}

func getPodGroup(t *testing.T, c client.Client, md *Metadata) *v2alpha2.PodGroup {
	t.Helper()
	pg := &v2alpha2.PodGroup{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: md.Namespace, Name: md.Name}, pg))
	return pg
}

func TestApplyCreates(t *testing.T) {
	tests := map[string]*Metadata{
		"with subgroups": karta(),
		"flat, without labels": {Name: "pg-job-uid-1", Namespace: "ns", Owner: testOwner, Queue: "q", MinAvailable: 3,
			Topology: "t", RequiredTopologyLevel: "zone"},
	}
	for name, md := range tests {
		t.Run(name, func(t *testing.T) {
			a, c, w := newApplier(t, interceptor.Funcs{})
			res, err := a.Apply(context.Background(), md)
			require.NoError(t, err)
			assert.Equal(t, Created, res)
			assert.EqualValues(t, 1, w.creates.Load())
			assert.EqualValues(t, 1, w.total())

			got := getPodGroup(t, c, md)
			want := Build(md)
			assert.Equal(t, want.Labels, got.Labels)
			assert.Equal(t, want.Annotations, got.Annotations)
			assert.Equal(t, []metav1.OwnerReference{testOwner}, got.OwnerReferences)
			assert.True(t, podGroupsEqual(got, want), "stored spec is what Build made: %+v", got.Spec)

			// Applying the same metadata again writes nothing: the round trip through the API
			// server (subGroups: [] comes back as nil) does not count as a change.
			res, err = a.Apply(context.Background(), md)
			require.NoError(t, err)
			assert.Equal(t, Unchanged, res)
			assert.EqualValues(t, 1, w.total(), "no write for an unchanged PodGroup")
		})
	}
}

func TestApplyKeepsWhatOthersOwn(t *testing.T) {
	ctx := context.Background()
	a, c, w := newApplier(t, interceptor.Funcs{})
	md := karta()
	_, err := a.Apply(ctx, md)
	require.NoError(t, err)

	// Other controllers change the PodGroup: the scheduler marks it, an admin moves the queue,
	// KAI adds annotations.
	pg := getPodGroup(t, c, md)
	pg.Spec.MarkUnschedulable = ptr.To(true)
	pg.Spec.SchedulingBackoff = ptr.To(int32(1))
	pg.Spec.Queue = "team-b"
	pg.Labels[queueKey] = "team-b"
	pg.Annotations["kai.scheduler/stale-podgroup-timestamp"] = "2026-11-30T00:00:00Z"
	require.NoError(t, c.Update(ctx, pg))
	w.updates.Store(0)
	w.creates.Store(0)

	// The same metadata again: nothing of ours differs, so nothing is written.
	res, err := a.Apply(ctx, karta())
	require.NoError(t, err)
	assert.Equal(t, Unchanged, res)
	assert.EqualValues(t, 0, w.total())

	// The grouper now wants other values, including the queue and the node pool.
	md = karta()
	md.Queue = "team-c"
	md.Labels[queueKey] = "team-c"
	md.Labels[nodePoolKey] = "pool-b"
	md.Labels["app"] = "job-2"
	md.Annotations["gangmap.io/gpus"] = "16"
	md.Annotations["gangmap.io/new"] = "x"
	md.SubGroups[1].MinAvailable = 4
	md.PreemptionDelay = &metav1.Duration{Duration: time.Minute}
	res, err = a.Apply(ctx, md)
	require.NoError(t, err)
	assert.Equal(t, Updated, res)
	assert.EqualValues(t, 1, w.updates.Load())
	assert.EqualValues(t, 1, w.total())

	got := getPodGroup(t, c, md)
	// Owned by others: kept.
	assert.Equal(t, ptr.To(true), got.Spec.MarkUnschedulable)
	assert.Equal(t, ptr.To(int32(1)), got.Spec.SchedulingBackoff)
	assert.Equal(t, "team-b", got.Spec.Queue, "the queue is immutable after creation")
	assert.Equal(t, "team-b", got.Labels[queueKey], "an existing queue label is kept")
	assert.Equal(t, "pool-a", got.Labels[nodePoolKey], "the node-pool label is only set at creation")
	// Ours: updated; labels and annotations merged.
	assert.Equal(t, "job-2", got.Labels["app"])
	assert.Equal(t, map[string]string{
		"gangmap.io/gpus":                        "16",
		"gangmap.io/new":                         "x",
		"kai.scheduler/stale-podgroup-timestamp": "2026-11-30T00:00:00Z",
	}, got.Annotations)
	assert.Equal(t, ptr.To(int32(4)), got.Spec.SubGroups[1].MinMember)
	assert.Equal(t, &metav1.Duration{Duration: time.Minute}, got.Spec.PreemptionDelay)
	assert.Equal(t, ptr.To(int32(2)), got.Spec.MinSubGroup)
	assert.Nil(t, got.Spec.MinMember)
}

func TestApplyNodePoolLabelOnlyAtCreation(t *testing.T) {
	ctx := context.Background()
	md := karta()
	delete(md.Labels, nodePoolKey)
	a, c, w := newApplier(t, interceptor.Funcs{})
	_, err := a.Apply(ctx, md)
	require.NoError(t, err)

	md = karta() // now with a node-pool label
	res, err := a.Apply(ctx, md)
	require.NoError(t, err)
	assert.Equal(t, Unchanged, res, "a node-pool label alone is not a change")
	assert.EqualValues(t, 1, w.total())
	_, found := getPodGroup(t, c, md).Labels[nodePoolKey]
	assert.False(t, found)

	md.SubGroups[0].MinAvailable = 2
	res, err = a.Apply(ctx, md)
	require.NoError(t, err)
	assert.Equal(t, Updated, res)
	_, found = getPodGroup(t, c, md).Labels[nodePoolKey]
	assert.False(t, found, "not added by an update either")
}

func TestApplyTopology(t *testing.T) {
	ctx := context.Background()
	md := karta()
	md.Topology, md.RequiredTopologyLevel = "topo", "zone"
	a, c, _ := newApplier(t, interceptor.Funcs{})
	_, err := a.Apply(ctx, md)
	require.NoError(t, err)

	// A topology removed from the definition does not clear the PodGroup's.
	md = karta()
	res, err := a.Apply(ctx, md)
	require.NoError(t, err)
	assert.Equal(t, Unchanged, res)
	assert.Equal(t, v2alpha2.TopologyConstraint{Topology: "topo", RequiredTopologyLevel: "zone"},
		getPodGroup(t, c, md).Spec.TopologyConstraint)

	// A new topology replaces it.
	md.Topology, md.PreferredTopologyLevel = "topo-2", "rack"
	res, err = a.Apply(ctx, md)
	require.NoError(t, err)
	assert.Equal(t, Updated, res)
	assert.Equal(t, v2alpha2.TopologyConstraint{Topology: "topo-2", PreferredTopologyLevel: "rack"},
		getPodGroup(t, c, md).Spec.TopologyConstraint)
}

func TestApplyReplacesOwnerReferences(t *testing.T) {
	ctx := context.Background()
	md := karta()
	a, c, _ := newApplier(t, interceptor.Funcs{})
	_, err := a.Apply(ctx, md)
	require.NoError(t, err)

	md.Owner = metav1.OwnerReference{APIVersion: "e2e.example.com/v1", Kind: "CustomJob", Name: "job", UID: "uid-2"}
	res, err := a.Apply(ctx, md)
	require.NoError(t, err)
	assert.Equal(t, Updated, res)
	assert.Equal(t, []metav1.OwnerReference{md.Owner}, getPodGroup(t, c, md).OwnerReferences)
}

func TestApplyErrors(t *testing.T) {
	boom := errors.New("boom")
	existing := Build(karta())
	existing.Spec.SubGroups[0].MinMember = ptr.To(int32(5)) // differs from karta(), so Apply updates

	tests := map[string]struct {
		funcs      interceptor.Funcs
		objs       []client.Object
		md         *Metadata
		check      func(error) bool
		wantWrites int32
	}{
		"conflict on update is returned as the API error": {
			funcs: interceptor.Funcs{Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
				return apierrors.NewConflict(v2alpha2.GroupResource(v2alpha2.Resource), existing.Name, boom)
			}},
			objs: []client.Object{existing}, md: karta(), check: apierrors.IsConflict, wantWrites: 1,
		},
		"already exists on create (stale read) is returned": {
			funcs: interceptor.Funcs{Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				return apierrors.NewAlreadyExists(v2alpha2.GroupResource(v2alpha2.Resource), existing.Name)
			}},
			md: karta(), check: apierrors.IsAlreadyExists, wantWrites: 1,
		},
		"get errors other than not found are returned": {
			funcs: interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return apierrors.NewForbidden(v2alpha2.GroupResource(v2alpha2.Resource), existing.Name, boom)
			}},
			md: karta(), check: apierrors.IsForbidden,
		},
		"an invalid PodGroup is never sent": {
			md: func() *Metadata {
				md := karta()
				md.SubGroups[0].Name = "Coordinator"
				return md
			}(),
			check: apierrors.IsInvalid,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a, _, w := newApplier(t, tc.funcs, tc.objs...)
			res, err := a.Apply(context.Background(), tc.md)
			require.Error(t, err)
			assert.True(t, tc.check(err), "unexpected error: %v", err)
			assert.Equal(t, Result(""), res)
			assert.Equal(t, tc.wantWrites, w.total())
		})
	}
}

// An Update decodes the API server's answer into the object it sent (client-go's Result.Into:
// encoding/json semantics, a non-nil pointer is written through). The fields Apply keeps from
// the cached PodGroup, read without a deep copy (markUnschedulable, schedulingBackoff: pointers),
// must not be the cache's own pointers in what it sends: otherwise the answer (here a PodGroup
// webhook's different backoff) is written into the cached object, which other goroutines read
// at the same time and which the informer alone may change.
func TestUpdateAnswerDoesNotWriteTheCache(t *testing.T) {
	cached := Build(karta())
	cached.ResourceVersion = "7"
	cached.Annotations["gangmap.io/gpus"] = "8" // Apply updates it to 12
	cached.Spec.MarkUnschedulable, cached.Spec.SchedulingBackoff = ptr.To(true), ptr.To(int32(-1))
	a, _, w := newApplier(t, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			*obj.(*v2alpha2.PodGroup) = *cached // the cache's object, shallow: client.UnsafeDisableDeepCopy
			return nil
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			sent, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			stored := &v2alpha2.PodGroup{}
			require.NoError(t, json.Unmarshal(sent, stored))
			stored.Spec.MarkUnschedulable, stored.Spec.SchedulingBackoff = ptr.To(false), ptr.To(int32(5)) // the server's answer differs
			answer, err := json.Marshal(stored)
			if err != nil {
				return err
			}
			return json.Unmarshal(answer, obj) // as Result.Into: into the object sent, not zeroed
		}})
	res, err := a.Apply(context.Background(), karta())
	require.NoError(t, err)
	assert.Equal(t, Updated, res)
	assert.Equal(t, int32(1), w.updates.Load())
	assert.True(t, *cached.Spec.MarkUnschedulable, "the cached PodGroup's markUnschedulable")
	assert.Equal(t, int32(-1), *cached.Spec.SchedulingBackoff, "the cached PodGroup's schedulingBackoff")
	assert.Equal(t, "8", cached.Annotations["gangmap.io/gpus"])
}

// TestApplyDefersMetadataOnlyUpdates: with MetadataUpdateInterval, an update of the labels and
// annotations alone (a copied workload annotation that changes in a loop) is written at most once
// per interval: the first at once, the next Deferred until the interval has passed (one caller
// takes the retry, RetryDeferred), then written; a change of the gang (Spec) is never deferred.
func TestApplyDefersMetadataOnlyUpdates(t *testing.T) {
	ctx := context.Background()
	a, c, w := newApplier(t, interceptor.Funcs{})
	a.MetadataUpdateInterval = 5 * time.Second
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	a.metadata.now = func() time.Time { return now }
	withAnnotation := func(v string) *Metadata {
		md := karta()
		md.Annotations["example.com/storm"] = v
		return md
	}
	res, err := a.Apply(ctx, withAnnotation("0"))
	require.NoError(t, err)
	require.Equal(t, Created, res)

	res, err = a.Apply(ctx, withAnnotation("1"))
	require.NoError(t, err)
	assert.Equal(t, Updated, res, "the first labels-and-annotations update is written at once")
	assert.Equal(t, "1", getPodGroup(t, c, karta()).Annotations["example.com/storm"])

	now = now.Add(time.Second)
	res, err = a.Apply(ctx, withAnnotation("2"))
	require.NoError(t, err)
	assert.Equal(t, Deferred, res, "a second within the interval waits")
	after, ok := a.RetryDeferred(withAnnotation("2"))
	assert.True(t, ok)
	assert.Equal(t, 4*time.Second, after, "the caller that takes the retry applies again when the interval has passed")
	_, ok = a.RetryDeferred(withAnnotation("2"))
	assert.False(t, ok, "one retry per PodGroup: the other pods' reconciles need not requeue")
	assert.Equal(t, "1", getPodGroup(t, c, karta()).Annotations["example.com/storm"])

	gang := withAnnotation("3")
	gang.SubGroups[1].MinAvailable = 3
	res, err = a.Apply(ctx, gang)
	require.NoError(t, err)
	assert.Equal(t, Updated, res, "a gang change is written at once, with the labels and annotations")
	pg := getPodGroup(t, c, karta())
	assert.Equal(t, ptr.To(int32(3)), pg.Spec.SubGroups[1].MinMember)
	assert.Equal(t, "3", pg.Annotations["example.com/storm"])

	now = now.Add(5 * time.Second)
	gang.Annotations["example.com/storm"] = "4"
	res, err = a.Apply(ctx, gang)
	require.NoError(t, err)
	assert.Equal(t, Updated, res, "once the interval has passed, written")
	assert.Equal(t, "4", getPodGroup(t, c, karta()).Annotations["example.com/storm"])
	assert.EqualValues(t, 3, w.updates.Load())
}
