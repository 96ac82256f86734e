package webhook

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// TestKnownSkippedAnswersAsTheFullPath: the first admission of each pod walks its owners (cold
// owner cache: the full path, decoding the pod and deciding on its own goroutine); the second
// finds them in the owner cache, so a pod gangmap does not group is answered without a decision
// (controller.Decider.KnownNotGrouped). Both answers are the same, and the grouped pod is still
// grouped.
func TestKnownSkippedAnswersAsTheFullPath(t *testing.T) {
	ctx := admissionContext()
	f := newAdmissionFixture(t)
	ref := func(apiVersion, kind, name, uid string) func(map[string]any) {
		return func(p map[string]any) {
			p["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{
				"apiVersion": apiVersion, "kind": kind, "name": name, "uid": uid, "controller": true}}
		}
	}
	pods := map[string][]byte{
		"grouped JobSet worker": f.podJSON,
		"native kind (Job)":     f.variant(t, ref("batch/v1", "Job", "plain", "7d2f0d2e-9a4b-4f7e-8a51-3d2b7c9e0f22")),
		"owner gone":            f.variant(t, ref("batch/v1", "Job", "gone", "00000000-0000-0000-0000-000000000000")),
		"no owner references":   f.variant(t, func(p map[string]any) { delete(p["metadata"].(map[string]any), "ownerReferences") }),
		"other scheduler, its name in an annotation too": f.variant(t, func(p map[string]any) {
			p["spec"].(map[string]any)["schedulerName"] = "default-scheduler"
			p["metadata"].(map[string]any)["annotations"].(map[string]any)["note"] = `{"schedulerName":"x"}`
		}),
	}
	for name, raw := range pods {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			first, err := f.admit(ctx, request(raw), &out)
			if err != nil {
				t.Fatal(err)
			}
			second, err := f.admit(ctx, request(raw), &out)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(answer(first), answer(second)); diff != "" {
				t.Errorf("cold vs warm owner cache (-first,+second):\n%s", diff)
			}
			if grouped := len(second.Patch) > 0; grouped != (name == "grouped JobSet worker") || !second.Allowed {
				t.Errorf("allowed=%v patched=%v (%s)", second.Allowed, grouped, answer(second).Message)
			}
		})
	}
}

type admissionAnswer struct {
	Allowed bool
	Patch   string
	Message string
}

func answer(r admission.Response) admissionAnswer {
	a := admissionAnswer{Allowed: r.Allowed, Patch: string(r.Patch)}
	if r.Result != nil {
		a.Message = r.Result.Message
	}
	return a
}
