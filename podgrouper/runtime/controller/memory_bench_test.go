package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/internal/heapmeasure"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/defaultgrouper"
	"github.com/gangmap/gangmap/podgrouper/core/grouper"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/ownerskip"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
	"github.com/gangmap/gangmap/podgrouper/core/workloadmap"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
	"github.com/gangmap/gangmap/podgrouper/runtime/podbook"
	"github.com/gangmap/gangmap/podgrouper/runtime/podview"
	"github.com/gangmap/gangmap/podgrouper/runtime/strays"
	"github.com/gangmap/gangmap/podgrouper/runtime/workloadmetrics"
)

// steadyState is what the grouper holds once every pod of every workload is grouped, built by
// the grouper's own code from the objects the API server would send (each decoded from its own
// JSON, so no strings are shared that the informers would not share): the pod cache (podcache,
// each pod arriving through its informer's watch), the
// workloads' cache (unstructured, through the grouper's podview.Interner), the PodGroups' cache (typed, as
// podgroup.Build writes them and the API server returns them, managed fields dropped), the plan
// cache (workloadmap.Grouper, which decides every pod), and the per-pod bookkeeping (podbook,
// findings, workload metrics: what the reconciler records for a grouped, repaired pod).
type steadyState struct {
	pods                 *benchPodCache
	workloads, podGroups toolscache.Indexer
	// interner is the workloads' cache transform (the manager's DefaultTransform).
	interner *podview.Interner
	// podGroupOwners is the stray collector's index of the cached PodGroups (strays.OwnerIndex,
	// fed by the informer's events).
	podGroupOwners *strays.OwnerIndex
	grouper        *workloadmap.Grouper
	book           *podbook.Book
	findings       *findings.Tracker
	metrics        *workloadmetrics.Tracker
}

func newSteadyState(tb testing.TB) *steadyState {
	tb.Helper()
	c, err := expr.NewCompiler(expr.DefaultLimits())
	if err != nil {
		tb.Fatal(err)
	}
	reg := definitions.NewRegistry(c)
	defs, err := definitions.LoadPaths([]string{"../../../e2e/testdata/customjob-karta.yaml"}, definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	if err != nil {
		tb.Fatal(err)
	}
	reg.SetSource(definitions.SourceFile, defs)
	store := func() toolscache.Indexer {
		return toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	}
	book := podbook.New()
	return &steadyState{pods: newBenchPodCache(tb), workloads: store(), podGroups: store(), interner: podview.NewInterner(podview.WorkloadInternerSize),
		podGroupOwners: strays.NewOwnerIndex(),
		grouper:        &workloadmap.Grouper{Registry: reg, Defaults: &defaultgrouper.Grouper{}},
		book:           book, findings: findings.NewTrackerIn(book), metrics: &workloadmetrics.Tracker{MaxWorkloads: workloadmetrics.DefaultMaxWorkloads, Pods: book}}
}

// decoded round-trips obj through JSON into out, as an informer decodes each object.
func decoded(tb testing.TB, obj, out any) {
	raw, err := json.Marshal(obj)
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		tb.Fatal(err)
	}
}

// scaleCustomJob is the scale benchmark's CustomJob (e2e/testdata/customjob.yaml) number w with
// workers workers, as the API server returns it once gangmap has marked it (generation, KAI's and
// gangmap's skip annotations: 8 metadata entries), through the workloads' cache transform.
func scaleCustomJob(tb testing.TB, in *podview.Interner, raw []byte, w, workers int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		tb.Fatal(err)
	}
	u.SetNamespace("scale")
	u.SetName(fmt.Sprintf("w%05d", w))
	u.SetUID(types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", w, w)))
	u.SetResourceVersion(fmt.Sprint(100000 + w))
	u.SetCreationTimestamp(metav1.Unix(1764590000+int64(w)/16, 0))
	u.SetGeneration(1)
	u.SetAnnotations(map[string]string{kaikeys.SkipPodGrouper: "true", ownerskip.SetBy: "set"})
	if err := unstructured.SetNestedField(u.Object, int64(workers), "spec", "worker", "replicas"); err != nil {
		tb.Fatal(err)
	}
	obj, err := in.Transform(u)
	if err != nil {
		tb.Fatal(err)
	}
	return obj.(*unstructured.Unstructured)
}

