package podgroup

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gangmap/gangmap/internal/heapmeasure"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/runtime/strays"
)

// scaleMetadata is the metadata of the scale benchmark's PodGroup number i (e2e/scale: a
// CustomJob of one coordinator and nine workers through the catalog-style definition), as
// workloadmap writes it: KAI's default metadata (queue label, top-owner-metadata) and gangmap's
// annotations.
func scaleMetadata(i int) *Metadata {
	name, uid := fmt.Sprintf("w%05d", i), fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
	return &Metadata{
		Name: "pg-" + uid + "-customjob", Namespace: "scale",
		Owner:  metav1.OwnerReference{APIVersion: "e2e.example.com/v1", Kind: "CustomJob", Name: name, UID: types.UID(uid)},
		Labels: map[string]string{queueKey: "team-a"},
		Annotations: map[string]string{
			"gangmap.io/definition":            "e2e-example-com-v1-customjob (file)",
			"gangmap.io/gpus":                  "19",
			"gangmap.io/role-gpus":             `[{"role":"coordinator","pods":1,"gpusPerPod":1,"gpus":1},{"role":"worker","pods":9,"gpusPerPod":2,"gpus":18}]`,
			"gangmap.io/status":                "undefined",
			"kai.scheduler/top-owner-metadata": fmt.Sprintf("group: e2e.example.com\nkind: CustomJob\nname: %s\nuid: %s\nversion: v1\n", name, uid),
		},
		Queue: "team-a", PriorityClassName: "train", MinSubGroup: ptr.To(int32(2)),
		SubGroups: []*SubGroupMetadata{{Name: "coordinator", MinAvailable: 1}, {Name: "worker", MinAvailable: 9}},
	}
}

// jobSetMetadata is the metadata of a kubectl-applied JobSet's PodGroup number i: KAI's default
// metadata copies every annotation of the top owner, so the PodGroup carries the JobSet's
// kubectl.kubernetes.io/last-applied-configuration (a second copy of the JobSet).
func jobSetMetadata(i int) *Metadata {
	md := scaleMetadata(i)
	name := fmt.Sprintf("train-llm-%05d", i)
	md.Name = "pg-" + name + "-" + string(md.Owner.UID)
	md.Owner.APIVersion, md.Owner.Kind, md.Owner.Name = "jobset.x-k8s.io/v1alpha2", "JobSet", name
	md.Labels["app.kubernetes.io/name"], md.Labels["app.kubernetes.io/part-of"] = "train-llm", "llm-sweep"
	md.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = fmt.Sprintf(`{"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"annotations":{},"labels":{"app.kubernetes.io/name":"train-llm","app.kubernetes.io/part-of":"llm-sweep","kai.scheduler/queue":"team-a"},"name":"%s","namespace":"scale"},"spec":{"replicatedJobs":[{"name":"leader","replicas":1,"template":{"spec":{"completions":1,"parallelism":1,"template":{"spec":{"containers":[{"image":"registry.example/trainer:1.0","name":"trainer","resources":{"limits":{"nvidia.com/gpu":1}}}],"schedulerName":"kai-scheduler"}}}}},{"name":"workers","replicas":1,"template":{"spec":{"completions":9,"parallelism":9,"template":{"spec":{"containers":[{"image":"registry.example/trainer:1.0","name":"trainer","resources":{"limits":{"nvidia.com/gpu":2}}}],"schedulerName":"kai-scheduler"}}}}}]}}`, name)
	md.SubGroups[0].Name, md.SubGroups[1].Name = "leader", "workers"
	md.PreemptionDelay = &metav1.Duration{Duration: 5 * time.Minute}
	return md
}

