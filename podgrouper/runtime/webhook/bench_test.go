package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/manifest"
	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/defaultgrouper"
	"github.com/gangmap/gangmap/podgrouper/core/hub"
	"github.com/gangmap/gangmap/podgrouper/core/native"
	"github.com/gangmap/gangmap/podgrouper/core/owners"
	"github.com/gangmap/gangmap/podgrouper/core/workloadmap"
)

// cacheReader stands in for the manager's informer cache: objects kept in memory by kind and key,
// and each Get returns a deep copy, as controller-runtime's CacheReader does (its default).
type cacheReader struct {
	objs map[schema.GroupVersionKind]map[client.ObjectKey]runtime.Object
}

var _ client.Reader = (*cacheReader)(nil)

func newCacheReader(objs ...client.Object) *cacheReader {
	r := &cacheReader{objs: map[schema.GroupVersionKind]map[client.ObjectKey]runtime.Object{}}
	for _, o := range objs {
		gvk := o.GetObjectKind().GroupVersionKind()
		if r.objs[gvk] == nil {
			r.objs[gvk] = map[client.ObjectKey]runtime.Object{}
		}
		r.objs[gvk][client.ObjectKeyFromObject(o)] = o
	}
	return r
}

func (r *cacheReader) Get(_ context.Context, key client.ObjectKey, out client.Object, _ ...client.GetOption) error {
	gvk := out.GetObjectKind().GroupVersionKind()
	if gvk.Empty() { // a typed object: its kind from the scheme, as controller-runtime's cache finds it
		var err error
		if gvk, err = apiutil.GVKForObject(out, clientgoscheme.Scheme); err != nil {
			return err
		}
	}
	obj, ok := r.objs[gvk][key]
	if !ok {
		return notFound(gvk, key)
	}
	cp := obj.DeepCopyObject()
	switch o := out.(type) {
	case *metav1.PartialObjectMetadata:
		src := cp.(client.Object)
		o.ObjectMeta = metav1.ObjectMeta{Name: src.GetName(), Namespace: src.GetNamespace(), UID: src.GetUID(),
			ResourceVersion: src.GetResourceVersion(), Labels: src.GetLabels(), Annotations: src.GetAnnotations(), OwnerReferences: src.GetOwnerReferences()}
	default:
		reflect.ValueOf(out).Elem().Set(reflect.ValueOf(cp).Elem())
	}
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// GetShared gives the stored object itself, as controller.InformerOwners does.
func (r *cacheReader) GetShared(_ context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (*unstructured.Unstructured, bool) {
	u, ok := r.objs[gvk][key].(*unstructured.Unstructured)
	return u, ok
}

func (r *cacheReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

// admissionFixture is a warm webhook: the catalog's definitions (JobSet grouped, as with
// --native-kinds-remove jobset.x-k8s.io/v1alpha2/JobSet), the seed JobSet and its Jobs in a
// cache-like reader with KAI's "train" priority class, and the plan of the JobSet already built.
type admissionFixture struct {
	webhook *admission.Webhook
	decider *decide.Decider
	jobSet  *unstructured.Unstructured
	podJSON []byte
}

func newAdmissionFixture(tb testing.TB) *admissionFixture {
	tb.Helper()
	objs, err := manifest.ReadFile("../../../gang/testdata/jobset-leader-workers.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	js := objs[0]
	js.SetNamespace("bench")
	js.SetUID("11111111-2222-3333-4444-555555555555")
	js.SetResourceVersion("1")
	job := func(name, uid string, owner *metav1.OwnerReference) *unstructured.Unstructured {
		j := &unstructured.Unstructured{}
		j.SetAPIVersion("batch/v1")
		j.SetKind("Job")
		j.SetNamespace("bench")
		j.SetName(name)
		j.SetUID(types.UID(uid))
		if owner != nil {
			j.SetOwnerReferences([]metav1.OwnerReference{*owner})
		}
		return j
	}
	yes := true
	jsRef := &metav1.OwnerReference{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: js.GetName(), UID: js.GetUID(), Controller: &yes}
	workersJob := job("train-llm-workers-1", "6c1f0d2e-9a4b-4f7e-8a51-3d2b7c9e0f11", jsRef)
	plainJob := job("plain", "7d2f0d2e-9a4b-4f7e-8a51-3d2b7c9e0f22", nil)
	// KAI's chart creates its priority classes (train, build-preemptible, build, inference) on
	// install; a pod naming one is looked up through the cache as the grouper's client does.
	train := &schedulingv1.PriorityClass{TypeMeta: metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"},
		ObjectMeta: metav1.ObjectMeta{Name: "train"}, Value: 50}
	reader := newCacheReader(js, workersJob, plainJob, train)

	c, err := expr.NewCompiler(expr.DefaultLimits())
	if err != nil {
		tb.Fatal(err)
	}
	reg := definitions.NewRegistry(c)
	if err := catalog.Register(reg); err != nil {
		tb.Fatal(err)
	}
	table := native.DefaultTable()
	if err := table.Remove("jobset.x-k8s.io/v1alpha2/JobSet"); err != nil {
		tb.Fatal(err)
	}
	decider := &decide.Decider{
		Client: reader, APIReader: reader, SharedOwners: reader,
		Walker:        &owners.Walker{Reader: reader, CacheTTL: time.Hour},
		Hub:           &hub.Hub{Native: table, Registry: reg, Grouper: &workloadmap.Grouper{Registry: reg, Defaults: &defaultgrouper.Grouper{Reader: reader}}},
		SchedulerName: "kai-scheduler",
	}
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		tb.Fatal(err)
	}
	m := &PodMutator{Decider: decider, Timeout: 5 * time.Second}
	raw, err := os.ReadFile("testdata/jobset-worker-pod.json")
	if err != nil {
		tb.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		tb.Fatal(err)
	}
	return &admissionFixture{webhook: &admission.Webhook{Handler: m, LogConstructor: requestLogger}, decider: decider, jobSet: js, podJSON: compact.Bytes()}
}

// request is the AdmissionRequest the API server sends for a pod CREATE with the given object.
func request(obj []byte) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       uuid.NewUUID(),
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: "bench", Operation: admissionv1.Create,
		Object: runtime.RawExtension{Raw: obj},
	}}
}