// rolePod is the pod i of the role of job (as the scale benchmark creates it: the template's
// metadata and spec, one controller owner reference), after the grouper labelled it.
func rolePod(tb testing.TB, job *unstructured.Unstructured, role string, i int) *corev1.Pod {
	tplMap, _, _ := unstructured.NestedMap(job.Object, "spec", role, "template")
	var tpl corev1.PodTemplateSpec
	decoded(tb, tplMap, &tpl)
	yes := true
	pod := &corev1.Pod{ObjectMeta: tpl.ObjectMeta, Spec: tpl.Spec}
	pod.Namespace, pod.Name = job.GetNamespace(), fmt.Sprintf("%s-%s-%d", job.GetName(), role, i)
	// A UUID as the API server makes them (36 characters), of the job's and the pod's numbers.
	pod.UID = types.UID(fmt.Sprintf("%s-%s%04x", job.GetUID()[:23], job.GetUID()[28:36], i))
	pod.ResourceVersion, pod.CreationTimestamp = fmt.Sprint(200000+i), metav1.Unix(1764590001, 0)
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: job.GetAPIVersion(), Kind: job.GetKind(), Name: job.GetName(), UID: job.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}}
	pod.Status.Phase = corev1.PodPending
	return pod
}

// addWorkload caches the workload, decides each of its pods with the grouper, caches the pods
// as labelled, the PodGroup as written, and records the bookkeeping of each grouped pod.
func (s *steadyState) addWorkload(tb testing.TB, ctx context.Context, job *unstructured.Unstructured, workers int, now time.Time) {
	if err := s.workloads.Add(job); err != nil {
		tb.Fatal(err)
	}
	wrote := false
	for _, rc := range []struct {
		role string
		n    int
	}{{"coordinator", 1}, {"worker", workers}} {
		for i := range rc.n {
			pod := rolePod(tb, job, rc.role, i)
			md, seen, err := s.grouper.GroupPod(ctx, job, pod)
			if err != nil || md == nil {
				tb.Fatalf("pod %s: %v", pod.Name, err)
			}
			if !wrote {
				var pg v2alpha2.PodGroup
				decoded(tb, podgroup.Build(md), &pg)
				pg.UID, pg.ResourceVersion, pg.Generation = types.UID(string(job.GetUID())+"-pg"), "300000", 1
				// The PodGroups' cache transform (app.go: podgroup.CacheTransform).
				cached, _ := podgroup.CacheTransform(&pg)
				if err := s.podGroups.Add(cached); err != nil {
					tb.Fatal(err)
				}
				s.podGroupOwners.OnAdd(cached, true)
				wrote = true
			}
			pod.Annotations = map[string]string{kaikeys.PodGroupName: md.Name, kaikeys.SkipPodGrouper: "true"}
			if sg := md.FindSubGroupForPod(pod.Namespace, pod.Name); sg != nil {
				pod.Labels[kaikeys.SubGroupName] = sg.Name
			} else if seen.Role != "" {
				pod.Labels[kaikeys.SubGroupName] = seen.Role
			}
			var cached corev1.Pod
			decoded(tb, pod, &cached)
			// The reconciler's pod is the Record's (podcache), so its key shares the Record's strings.
			view := s.pods.add(tb, &cached)
			s.record(client.ObjectKeyFromObject(view), view.UID, job, seen, now)
		}
	}
}