// served is the PodGroup md describes as the API server returns it to the informer: Build's
// object with the server's metadata (uid, resourceVersion, generation, creation time, gangmap's
// managed fields entry, a finalizer another controller added) and, when kaiStatus, the status
// KAI's scheduler writes to a PodGroup it could not place yet (conditions, a scheduling
// condition with an over-quota explanation, resourcesStatus).
func served(md *Metadata, i int, kaiStatus bool) *v2alpha2.PodGroup {
	pg := Build(md)
	now := metav1.Unix(1764590000, 0)
	pg.UID, pg.ResourceVersion, pg.Generation, pg.CreationTimestamp = types.UID(fmt.Sprintf("%08x-0000-4000-8000-pg%010x", i, i)), fmt.Sprint(300000+i), 1, now
	pg.Finalizers = []string{"example.com/audit"}
	pg.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "gangmap-grouper", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "scheduling.run.ai/v2alpha2", Time: &now, FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:gangmap.io/definition":{},"f:gangmap.io/gpus":{},"f:gangmap.io/role-gpus":{},"f:gangmap.io/status":{},"f:kai.scheduler/top-owner-metadata":{}},"f:labels":{".":{},"f:kai.scheduler/queue":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"x\"}":{}}},"f:spec":{".":{},"f:minSubGroup":{},"f:priorityClassName":{},"f:queue":{},"f:subGroups":{},"f:topologyConstraint":{}}}`)}}}
	if kaiStatus {
		gpus := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("19"), corev1.ResourceCPU: resource.MustParse("10"), corev1.ResourceMemory: resource.MustParse("40Gi")}
		pg.Status = v2alpha2.PodGroupStatus{
			Conditions: []v2alpha2.PodGroupCondition{{Type: "UnschedulableOnNodePool", Status: corev1.ConditionTrue, TransitionID: "3", LastTransitionTime: now,
				Reason: "Unschedulable", Message: "not enough GPUs in node pool default"}},
			SchedulingConditions: []v2alpha2.SchedulingCondition{{Type: v2alpha2.UnschedulableOnNodePool, NodePool: "default", Reason: "Unschedulable",
				Message: "NonPreemptibleOverQuota: queue team-a would exceed its quota", Status: corev1.ConditionTrue, TransitionID: "3", LastTransitionTime: now,
				Reasons: v2alpha2.UnschedulableExplanations{{Reason: v2alpha2.NonPreemptibleOverQuota, Message: "queue team-a would exceed its quota",
					Details: &v2alpha2.UnschedulableExplanationDetails{QueueDetails: &v2alpha2.QuotaDetails{Name: "team-a",
						QueueRequestedResources: gpus, QueueDeservedResources: gpus, QueueAllocatedNonPreemptibleResources: gpus, PodGroupRequestedResources: gpus}}}}}},
			ResourcesStatus: v2alpha2.PodGroupResourcesStatus{Requested: gpus},
		}
	}
	return pg
}

// decodeAsInformer encodes pg as the API server does and decodes it as the grouper's informer
// does (the API machinery's JSON serializer: each object its own strings, maps and slices).
func decodeAsInformer(tb testing.TB, pg *v2alpha2.PodGroup) *v2alpha2.PodGroup {
	tb.Helper()
	raw, err := json.Marshal(pg)
	if err != nil {
		tb.Fatal(err)
	}
	out := &v2alpha2.PodGroup{}
	if _, _, err := podGroupCodecs.UniversalDeserializer().Decode(raw, nil, out); err != nil {
		tb.Fatal(err)
	}
	return out
}

var podGroupCodecs = func() serializer.CodecFactory {
	s := k8sruntime.NewScheme()
	if err := v2alpha2.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s)
}()

func cachedView(tb testing.TB, pg *v2alpha2.PodGroup) *v2alpha2.PodGroup {
	tb.Helper()
	out, err := CacheTransform(pg)
	if err != nil {
		tb.Fatal(err)
	}
	return out.(*v2alpha2.PodGroup)
}

// readerShapes are PodGroups of every shape Build makes: Karta v2 sub-groups, nested sub-groups
// with topology, a flat gang with topology and preemption settings, the scale and JobSet ones.
func readerShapes() map[string]*Metadata {
	nested := karta()
	nested.SubGroups = []*SubGroupMetadata{
		{Name: "leader", MinSubGroup: ptr.To(int32(1))},
		{Name: "leader-0", Parent: ptr.To("leader"), MinAvailable: 1, TopologyConstraints: &TopologyConstraintMetadata{RequiredTopologyLevel: "rack", Topology: "t"}},
		{Name: "workers", MinAvailable: 4},
	}
	nested.Topology, nested.PreferredTopologyLevel = "t", "zone"
	return map[string]*Metadata{
		"karta":  karta(),
		"nested": nested,
		"flat": {Name: "pg-job-uid-1", Namespace: "ns", Owner: testOwner, Queue: "q", MinAvailable: 3, Topology: "t", RequiredTopologyLevel: "zone",
			Preemptibility: v2alpha2.NonPreemptible, StalenessGracePeriod: &metav1.Duration{Duration: time.Minute}},
		"scale":  scaleMetadata(7),
		"jobset": jobSetMetadata(7),
	}
}

// TestCacheViewKeepsWhatReadersRead: the cached view of a PodGroup as the API server serves it
// has the same metadata (but managed fields) and spec, and the conditions' type and status;
// twice-transformed it is the same; the input is not written.
func TestCacheViewKeepsWhatReadersRead(t *testing.T) {
	for name, md := range readerShapes() {
		t.Run(name, func(t *testing.T) {
			for _, kai := range []bool{false, true} {
				in := decodeAsInformer(t, served(md, 1, kai))
				before := in.DeepCopy()
				got := cachedView(t, in)
				assert.Equal(t, before, in, "the transform wrote to its input")

				want := before.DeepCopy()
				want.ManagedFields = nil
				assert.Equal(t, want.ObjectMeta, got.ObjectMeta)
				assert.Equal(t, want.TypeMeta, got.TypeMeta)
				assert.Equal(t, want.Spec, got.Spec)
				assert.Empty(t, got.Status.ResourcesStatus)
				require.Len(t, got.Status.Conditions, len(want.Status.Conditions))
				for i, cond := range want.Status.Conditions {
					assert.Equal(t, v2alpha2.PodGroupCondition{Type: cond.Type, Status: cond.Status}, got.Status.Conditions[i])
				}
				require.Len(t, got.Status.SchedulingConditions, len(want.Status.SchedulingConditions))
				for i, cond := range want.Status.SchedulingConditions {
					assert.Equal(t, v2alpha2.SchedulingCondition{Type: cond.Type, Status: cond.Status}, got.Status.SchedulingConditions[i])
				}
				again := cachedView(t, got)
				assert.Equal(t, got, again, "a second transform changes nothing")
			}
		})
	}
	p := &corev1.Pod{}
	got, err := CacheTransform(p)
	require.NoError(t, err)
	assert.Same(t, p, got, "non-PodGroups pass unchanged")
}

// TestApplyOfCachedViewWritesNothing: with the cache holding CacheTransform's view of what the API
// server stored (KAI's status included), applying the same desired PodGroup again writes
// nothing, for every shape Build makes; a desired change is written once, and the Update keeps
// everything the stored object had that gangmap does not own (labels, annotations, finalizers)
// and leaves the status KAI wrote alone.
func TestApplyOfCachedViewWritesNothing(t *testing.T) {
	for name, md := range readerShapes() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a, c, w := newApplier(t, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				pg, ok := obj.(*v2alpha2.PodGroup)
				if !ok {
					return c.Get(ctx, key, obj, opts...)
				}
				// The cache: what the server stores, as the informer decodes it, through the view.
				if err := c.Get(ctx, key, pg); err != nil {
					return err
				}
				*pg = *cachedView(t, decodeAsInformer(t, pg))
				return nil
			}})
			res, err := a.Apply(ctx, md)
			require.NoError(t, err)
			require.Equal(t, Created, res)

			// Others write: KAI's status, a finalizer, KAI's stale timestamp annotation.
			stored := getPodGroup(t, c, md)
			withStatus := served(md, 1, true)
			stored.Status = withStatus.Status
			require.NoError(t, c.Status().Update(ctx, stored))
			stored = getPodGroup(t, c, md)
			stored.Finalizers = []string{"example.com/audit"}
			if stored.Annotations == nil {
				stored.Annotations = map[string]string{}
			}
			stored.Annotations["kai.scheduler/stale-podgroup-timestamp"] = "2026-11-30T00:00:00Z"
			require.NoError(t, c.Update(ctx, stored))
			stored = getPodGroup(t, c, md)
			w.creates.Store(0)
			w.updates.Store(0)

			for range 3 {
				res, err = a.Apply(ctx, md)
				require.NoError(t, err)
				assert.Equal(t, Unchanged, res)
			}
			assert.EqualValues(t, 0, w.total(), "an unchanged desired PodGroup must not be written")

			changed := *md
			changed.Labels = map[string]string{"release": "2"}
			changed.Annotations = map[string]string{"gangmap.io/gpus": "16"}
			changed.MinAvailable, changed.MinSubGroup, changed.SubGroups = 5, nil, nil
			res, err = a.Apply(ctx, &changed)
			require.NoError(t, err)
			assert.Equal(t, Updated, res)
			assert.EqualValues(t, 1, w.total())
			got := getPodGroup(t, c, md)
			for k, v := range stored.Labels {
				assert.Equal(t, v, got.Labels[k], "label %s", k)
			}
			for k, v := range stored.Annotations {
				if k != "gangmap.io/gpus" {
					assert.Equal(t, v, got.Annotations[k], "annotation %s", k)
				}
			}
			assert.Equal(t, "16", got.Annotations["gangmap.io/gpus"])
			assert.Equal(t, "2", got.Labels["release"])
			assert.Equal(t, stored.Finalizers, got.Finalizers)
			assert.Equal(t, stored.Status, got.Status, "the status KAI wrote is left alone")
			assert.Equal(t, int32(5), *got.Spec.MinMember)
		})
	}
}

// BenchmarkCachedPodGroupBytes reports the live heap one cached PodGroup costs in the grouper's
// PodGroup informer (a client-go store with the namespace index), decoded as the informer decodes
// it, with managed fields dropped (the transform before this one, podview.TransformWorkload) and
// through CacheTransform: the scale benchmark's PodGroups (e2e/scale: 10,000 CustomJobs), a
// kubectl-applied JobSet's (its last-applied-configuration copied by KAI's default metadata),
// and both with the status KAI's scheduler writes while a gang waits. cache-view+owner-index adds
// the stray collector's index (strays.OwnerIndex), so it is all the grouper holds per PodGroup.
func BenchmarkCachedPodGroupBytes(b *testing.B) {
	const n = 10000
	for _, w := range []struct {
		name string
		md   func(int) *Metadata
		kai  bool
	}{{"scale", scaleMetadata, false}, {"scale-kai-status", scaleMetadata, true}, {"jobset", jobSetMetadata, false}, {"jobset-kai-status", jobSetMetadata, true}} {
		raws := make([][]byte, n)
		for i := range raws {
			raws[i], _ = json.Marshal(served(w.md(i), i, w.kai))
		}
		for _, tc := range []string{"managed-fields-dropped", "cache-view", "cache-view+owner-index"} {
			b.Run(w.name+"/"+tc, func(b *testing.B) {
				var per float64
				for range b.N {
					owners := strays.NewOwnerIndex()
					per = heapPerPodGroup(b, raws, func(pg *v2alpha2.PodGroup) any {
						if tc == "managed-fields-dropped" {
							pg.ManagedFields = nil
							return pg
						}
						out := cachedView(b, pg)
						if tc == "cache-view+owner-index" {
							owners.OnAdd(out, true)
						}
						return out
					})
					runtime.KeepAlive(owners)
				}
				b.ReportMetric(per, "bytes/podgroup")
				b.ReportMetric(per*10000/(1<<20), "MiB/10k-podgroups")
			})
		}
	}
}

// heapPerPodGroup decodes each of raws as the informer does, stores what keep returns in a
// client-go store with the namespace index, and returns the live heap per object (MemStats after
// a GC).
func heapPerPodGroup(tb testing.TB, raws [][]byte, keep func(*v2alpha2.PodGroup) any) float64 {
	store := toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	before := heapmeasure.Live()
	for _, raw := range raws {
		pg := &v2alpha2.PodGroup{}
		if _, _, err := podGroupCodecs.UniversalDeserializer().Decode(raw, nil, pg); err != nil {
			tb.Fatal(err)
		}
		if err := store.Add(keep(pg)); err != nil {
			tb.Fatal(err)
		}
	}
	after := heapmeasure.Live()
	runtime.KeepAlive(store)
	return float64(after-before) / float64(len(raws))
}

// TestCacheTransformKeepsMinimums: minMember and minSubGroup keep their exact value through
// CacheTransform: nil stays nil (not 0), 0 stays a pointer to 0, 256 and negative values are kept,
// and the PodGroup marshals as the one decoded.
func TestCacheTransformKeepsMinimums(t *testing.T) {
	for _, mins := range [][2]*int32{{nil, nil}, {ptr.To(int32(0)), ptr.To(int32(255))}, {ptr.To(int32(256)), ptr.To(int32(-1))}} {
		pg := &v2alpha2.PodGroup{}
		pg.Name, pg.Namespace = "pg", "ns"
		pg.Spec.MinMember, pg.Spec.MinSubGroup = mins[0], mins[1]
		got := cachedView(t, pg)
		want, err := json.Marshal(pg)
		require.NoError(t, err)
		have, err := json.Marshal(got)
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(have))
		assert.Equal(t, mins[0], got.Spec.MinMember)
		assert.Equal(t, mins[1], got.Spec.MinSubGroup)
	}
}
