package kaiplugin

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/internal/kaisamples"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/defaultgrouper"
	"github.com/gangmap/gangmap/podgrouper/core/hub"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/native"
	"github.com/gangmap/gangmap/podgrouper/core/owners"
	"github.com/gangmap/gangmap/podgrouper/core/ownerskip"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
	"github.com/gangmap/gangmap/podgrouper/core/workloadmap"
)

// sampleRegistry is the catalog plus the e2e CustomJob Karta as a cluster definition.
func sampleRegistry(t *testing.T) *definitions.Registry {
	t.Helper()
	reg, err := kaisamples.Registry("../../../e2e/testdata/customjob-karta.yaml")
	require.NoError(t, err)
	return reg
}

func samples(t *testing.T, reg *definitions.Registry) []kaisamples.Sample {
	t.Helper()
	ctx := context.Background()
	out, err := kaisamples.Load(ctx, "../../../definitions/catalog/testdata", "team-a", reg)
	require.NoError(t, err)
	cj, ok, err := kaisamples.LoadFile(ctx, "../../../e2e/testdata/customjob.yaml", "team-a", reg)
	require.NoError(t, err)
	require.True(t, ok)
	return append(out, cj)
}

// standalone is the standalone grouper's decision for one sample as its pod controller and
// webhook make it (decide.Decider: owner walk, hub on gangmap's native table, workload
// grouper on KAI's default metadata), on a fake API holding the workload as the standalone
// grouper leaves it once it grouped it: with KAI's skip mark (--mark-workloads, the default).
func standalone(t *testing.T, reg *definitions.Registry, table *native.Table, s kaisamples.Sample) *decide.Decider {
	t.Helper()
	marked := s.Workload.DeepCopy()
	ann := marked.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[kaikeys.SkipPodGrouper], ann[ownerskip.SetBy] = "true", ownerskip.SetByValue
	marked.SetAnnotations(ann)
	c := fakeAPI(t, marked, s.Pods)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(s.Workload.GroupVersionKind(), meta.RESTScopeNamespace)
	wm := &workloadmap.Grouper{Registry: reg, Defaults: &defaultgrouper.Grouper{}}
	return &decide.Decider{Client: c, APIReader: c, Walker: &owners.Walker{Reader: c, Mapper: mapper},
		Hub: &hub.Hub{Native: table, Registry: reg, Grouper: wm}, SchedulerName: kaisamples.SchedulerName}
}

func fakeAPI(t *testing.T, w *unstructured.Unstructured, pods []*corev1.Pod) client.Client {
	t.Helper()
	c, err := kaisamples.FakeAPI(w, pods)
	require.NoError(t, err)
	return c
}

// embedded is gangmap inside KAI's pod-grouper for one sample: the hub on the same native table
// (as KAI's DefaultPluginsHub would answer), and the grouper KAI calls with the top owner it read
// (unmarked: inside KAI nothing marks workloads) and its owner chain.
func embedded(t *testing.T, reg *definitions.Registry, table *native.Table, s kaisamples.Sample) (*Hub, *Grouper) {
	t.Helper()
	c := fakeAPI(t, s.Workload, s.Pods)
	wm := &workloadmap.Grouper{Registry: reg, Defaults: &defaultgrouper.Grouper{}, KAIPlugin: true}
	return &Hub{Native: TableNatives{Table: table}, Registry: reg},
		&Grouper{Decider: &decide.Decider{APIReader: c, SchedulerName: kaisamples.SchedulerName}, Grouper: wm}
}

// kaiChain is the owner chain KAI's pod controller passes for a pod owned by the workload
// (kaisamples.Chain).
func kaiChain(w *unstructured.Unstructured) []*metav1.PartialObjectMetadata {
	return kaisamples.Chain(w)
}

type tally struct{ samples, pods, native, gangPods, defaultPods int }

// TestSameGangsEitherWay: for every catalog sample (the 67 real manifests of a workload kind in
// definitions/catalog/testdata; its other 3 files are two ClusterTrainingRuntimes and a ConfigMap,
// which no definition plans) and the e2e CustomJob, pod after pod, gangmap inside KAI's
// pod-grouper makes KAI write the PodGroup the standalone grouper writes: KAI's handler.go
// createPodGroupForMetadata of the plugin's metadata (gangmap's copy, podgroup.Build) equals the
// standalone Applier's podgroup.Desired over the PodGroup as the earlier pods left it (the start
// order's deferred sub-groups included), and the pod gets the same sub-group label. On KAI v0.17's
// native table both leave native kinds to KAI; with no native table both group every sample.
func TestSameGangsEitherWay(t *testing.T) {
	reg := sampleRegistry(t)
	all := samples(t, reg)
	require.Len(t, all, 68, "the 67 catalog samples of workload kinds and the CustomJob")
	noNatives := native.DefaultTable()
	for _, e := range noNatives.Entries() {
		require.NoError(t, noNatives.Remove(e))
	}
	for _, tc := range []struct {
		name  string
		table *native.Table
	}{{"kai-v0.17-natives", native.DefaultTable()}, {"no-natives", noNatives}} {
		t.Run(tc.name, func(t *testing.T) {
			var n tally
			for _, s := range all {
				n.samples++
				compareSample(t, reg, tc.table, s, &n)
			}
			t.Logf("%d samples, %d pods: %d of native kinds, %d in a gang PodGroup, %d in KAI's default PodGroup", n.samples, n.pods, n.native, n.gangPods, n.defaultPods)
			if tc.name == "no-natives" {
				assert.Zero(t, n.native)
				assert.Greater(t, n.gangPods, n.pods*3/4, "most made pods land in a gang (their selectors are label lookups)")
			} else {
				assert.Positive(t, n.native)
				assert.Positive(t, n.gangPods)
			}
		})
	}
}