// record is the reconciler's bookkeeping of a grouped, repaired pod (reconcile, observe, track,
// labelPod: as recordForBenchmark, with the grouper's own plan and role).
func (s *steadyState) record(key types.NamespacedName, uid types.UID, job *unstructured.Unstructured, seen grouper.Seen, now time.Time) {
	owner := job.GetUID()
	s.book.Group(key, owner)
	s.findings.SetPlan(seen.Plan, findings.DefinitionOf(seen.Definition), now)
	s.findings.Observe(key, findings.Observation{Owner: owner, Role: seen.Role, Unclaimed: seen.Unclaimed}, now)
	s.metrics.TrackPod(owner, "CustomJob.e2e.example.com", seen.Plan, key, seen.Role, corev1.PodPending)
	s.book.FirstRepair(key, uid)
}

// BenchmarkGrouperMemory builds the grouper's steady state (see steadyState) for N pods of M
// CustomJobs of N/M pods (1 coordinator and workers, one gang each, as `make bench-scale`) and
// reports its live heap (runtime.MemStats after a GC, above what the benchmark itself holds):
// the projection of the grouper's heap at 100,000 pods and 10,000 workloads, the goal of issue 19
// (256 MiB resident), and the heap per pod and per workload, and the heap's spans in use
// (heap-spans-MiB, heapSpans: what the long-lived objects hold with the free slots around them).
// The live heap of a grouper process
// adds its fixed costs (the definitions, informers' machinery, metrics, HTTP/2 buffers: about
// 8 MiB before any pod in the scale run) and the workloads' events in flight.
func BenchmarkGrouperMemory(b *testing.B) {
	raw, err := os.ReadFile("../../../e2e/testdata/customjob.yaml")
	if err != nil {
		b.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []struct{ pods, workloads int }{{20_000, 2_000}, {100_000, 10_000}} {
		b.Run(fmt.Sprintf("pods=%d/workloads=%d", size.pods, size.workloads), func(b *testing.B) {
			per := size.pods / size.workloads
			for range b.N {
				before, spansBefore := heapmeasure.Live(), heapSpans()
				s := newSteadyState(b)
				now := time.Now()
				for w := range size.workloads {
					s.addWorkload(b, context.Background(), scaleCustomJob(b, s.interner, js, w, per-1), per-1, now)
				}
				heap := float64(heapmeasure.Live() - before)
				b.ReportMetric(heap/(1<<20), "heap-MiB")
				b.ReportMetric(float64(heapSpans()-spansBefore)/(1<<20), "heap-spans-MiB")
				b.ReportMetric(heap/float64(size.pods), "heap-bytes/pod")
				for _, part := range s.parts() {
					b.ReportMetric(part.freed()/float64(size.pods), part.unit+"-bytes/pod")
				}
				runtime.KeepAlive(s)
			}
		})
	}
}

// heapSpans is the heap's spans in use right after liveHeap's collections (runtime.MemStats
// HeapInuse): the live heap plus the free slots of spans that hold a live object, which the Go
// runtime cannot return to the OS (nor move the objects out of). The Go memory limit counts the
// spans, not the live heap.
func heapSpans() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// part is one part of the steady state, and how to let it go.
type part struct {
	unit string
	drop func()
}

// freed drops the part and returns the live heap that freed.
func (p part) freed() float64 {
	before := heapmeasure.Live()
	p.drop()
	return float64(before) - float64(heapmeasure.Live())
}

// parts lists the steady state's parts in an order in which each frees what it alone holds: the
// bookkeeping (which holds each workload's plan in the findings) before the plan cache, the
// pods (whose strings the bookkeeping's keys share) after it.
func (s *steadyState) parts() []part {
	return []part{
		{"bookkeeping", func() { s.book, s.findings, s.metrics = nil, nil, nil }},
		{"pod-cache", func() { s.pods.close(); s.pods = nil }},
		{"plan-cache", func() { s.grouper = nil }},
		{"podgroup-cache", func() { s.podGroups, s.podGroupOwners = nil, nil }},
		{"workload-cache", func() { s.workloads, s.interner = nil, nil }},
	}
}
