package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/defaultgrouper"
	"github.com/gangmap/gangmap/podgrouper/core/hub"
	"github.com/gangmap/gangmap/podgrouper/core/native"
	"github.com/gangmap/gangmap/podgrouper/core/owners"
	"github.com/gangmap/gangmap/podgrouper/core/workloadmap"
)

// objectReader serves Get for one workload (in full or as metadata), like the manager's cache.
// block makes every Get wait until the test ends, ignoring its context, as a stuck read would.
type objectReader struct {
	obj   *unstructured.Unstructured
	block chan struct{}
}

func (r *objectReader) Get(_ context.Context, key client.ObjectKey, out client.Object, _ ...client.GetOption) error {
	if r.block != nil {
		<-r.block
	}
	if key.Name != r.obj.GetName() || key.Namespace != r.obj.GetNamespace() {
		return errors.New("not found")
	}
	switch o := out.(type) {
	case *unstructured.Unstructured:
		r.obj.DeepCopyInto(o)
	case *metav1.PartialObjectMetadata:
		o.ObjectMeta = metav1.ObjectMeta{Name: r.obj.GetName(), Namespace: r.obj.GetNamespace(), UID: r.obj.GetUID(), ResourceVersion: r.obj.GetResourceVersion()}
	}
	return nil
}

func (r *objectReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not supported")
}

// hostileAppWrapper is an AppWrapper whose author wrote a 300 KB pod set path (150,000
// dot-separated words); the catalog used to scan it with a regex, 47 s of CPU per evaluation.
func hostileAppWrapper() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
		"metadata": map[string]any{"name": "hostile", "namespace": "team-a", "uid": "aw-uid", "resourceVersion": "1"},
		"spec": map[string]any{"components": []any{map[string]any{
			"podSets":  []any{map[string]any{"path": strings.Repeat("a.", 150_000), "replicas": int64(2)}},
			"template": map[string]any{"apiVersion": "batch/v1", "kind": "Job"},
		}}},
	}}
}

// mutatorFor builds the webhook as the grouper does (catalog definitions, default expression
// limits) over a reader holding only obj.
func mutatorFor(t *testing.T, r *objectReader, timeout time.Duration) *PodMutator {
	t.Helper()
	c, err := expr.NewCompiler(expr.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	reg := definitions.NewRegistry(c)
	if err := catalog.Register(reg); err != nil {
		t.Fatal(err)
	}
	h := &hub.Hub{Native: native.DefaultTable(), Registry: reg,
		Grouper: &workloadmap.Grouper{Registry: reg, Defaults: &defaultgrouper.Grouper{}}}
	d := &decide.Decider{Client: r, Walker: &owners.Walker{Reader: r}, Hub: h, SchedulerName: "kai-scheduler"}
	return &PodMutator{Decider: d, Timeout: timeout}
}

// podOf is an admission request creating a pod owned by obj.
func podOf(t *testing.T, obj *unstructured.Unstructured) admission.Request {
	t.Helper()
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "hostile-0", Namespace: obj.GetNamespace(), OwnerReferences: []metav1.OwnerReference{{
			APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName(), UID: obj.GetUID(), Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{SchedulerName: "kai-scheduler", Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: obj.GetNamespace(), Name: pod.Name, Object: runtime.RawExtension{Raw: raw}}}
}

// TestHostileAppWrapperPodHeld: a pod of an AppWrapper with a 300 KB pod set path is admitted
// held from KAI's pod-grouper (its skip annotation only: the plan fails by a bound after the
// catalog's AppWrapper definition claimed the workload, and the pod controller reports it), within
// the production decision timeout (5s; the API server's call is 10s): the bound, not the timeout,
// ends the decision, so the answer comes long before it even on a loaded machine. Admitted
// unchanged, as before the fix, KAI's pod-grouper would give the pod a one-pod PodGroup of its
// own and KAI bind it alone.
func TestHostileAppWrapperPodHeld(t *testing.T) {
	const timeout = 5 * time.Second
	m := mutatorFor(t, &objectReader{obj: hostileAppWrapper()}, timeout)
	start := time.Now()
	resp := m.Handle(context.Background(), podOf(t, hostileAppWrapper()))
	elapsed := time.Since(start)
	if !resp.Allowed {
		t.Fatalf("want allowed, got %+v", resp.Result)
	}
	assertHeldOnly(t, resp.Patch)
	if resp.Result == nil || !strings.Contains(resp.Result.Message, "held from KAI's pod-grouper") {
		t.Errorf("want the held answer, got %+v", resp.Result)
	}
	if elapsed > timeout {
		t.Errorf("answered after %v, past the %v decision timeout", elapsed, timeout)
	}
}

// TestWebhookAnswersWhenTheDecisionHangs: a decision that never returns (a read that ignores its
// context) does not hold the admission: the pod is admitted unchanged at the decision timeout.
func TestWebhookAnswersWhenTheDecisionHangs(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	const timeout = 200 * time.Millisecond
	m := mutatorFor(t, &objectReader{obj: hostileAppWrapper(), block: block}, timeout)
	start := time.Now()
	resp := m.Handle(context.Background(), podOf(t, hostileAppWrapper()))
	elapsed := time.Since(start)
	if !resp.Allowed || len(resp.Patches) > 0 || resp.Patch != nil {
		t.Fatalf("want allowed and unchanged, got allowed=%v patches=%v", resp.Allowed, resp.Patches)
	}
	if elapsed > 10*time.Second { // generous: the structure, not the machine, is under test
		t.Errorf("answered after %v for a %v timeout", elapsed, timeout)
	}
	_, err := m.decideWithin(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "workload.codeflare.dev/v1beta2", Kind: "AppWrapper", Name: "hostile", UID: "aw-uid"}}},
		Spec: corev1.PodSpec{SchedulerName: "kai-scheduler"}})
	if !errors.Is(err, ErrDecisionTimeout) {
		t.Errorf("want ErrDecisionTimeout, got %v", err)
	}
}
