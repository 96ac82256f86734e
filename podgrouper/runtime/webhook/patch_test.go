package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/podview"
)

// groupPatch is the webhook's patch of the group keys alone: Handle's groupOps, encoded by
// patched as Handle encodes them; nil when the pod already carries every key.
func groupPatch(pod *podview.Decoded, podGroup, subGroup string) ([]byte, error) {
	ops, err := groupOps(pod, podGroup, subGroup)
	if err != nil || len(ops) == 0 {
		return nil, err
	}
	return patched(ops, "").Patch, nil
}

// applyPatch applies a JSON patch as the API server does (RFC 6902) and returns the result.
func applyPatch(t *testing.T, doc, patch []byte) []byte {
	t.Helper()
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	out, err := p.Apply(doc)
	if err != nil {
		t.Fatalf("applying %s: %v", patch, err)
	}
	return out
}

func asMap(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAdmitKeepsFieldsTheAPIDoesNotKnow (issue 13 item 3): a pod carrying fields the compiled
// k8s.io/api does not know (a newer API server's pod, at the top, in the spec and in a container)
// is given its PodGroup by a patch whose every operation is on /metadata/annotations or
// /metadata/labels, and the patched pod is the admitted pod with gangmap's keys added and
// nothing else changed. (Before, the webhook re-encoded the typed Pod and diffed it: the patch
// removed every unknown field.)
func TestAdmitKeepsFieldsTheAPIDoesNotKnow(t *testing.T) {
	f := newAdmissionFixture(t)
	raw := f.variant(t, func(p map[string]any) {
		p["futureTopLevel"] = map[string]any{"a": "b"}
		spec := p["spec"].(map[string]any)
		spec["futurePodField"] = map[string]any{"mode": "gang", "weights": []any{1, 2}}
		spec["containers"].([]any)[0].(map[string]any)["futureContainerField"] = "x"
		p["status"] = map[string]any{"futureStatus": true}
	})
	resp, err := f.admit(admissionContext(), request(raw), new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Allowed || resp.PatchType == nil || *resp.PatchType != "JSONPatch" || len(resp.Patch) == 0 {
		t.Fatalf("want an allowed JSON patch, got allowed=%v type=%v patch=%s (%v)", resp.Allowed, resp.PatchType, resp.Patch, resp.Result)
	}
	var ops []map[string]any
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		path, _ := op["path"].(string)
		if !strings.HasPrefix(path, "/metadata/annotations") && !strings.HasPrefix(path, "/metadata/labels") {
			t.Errorf("operation %v touches %s, not gangmap's annotations or labels", op, path)
		}
	}
	pg := f.podGroupOf(t, raw)
	got := asMap(t, applyPatch(t, raw, resp.Patch))
	want := asMap(t, raw)
	md := want["metadata"].(map[string]any)
	md["annotations"].(map[string]any)[kaikeys.SkipPodGrouper] = "true"
	md["annotations"].(map[string]any)[kaikeys.PodGroupName] = pg
	md["labels"].(map[string]any)[kaikeys.SubGroupName] = "workers"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("patched pod (-want,+got):\n%s", diff)
	}
}

