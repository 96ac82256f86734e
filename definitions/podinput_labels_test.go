package definitions

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gangmap/gangmap/definitions/expr"
)

// TestPodInputLabelsOnlyPlacesAsTheWholePod: for every catalog definition whose pod-side
// expressions are all plain label lookups, PodInput keeps only the labels the definition reads,
// and the pod is placed exactly as from the whole pod (expr.FromObject), on pods with and without
// each label read, with values that match and do not match, and with labels and annotations the
// definition does not read.
func TestPodInputLabelsOnlyPlacesAsTheWholePod(t *testing.T) {
	files, err := filepath.Glob("catalog/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("catalog files: %v (%d)", err, len(files))
	}
	compiler, err := expr.NewCompiler(expr.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	labelsOnly := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		loaded, err := DecodeDocument(raw, f, SourceCatalog, DecodeOptions{Strict: true})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		c, err := Compile(loaded, compiler)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.podLabelKeys == nil {
			continue
		}
		labelsOnly++
		rng := rand.New(rand.NewPCG(1, uint64(len(f))))
		for i := 0; i < 200; i++ {
			checkLabelsOnlyPlacement(t, f, c, randomPod(rng, c))
		}
	}
	t.Logf("%d of %d catalog definitions read pod labels only", labelsOnly, len(files))
	if labelsOnly == 0 {
		t.Error("no catalog definition reads labels only: PodInput's labels-only path is untested")
	}
}

var labelValues = []string{"0", "1", "2", "leader", "worker", "workers", "main", "master", "Master", "Worker", "launcher", "head", "prefill", "decode", ""}

func randomPod(rng *rand.Rand, c *Compiled) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-0", Namespace: "ns", UID: "u",
		Labels: map[string]string{"unrelated": "x"}, Annotations: map[string]string{"note": "y"}}}
	var matchValues []string
	for _, comp := range c.PodBearing {
		for _, v := range comp.MatchLabels {
			matchValues = append(matchValues, v)
		}
	}
	values := append(labelValues, matchValues...)
	for _, k := range c.podLabelKeys {
		if rng.IntN(4) > 0 {
			pod.Labels[k] = values[rng.IntN(len(values))]
		}
	}
	return pod
}

func checkLabelsOnlyPlacement(t *testing.T, file string, c *Compiled, pod *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	in, err := c.PodInput(pod)
	if err != nil {
		t.Fatal(err)
	}
	md := in["metadata"].(map[string]any)
	if labels := md["labels"].(map[string]any); len(md) != 1 || labels["unrelated"] != nil {
		t.Fatalf("%s: PodInput keeps more than the labels read: %v", file, in)
	}
	whole, err := expr.FromObject(pod)
	if err != nil {
		t.Fatal(err)
	}
	got, gotErr := c.PlacePod(ctx, in)
	want, wantErr := c.PlacePod(ctx, whole)
	if placementText(got, gotErr) != placementText(want, wantErr) {
		t.Errorf("%s, pod labels %v:\nlabels only: %s\nwhole pod:   %s", file, pod.Labels, placementText(got, gotErr), placementText(want, wantErr))
	}
}

func placementText(p *PodPlacement, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%s instance=%q keys=%v keyErrors=%v alpha=%v/%d", p.Component.Name, p.InstanceID, p.ReplicaKeys, p.ReplicaKeyErrors, p.AlphaJudged, p.AlphaGroup)
}
