package app

import (
	"strings"
	"testing"
)

// TestPlanShowsTopology: gangmap plan prints the PodGroup's constraint (the job's zone
// annotations) and each segment's (the Worker template's rack), with the segment index, and says
// how the role is segmented, on KAI's docs multi-level example with 8 workers.
func TestPlanShowsTopology(t *testing.T) {
	r := gangmap(t, "plan", "-f", "testdata/topology/pytorchjob-segments-zoned.yaml")
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"PODGROUP                    SUB-GROUP         SEGMENT   TOPOLOGY           REQUIRED                           PREFERRED",
		"pg-pytorch-tp4-pytorchjob   (PodGroup)        -         cluster-topology   topology.kubernetes.io/zone        -",
		"pg-pytorch-tp4-pytorchjob   worker/worker-0   0         cluster-topology   cloud.provider.com/topology-rack   -",
		"pg-pytorch-tp4-pytorchjob   worker/worker-1   1         cluster-topology   cloud.provider.com/topology-rack   -",
		`segments: role worker in segments of 4 pods (pod template annotation kai.scheduler/segment-size), each pod by .metadata.labels["training.kubeflow.org/replica-index"]`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
}
