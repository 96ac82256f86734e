package webhook

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/podgrouper/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/workloadmap"
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
	slow := appWrapperOf("many", "team-a", 300)
	g.PlanMemory, g.PlanWait = 1, time.Millisecond // one build at a time; the others wait 1 ms

	done := make(chan error, 1)
	go func() { _, _, err := g.Plan(context.Background(), slow); done <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(workloadmap.PlanBuildMemoryBytes) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the slow build never took the gate")
		}
		time.Sleep(100 * time.Microsecond)
	}
	resp := m.Handle(context.Background(), podOf(t, own))
	building := len(done) == 0 // the slow build still held the gate after the answer
	<-done // its outcome (a plan, or its expressions' timeout on a slow machine) is not under test
	if !building { // a build of 300 components takes about 0.15 s (more with -race), the pod's decision milliseconds
		t.Fatal("the slow build ended before the pod's decision: the test's window is too short")
	}
	if !resp.Allowed {
		t.Fatalf("want allowed, got %+v", resp.Result)
	}
	var ops []patchOp
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatalf("patch %s: %v", resp.Patch, err)
	}
	want := []patchOp{{Op: "add", Path: "/metadata/annotations", Value: map[string]any{kaikeys.SkipPodGrouper: "true"}}}
	if len(ops) != 1 || ops[0].Op != want[0].Op || ops[0].Path != want[0].Path {
		t.Fatalf("want %v, got %s", want, resp.Patch)
	}
	if v, _ := ops[0].Value.(map[string]any); len(v) != 1 || v[kaikeys.SkipPodGrouper] != "true" {
		t.Fatalf("want only %s=true, got %s", kaikeys.SkipPodGrouper, resp.Patch)
	}

	resp = m.Handle(context.Background(), podOf(t, own)) // the gate is free now
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
