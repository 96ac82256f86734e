package inkai

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/internal/kaisamples"
	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/defaultgrouper"
	"github.com/gangmap/gangmap/podgrouper/core/kaiplugin"
	"github.com/gangmap/gangmap/podgrouper/core/workloadmap"
	"github.com/gangmap/gangmap/podgrouper/runtime/controller"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
	"github.com/gangmap/gangmap/podgrouper/runtime/podbook"
	"github.com/gangmap/gangmap/podgrouper/runtime/workloadmetrics"
)

// fakeInformer records the event handlers added to it (the rest of crcache.Informer is unused).
type fakeInformer struct {
	crcache.Informer
	mu       sync.Mutex
	handlers []toolscache.ResourceEventHandler
}

func (f *fakeInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers = append(f.handlers, h)
	return nil, nil
}

func (f *fakeInformer) RemoveEventHandler(toolscache.ResourceEventHandlerRegistration) error {
	return nil
}

// count is the number of handlers added.
func (f *fakeInformer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.handlers)
}

// deleted tells every handler obj was deleted.
func (f *fakeInformer) deleted(obj any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.handlers {
		h.OnDelete(obj)
	}
}

// fakeInformers is KAI's manager cache: one informer per kind asked for.
type fakeInformers struct {
	mu    sync.Mutex
	kinds map[string]*fakeInformer
}

func (f *fakeInformers) GetInformer(_ context.Context, obj client.Object, _ ...crcache.InformerGetOption) (crcache.Informer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kind := "Pod"
	if u, ok := obj.(*unstructured.Unstructured); ok {
		kind = u.GroupVersionKind().String()
	}
	if f.kinds == nil {
		f.kinds = map[string]*fakeInformer{}
	}
	if f.kinds[kind] == nil {
		f.kinds[kind] = &fakeInformer{}
	}
	return f.kinds[kind], nil
}

func (f *fakeInformers) informer(kind string) *fakeInformer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kinds[kind]
}

// observed is the e2e CustomJob sample (1 coordinator, 2 workers: e2e/testdata/customjob.yaml
// with the Karta e2e/testdata/customjob-karta.yaml) inside KAI with an Observer on fake informers.
func observed(t *testing.T) (kaisamples.Sample, *kaiplugin.Grouper, *Observer, *fakeInformers) {
	t.Helper()
	reg, err := kaisamples.Registry("../../../e2e/testdata/customjob-karta.yaml")
	require.NoError(t, err)
	s, ok, err := kaisamples.LoadFile(context.Background(), "../../../e2e/testdata/customjob.yaml", "team-a", reg)
	require.NoError(t, err)
	require.True(t, ok)
	require.Len(t, s.Pods, 3)
	c, err := kaisamples.FakeAPI(s.Workload, s.Pods)
	require.NoError(t, err)
	wm := &workloadmap.Grouper{Registry: reg, Defaults: &defaultgrouper.Grouper{}, KAIPlugin: true}
	g := &kaiplugin.Grouper{Decider: &decide.Decider{APIReader: c, SchedulerName: kaisamples.SchedulerName}, Grouper: wm}
	book := podbook.New()
	inf := &fakeInformers{}
	obs := &Observer{Observer: controller.Observer{Findings: findings.NewTrackerIn(book), Metrics: &workloadmetrics.Tracker{MaxWorkloads: 10, Pods: book},
		Planner: wm, Book: book}, Informers: inf}
	g.Observer = obs
	return s, g, obs, inf
}