// admit runs one admission as the webhook server does after decoding the AdmissionReview: the
// handler, the response completed (its patch encoded), and the AdmissionReview response encoded.
func (f *admissionFixture) admit(ctx context.Context, req admission.Request, out *bytes.Buffer) (admission.Response, error) {
	resp := f.webhook.Handle(ctx, req)
	out.Reset()
	err := json.NewEncoder(out).Encode(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Response: &resp.AdmissionResponse,
	})
	return resp, err
}

// variant returns the fixture's pod JSON with the scheduler name or owner reference replaced.
func (f *admissionFixture) variant(tb testing.TB, mutate func(pod map[string]any)) []byte {
	tb.Helper()
	var pod map[string]any
	if err := json.Unmarshal(f.podJSON, &pod); err != nil {
		tb.Fatal(err)
	}
	mutate(pod)
	b, err := json.Marshal(pod)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkAdmit measures one admission (decoded AdmissionRequest to encoded AdmissionReview
// response) of a 3.9 KB JobSet worker pod, with a warm decider (owners and plan cached) and a
// logger as the grouper's (zap, info level); the grouped pod also with spec.priorityClassName
// naming an existing priority class (KAI's default grouper then reads it). Goals (issue 19): a pod of a grouped kind <= 100 µs
// and <= 150 allocations; a pod gangmap does not group (another scheduler, a native kind)
// <= 20 µs. Issue 32's bound, against which the hand-written decoders were judged and removed: a
// grouped pod <= 150 µs at the median (p50-ns: the median wall time of one admission in the
// run). Since then every pod is decoded whole by sigs.k8s.io/json, so the pods gangmap does not
// group take ~35 µs, past issue 19's 20 µs (bench/README.md, "Session 9").
func BenchmarkAdmit(b *testing.B) {
	ctx := admissionContext()
	f := newAdmissionFixture(b)
	cases := []struct {
		name    string
		pod     []byte
		mutated bool
	}{
		{"grouped-jobset-pod", f.podJSON, true},
		{"grouped-jobset-pod-priority-class", f.variant(b, func(p map[string]any) {
			p["spec"].(map[string]any)["priorityClassName"] = "train"
		}), true},
		{"other-scheduler", f.variant(b, func(p map[string]any) {
			p["spec"].(map[string]any)["schedulerName"] = "default-scheduler"
		}), false},
		{"native-kind-job", f.variant(b, func(p map[string]any) {
			p["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{
				"apiVersion": "batch/v1", "kind": "Job", "name": "plain", "uid": "7d2f0d2e-9a4b-4f7e-8a51-3d2b7c9e0f22", "controller": true}}
		}), false},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			req := request(tc.pod)
			var out bytes.Buffer
			resp, err := f.admit(ctx, req, &out)
			if err != nil {
				b.Fatal(err)
			}
			if got := len(resp.Patch) > 0; got != tc.mutated || !resp.Allowed {
				b.Fatalf("warm-up: allowed=%v patched=%v, want patched=%v (%s)", resp.Allowed, got, tc.mutated, resp.Result.Message)
			}
			b.SetBytes(int64(len(tc.pod)))
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			took := make([]time.Duration, b.N)
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if _, err := f.admit(ctx, req, &out); err != nil {
					b.Fatal(err)
				}
				took[i] = time.Since(start)
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2]), "p50-ns")
		})
	}
}

// admissionContext sets, once, a logger like the grouper's (zap, JSON, info level) writing to
// nowhere, and returns a context carrying it.
func admissionContext() context.Context {
	setLogger.Do(func() { ctrl.SetLogger(zap.New(zap.WriteTo(discard{}), zap.UseDevMode(false))) })
	return ctrl.LoggerInto(context.Background(), ctrl.Log.WithName("bench"))
}

var setLogger sync.Once

// processCPU is the CPU time (user and system) the process used so far, in nanoseconds. On a
// shared machine the wall time per operation counts the time other processes held the CPU;
// cpu-ns/op does not.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func notFound(gvk schema.GroupVersionKind, key client.ObjectKey) error {
	return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind) + "s"}, key.Name)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