// TestPatch: the JSON patch makes on the raw pod exactly the change Label makes on the typed
// pod (what the pod controller sets), for pods with and without the maps, with gangmap's keys
// already set, stale or absent; keys are escaped as JSON pointers.
func TestPatch(t *testing.T) {
	tests := map[string]struct {
		pod       string
		subGroup  string
		wantPaths []string // nil: no patch
	}{
		"no annotations, no labels": {
			pod: `{"metadata":{"name":"p"}}`, subGroup: "worker",
			wantPaths: []string{"/metadata/annotations", "/metadata/labels"},
		},
		"null maps": {
			pod: `{"metadata":{"name":"p","annotations":null,"labels":null}}`, subGroup: "worker",
			wantPaths: []string{"/metadata/annotations", "/metadata/labels"},
		},
		"empty maps": {
			pod: `{"metadata":{"name":"p","annotations":{},"labels":{}}}`, subGroup: "worker",
			wantPaths: []string{"/metadata/annotations/kai.scheduler~1skip-podgrouper", "/metadata/annotations/pod-group-name", "/metadata/labels/kai.scheduler~1subgroup-name"},
		},
		"other keys kept": {
			pod: `{"metadata":{"name":"p","annotations":{"a/b~c":"1"},"labels":{"app":"x"}}}`, subGroup: "worker",
			wantPaths: []string{"/metadata/annotations/kai.scheduler~1skip-podgrouper", "/metadata/annotations/pod-group-name", "/metadata/labels/kai.scheduler~1subgroup-name"},
		},
		"stale values replaced": {
			pod:       `{"metadata":{"name":"p","annotations":{"pod-group-name":"old","kai.scheduler/skip-podgrouper":"true"},"labels":{"kai.scheduler/subgroup-name":"old"}}}`,
			subGroup:  "worker",
			wantPaths: []string{"/metadata/annotations/pod-group-name", "/metadata/labels/kai.scheduler~1subgroup-name"},
		},
		"stale sub-group removed": {
			pod:       `{"metadata":{"name":"p","labels":{"kai.scheduler/subgroup-name":"old","app":"x"}}}`,
			wantPaths: []string{"/metadata/annotations", "/metadata/labels/kai.scheduler~1subgroup-name"},
		},
		"no sub-group, no labels map": {
			pod:       `{"metadata":{"name":"p"}}`,
			wantPaths: []string{"/metadata/annotations"},
		},
		"already labelled": {
			pod:      `{"metadata":{"name":"p","annotations":{"pod-group-name":"pg","kai.scheduler/skip-podgrouper":"true"},"labels":{"kai.scheduler/subgroup-name":"worker"}}}`,
			subGroup: "worker",
		},
		"no metadata": {
			pod: `{"spec":{"schedulerName":"kai-scheduler"}}`, subGroup: "worker",
			wantPaths: []string{"/metadata"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d, err := podview.DecodePod([]byte(tc.pod))
			if err != nil {
				t.Fatal(err)
			}
			patch, err := groupPatch(d, "pg", tc.subGroup)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantPaths == nil {
				if patch != nil {
					t.Fatalf("want no patch, got %s", patch)
				}
				return
			}
			var ops []struct{ Op, Path string }
			if err := json.Unmarshal(patch, &ops); err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, op := range ops {
				paths = append(paths, op.Path)
			}
			if diff := cmp.Diff(tc.wantPaths, paths); diff != "" {
				t.Errorf("paths (-want,+got):\n%s", diff)
			}
			// The patched pod is what Label makes of the typed pod.
			var got, want corev1.Pod
			if err := json.Unmarshal(applyPatch(t, []byte(tc.pod), patch), &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.pod), &want); err != nil {
				t.Fatal(err)
			}
			Label(&want, "pg", tc.subGroup)
			if len(want.Labels) == 0 && len(got.Labels) == 0 {
				want.Labels, got.Labels = nil, nil // Label leaves an emptied map; the patch leaves the key out
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("patched pod differs from Label's (-want,+got):\n%s", diff)
			}
		})
	}
}

// podGroupOf is the PodGroup the decider (shared with the pod controller) gives the pod.
func (f *admissionFixture) podGroupOf(t *testing.T, raw []byte) string {
	t.Helper()
	d, err := podview.DecodePod(raw)
	if err != nil {
		t.Fatal(err)
	}
	d.Pod.Namespace = "bench"
	dec, err := f.decider.Decide(context.Background(), d.Pod)
	if err != nil || dec == nil {
		t.Fatalf("decision: %v, %v", dec, err)
	}
	return dec.Metadata.Name
}

func TestPatchRefusesEmptyPodGroup(t *testing.T) {
	if _, err := groupPatch(&podview.Decoded{HasMetadata: true, Pod: &corev1.Pod{}}, "", ""); err == nil {
		t.Fatal("want an error for an empty PodGroup name")
	}
}

// The webhook's whole admission of the fixture pod is allowed with the expected patch and
// decision (the benchmark's warm-up checks the same path).
func TestAdmitGroupedPod(t *testing.T) {
	f := newAdmissionFixture(t)
	resp := f.webhook.Handle(context.Background(), request(f.podJSON))
	// The pod is a worker of the JobSet's "workers" replicated job (its label
	// jobset.sigs.k8s.io/replicatedjob-name): the sub-group of that role.
	want := `[{"op":"add","path":"/metadata/annotations/kai.scheduler~1skip-podgrouper","value":"true"},` +
		`{"op":"add","path":"/metadata/annotations/pod-group-name","value":"` + f.podGroupOf(t, f.podJSON) + `"},` +
		`{"op":"add","path":"/metadata/labels/kai.scheduler~1subgroup-name","value":"workers"}]`
	if !resp.Allowed || string(resp.Patch) != want {
		t.Fatalf("allowed=%v patch:\n%s\nwant:\n%s", resp.Allowed, resp.Patch, want)
	}
}