// compareSample compares the sample's pods on both paths (see TestSameGangsEitherWay) and
// returns, for the pods gangmap grouped inside KAI, each pod's sub-group and the last PodGroup
// KAI's handler would write, by name.
func compareSample(t *testing.T, reg *definitions.Registry, table *native.Table, s kaisamples.Sample, n *tally) (map[string]string, map[string]*v2alpha2.PodGroup) {
	t.Helper()
	ctx := context.Background()
	d := standalone(t, reg, table, s)
	h, g := embedded(t, reg, table, s)
	// The PodGroups each path has written so far, as the next pod's decision finds them: the
	// standalone Applier writes podgroup.Desired over the existing one; KAI's handler writes what
	// the plugin's metadata says (gangmap's copy: podgroup.Build), and the plugin reads the
	// existing one for the start order.
	alone, inside := map[string]*v2alpha2.PodGroup{}, map[string]*v2alpha2.PodGroup{}
	g.PodGroups = func(_ context.Context, _, name string) (*v2alpha2.PodGroup, error) { return inside[name], nil }
	gvk := metav1.GroupVersionKind(s.Workload.GroupVersionKind())
	subGroups := map[string]string{}
	for _, pod := range s.Pods {
		n.pods++
		want, werr := d.Decide(ctx, pod.DeepCopy())
		switch h.Choose(gvk) {
		case Native:
			n.native++
			assert.NoError(t, werr, "%s %s", s.Name, pod.Name)
			assert.Nil(t, want, "%s %s: the standalone grouper leaves a native kind to KAI", s.Name, pod.Name)
			continue
		case Gangmap:
		default:
			t.Fatalf("%s: a kind with a definition and no native plugin must be gangmap's", s.Name)
		}
		got, gerr := g.Metadata(s.Workload.DeepCopy(), pod.DeepCopy(), kaiChain(s.Workload)...)
		if werr != nil || gerr != nil {
			assert.Equal(t, werr != nil, gerr != nil, "%s %s: both fail or neither (standalone %v, inside KAI %v)", s.Name, pod.Name, werr, gerr)
			continue
		}
		require.NotNil(t, want, "%s %s: the standalone grouper groups every pod of a marked workload", s.Name, pod.Name)
		require.NotNil(t, got, "%s %s", s.Name, pod.Name)
		alone[got.Name] = podgroup.Desired(want.Metadata, alone[want.Metadata.Name])
		inside[got.Name] = podgroup.Build(got)
		assert.Equal(t, alone[want.Metadata.Name], inside[got.Name], "%s %s: the PodGroup", s.Name, pod.Name)
		sub := ""
		if sg := got.FindSubGroupForPod(pod.Namespace, pod.Name); sg != nil {
			sub = sg.Name
		}
		assert.Equal(t, want.SubGroup, sub, "%s %s: the sub-group label", s.Name, pod.Name)
		subGroups[pod.Name] = sub
		if want.Seen.Role != "" {
			n.gangPods++
		} else {
			n.defaultPods++
		}
	}
	return subGroups, inside
}

// TestMetadataConcurrentCallersWriteTheirOwn: KAI reconciles pods in parallel
// (--max-concurrent-reconciles, 10 by default) and writes into the metadata it gets
// (pod_controller.go addNodePoolLabel); the plan cache shares sub-groups among a PodGroup's pods.
// 10 callers × 30 calls for the CustomJob's pods, each writing into every map, slice and pointer of
// its result, race with nothing (go test -race) and each still gets the PodGroup of the first call.
func TestMetadataConcurrentCallersWriteTheirOwn(t *testing.T) {
	reg := sampleRegistry(t)
	cj, ok, err := kaisamples.LoadFile(context.Background(), "../../../e2e/testdata/customjob.yaml", "team-a", reg)
	require.NoError(t, err)
	require.True(t, ok)
	_, g := embedded(t, reg, native.DefaultTable(), cj)
	want := map[string]*v2alpha2.PodGroup{}
	for _, p := range cj.Pods {
		md, err := g.Metadata(cj.Workload, p, kaiChain(cj.Workload)...)
		require.NoError(t, err)
		want[p.Name] = podgroup.Build(md)
	}
	errs := make(chan error, 10)
	for w := 0; w < 10; w++ {
		go func() {
			for i := 0; i < 30; i++ {
				p := cj.Pods[(w+i)%len(cj.Pods)]
				md, err := g.Metadata(cj.Workload, p, kaiChain(cj.Workload)...)
				if err != nil {
					errs <- err
					return
				}
				if got := podgroup.Build(md); !assert.ObjectsAreEqual(want[p.Name], got) {
					errs <- fmt.Errorf("pod %s: PodGroup %v, want %v", p.Name, got, want[p.Name])
					return
				}
				md.Labels["kai.scheduler/node-pool"] = "pool"
				md.Annotations["x"] = "y"
				*md.MinSubGroup = 0
				for _, sg := range md.SubGroups {
					sg.PodsReferences = append(sg.PodsReferences, "other")
					sg.MinAvailable = 0
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < 10; w++ {
		require.NoError(t, <-errs)
	}
}
