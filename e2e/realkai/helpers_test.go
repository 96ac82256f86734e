//go:build e2e_kai

package realkai_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/e2e/realkai"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// benchLabel marks a test's fake nodes; the test's pod templates select them (bed.pin), so that
// no test's pods land on, or are kept off by, another test's nodes and leftover pods.
const benchLabel = "e2e.gangmap.io/bed"

// bed is one test's namespace and fake GPU nodes.
type bed struct {
	ns    string
	nodes int
}

// newBed creates namespace ns and nodes fake nodes of gpus GPUs each, named <ns>-<i>.
func newBed(t *testing.T, ns string, nodes, gpus int) *bed {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, kai.CreateNamespace(ctx, ns))
	b := &bed{ns: ns}
	b.addNodes(t, nodes, gpus)
	return b
}

// addNodes adds n nodes of gpus GPUs to the bed.
func (b *bed) addNodes(t *testing.T, n, gpus int) {
	t.Helper()
	var names []string
	for i := 0; i < n; i++ {
		names = append(names, fmt.Sprintf("%s-%d", b.ns, b.nodes))
		b.nodes++
	}
	require.NoError(t, kai.CreateGPUNodes(context.Background(), realkai.NodeSpec{Names: names, GPUs: gpus, Labels: map[string]string{benchLabel: b.ns}}))
}

// pin makes every pod spec in obj (a map with a containers list, at any depth: a Job's
// template.spec, a LeaderWorkerSet's leader and worker templates, an LLMInferenceService's
// template) select the bed's nodes, and puts the workload in the test queue, as a user writes both
// into a manifest.
func (b *bed) pin(obj *unstructured.Unstructured) {
	obj.SetNamespace(b.ns)
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[kaikeys.DefaultQueueLabel] = queue
	obj.SetLabels(l)
	pinPodSpecs(obj.Object, b.ns)
}

func pinPodSpecs(v any, bedName string) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["containers"].([]any); ok {
			sel, _ := x["nodeSelector"].(map[string]any)
			if sel == nil {
				sel = map[string]any{}
			}
			sel[benchLabel] = bedName
			x["nodeSelector"] = sel
		}
		for _, e := range x {
			pinPodSpecs(e, bedName)
		}
	case []any:
		for _, e := range x {
			pinPodSpecs(e, bedName)
		}
	}
}

// readWorkload reads a manifest's first object, pinned to the bed.
func (b *bed) readWorkload(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	obj, err := framework.ReadObject(path)
	require.NoError(t, err)
	b.pin(obj)
	return obj
}

// waitGrouped waits until each pod carries a pod-group-name and returns the PodGroups they name.
func waitGrouped(t *testing.T, ctx context.Context, pods []*corev1.Pod) map[string]*v2alpha2.PodGroup {
	t.Helper()
	pgs, err := kai.WaitGrouped(ctx, pods, admitTimeout)
	require.NoError(t, err, kai.Report(ctx, pods[0].Namespace))
	return pgs
}

// describe is a PodGroup's gang in one line: "minMember 3" or "minSubGroup 2 of [coordinator:1
// worker:2]" (a child sub-group as parent/name).
func describe(pg *v2alpha2.PodGroup) string {
	if len(pg.Spec.SubGroups) == 0 {
		return fmt.Sprintf("minMember %d", ptr.Deref(pg.Spec.MinMember, -1))
	}
	var sgs []string
	for _, sg := range pg.Spec.SubGroups {
		name := sg.Name
		if sg.Parent != nil {
			name = *sg.Parent + "/" + name
		}
		sgs = append(sgs, fmt.Sprintf("%s:%d", name, ptr.Deref(sg.MinMember, -1)))
	}
	return fmt.Sprintf("minSubGroup %d of %v", ptr.Deref(pg.Spec.MinSubGroup, -1), sgs)
}