// rolePods is gangmap_workload_role_pods of the tracker, as "role phase value" lines, sorted.
func rolePods(t *testing.T, m *workloadmetrics.Tracker) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	families, err := reg.Gather()
	require.NoError(t, err)
	var out []string
	for _, f := range families {
		if f.GetName() != "gangmap_workload_role_pods" {
			continue
		}
		for _, s := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range s.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if s.GetGauge().GetValue() != 0 {
				out = append(out, l["role"]+" "+l["phase"]+" "+strconv.FormatFloat(s.GetGauge().GetValue(), 'f', -1, 64))
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// TestObserverCountsDecisionsAndForgetsDeletions: inside KAI, each pod gangmap's grouper decides
// (KAI's pod controller calls Grouper.Metadata on every pod event) is counted in the workload
// metrics (gangmap_workload_role_pods: coordinator 1 and worker 2 Pending, the CustomJob's plan)
// and the findings; the Observer's Runnable puts a delete handler on KAI's pod informer, so a
// deleted pod (also one known only by its tombstone) leaves the counts, and on the workload kind's
// informer, so a deleted workload leaves the metrics and findings: KAI's reconciler sees neither.
func TestObserverCountsDecisionsAndForgetsDeletions(t *testing.T) {
	s, g, obs, inf := observed(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- obs.Start(ctx) }()
	require.Eventually(t, func() bool { return inf.informer("Pod") != nil && inf.informer("Pod").count() == 1 }, 5*time.Second, 10*time.Millisecond)
	for _, p := range s.Pods {
		md, err := g.Metadata(s.Workload, p, kaisamples.Chain(s.Workload)...)
		require.NoError(t, err)
		require.NotNil(t, md)
	}
	assert.Equal(t, "coordinator Pending 1; worker Pending 2", rolePods(t, obs.Metrics))
	assert.Equal(t, 3, obs.Book.Len())

	inf.informer("Pod").deleted(s.Pods[2])
	assert.Equal(t, "coordinator Pending 1; worker Pending 1", rolePods(t, obs.Metrics), "a deleted pod leaves the counts")
	_, err := g.Metadata(s.Workload, s.Pods[2], kaisamples.Chain(s.Workload)...)
	require.NoError(t, err)
	assert.Equal(t, "coordinator Pending 1; worker Pending 1", rolePods(t, obs.Metrics), "a decision in flight at the deletion does not bring it back")
	deleting := s.Pods[0].DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	_, err = g.Metadata(s.Workload, deleting, kaisamples.Chain(s.Workload)...)
	require.NoError(t, err)
	assert.Equal(t, "worker Pending 1", rolePods(t, obs.Metrics), "a pod being deleted is forgotten")
	inf.informer("Pod").deleted(toolscache.DeletedFinalStateUnknown{Key: "team-a/x", Obj: s.Pods[1]})
	assert.Equal(t, "", rolePods(t, obs.Metrics), "a tombstone too")

	kind := inf.informer(s.Workload.GroupVersionKind().String())
	require.NotNil(t, kind, "the workload's kind is watched for deletions")
	require.True(t, obs.Metrics.Tracked(s.Workload.GetUID()))
	kind.deleted(s.Workload)
	assert.False(t, obs.Metrics.Tracked(s.Workload.GetUID()), "a deleted workload has no series")
	assert.Empty(t, obs.Findings.Evaluate(time.Now().Add(time.Hour), findings.Config{}, nil), "nor findings")
	cancel()
	require.NoError(t, <-done)
}

// TestObserverReportsAFindingInsideKAI: a CustomJob whose second worker carries a misspelt role
// label (e2e.example.com/role: wroker, which no component's podSelector matches: the Karta's
// componentTypeSelector wants worker) gives, through the findings Reporter as Setup wires it inside
// KAI (no Client: no PodGroup annotation), an UnclaimedPods Warning Event on the CustomJob at the
// first evaluation (findings package doc: "at once").
func TestObserverReportsAFindingInsideKAI(t *testing.T) {
	s, g, obs, _ := observed(t)
	s.Pods[2].Labels["e2e.example.com/role"] = "wroker"
	for _, p := range s.Pods {
		_, err := g.Metadata(s.Workload, p, kaisamples.Chain(s.Workload)...)
		require.NoError(t, err)
	}
	rec := record.NewFakeRecorder(10)
	rep := &findings.Reporter{Tracker: obs.Findings, Recorder: rec}
	rep.Tick(context.Background())
	require.NotEmpty(t, rec.Events)
	ev := <-rec.Events
	assert.True(t, strings.HasPrefix(ev, "Warning UnclaimedPods "), ev)
	assert.Contains(t, ev, "wroker")
}
