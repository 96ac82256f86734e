package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/workloadmap"
)

// appWrapperOf is an AppWrapper (catalog definition) of n wrapped Jobs of one pod each in ns.
func appWrapperOf(name, ns string, n int) *unstructured.Unstructured {
	comps := make([]any, 0, n)
	for range n {
		comps = append(comps, map[string]any{
			"podSets": []any{map[string]any{"path": "template.spec.template", "replicas": int64(1)}},
			"template": map[string]any{"apiVersion": "batch/v1", "kind": "Job", "spec": map[string]any{
				"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "x"}}}}}},
		})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": "uid-" + name, "resourceVersion": "1"},
		"spec":     map[string]any{"components": comps},
	}}
}

// TestPodHeldFromKAIWhenPlanBuildsAreBusy: while another namespace's slow build holds the whole
// plan gate, a pod of a defined kind (AppWrapper) is admitted with KAI's skip annotation and no
// PodGroup, so that KAI's pod-grouper cannot give it a PodGroup of its own (and KAI bind it
// outside its gang) before gangmap's pod controller groups it; found by a review of the plan
// gate, where such pods were admitted unchanged. Once the gate is free the same pod is grouped.
func TestPodHeldFromKAIWhenPlanBuildsAreBusy(t *testing.T) {
	own := appWrapperOf("train", "team-c", 1)
	m := mutatorFor(t, &objectReader{obj: own}, 5*time.Second)
	g := m.Decider.Hub.Grouper.(*workloadmap.Grouper)
	g.PlanMemory, g.PlanWait = 1, time.Millisecond // one build at a time; the others wait 1 ms

	// The slow build takes the whole gate; a probe build of a third namespace, 20 ms later, is
	// refused while it holds it (a slow build that met a probe's share itself is started again).
	var done chan error
	for attempt := 0; ; attempt++ {
		if attempt == 20 {
			t.Fatal("the slow build never held the gate")
		}
		done = make(chan error, 1)
		slow := appWrapperOf(fmt.Sprint("many-", attempt), "team-a", 990) // a new one: plans are cached
		go func() { _, _, err := g.Plan(context.Background(), slow); done <- err }()
		time.Sleep(20 * time.Millisecond)
		probe := appWrapperOf(fmt.Sprint("probe-", attempt), "team-p", 1)
		if _, _, err := g.Plan(context.Background(), probe); errors.Is(err, workloadmap.ErrPlanBuildsBusy) {
			break
		}
		<-done
	}
	resp := m.Handle(context.Background(), podOf(t, own))
	// The slow build still held the gate after the answer: a build of 990 components takes about
	// 0.5 s (up to its 1 s expression timeout with -race), the pod's decision milliseconds. Its
	// outcome (a plan, or that timeout) is not under test.
	building := len(done) == 0
	<-done
	if !building {
		t.Fatal("the slow build ended before the pod's decision: the test's window is too short")
	}
	if !resp.Allowed {
		t.Fatalf("want allowed, got %+v", resp.Result)
	}
	assertHeldOnly(t, resp.Patch)

	resp = m.Handle(context.Background(), podOf(t, own)) // the gate is free now
	var ops []patchOp
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatalf("patch %s: %v", resp.Patch, err)
	}
	if len(ops) == 0 || string(resp.Patch) == "" {
		t.Fatalf("want the pod grouped once the gate is free, got %+v", resp.Result)
	}
	if !json.Valid(resp.Patch) || !containsPodGroupName(resp.Patch) {
		t.Fatalf("want %s set, got %s", kaikeys.PodGroupName, resp.Patch)
	}
}

// assertHeldOnly fails t unless patch sets KAI's skip annotation (kai.scheduler/skip-podgrouper:
// "true") and gangmap.io/held on a pod with no annotations, and nothing else: no PodGroup, no
// sub-group.
func assertHeldOnly(t *testing.T, patch []byte) {
	t.Helper()
	var ops []patchOp
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	if len(ops) != 1 || ops[0].Op != "add" || ops[0].Path != "/metadata/annotations" {
		t.Fatalf("want one add of /metadata/annotations, got %s", patch)
	}
	if v, _ := ops[0].Value.(map[string]any); len(v) != 2 || v[kaikeys.SkipPodGrouper] != "true" || v[kaikeys.Held] != "true" {
		t.Fatalf("want only %s=true and %s=true, got %s", kaikeys.SkipPodGrouper, kaikeys.Held, patch)
	}
}

// containsPodGroupName reports whether a JSON patch sets KAI's pod-group-name annotation.
func containsPodGroupName(patch []byte) bool {
	var ops []patchOp
	if json.Unmarshal(patch, &ops) != nil {
		return false
	}
	for _, op := range ops {
		if v, ok := op.Value.(map[string]any); ok {
			if _, ok := v[kaikeys.PodGroupName]; ok {
				return true
			}
			if a, ok := v["annotations"].(map[string]any); ok && a[kaikeys.PodGroupName] != nil {
				return true
			}
		}
	}
	return false
}
