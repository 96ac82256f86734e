//go:build e2e

package coexist

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	gangmapcli "github.com/gangmap/gangmap/cmd/gangmap/app"
	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/runtime/bothgroupers"
)

// TestKAIVisibleKartaSaidOnce: the CustomJob Karta gangmap uses gets the three labels KAI's Karta
// hub lists Kartas by (run.ai/karta-group, -version, -kind). gangmap says once that both groupers
// are now live for CustomJob: one Warning Event KAIGroupsKindToo on the Karta (also after later
// edits), the gauge gangmap_kinds_grouped_by_both at 1, and `gangmap definitions` lists it as a
// problem of that definition. Without the labels the gauge is 0 again.
func TestKAIVisibleKartaSaidOnce(t *testing.T) {
	ctx := context.Background()
	karta := &unstructured.Unstructured{}
	karta.SetGroupVersionKind(definitions.GroupVersionResource.GroupVersion().WithKind("Karta"))
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Name: "e2e-example-com-v1-customjob"}, karta))
	label := func(op string) {
		patch := `{"metadata":{"labels":{"run.ai/karta-group":"e2e.example.com","run.ai/karta-version":"v1","run.ai/karta-kind":"CustomJob"}}}`
		if op == "remove" {
			patch = `{"metadata":{"labels":{"run.ai/karta-group":null,"run.ai/karta-version":null,"run.ai/karta-kind":null}}}`
		}
		require.NoError(t, cp.Client.Patch(ctx, karta, client.RawPatch(types.MergePatchType, []byte(patch))))
	}
	label("add")
	t.Cleanup(func() { label("remove") })
	require.NoError(t, framework.WaitFor(ctx, timeout, func(context.Context) (bool, error) { return gauge(t) == 1, nil }), "gangmap_kinds_grouped_by_both is 1")
	// An unrelated edit of the Karta is no new notice.
	require.NoError(t, cp.Client.Patch(ctx, karta, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"note":"edited"}}}`))))
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) { return countEvents(t, ctx, karta.GetName()) >= 1, nil }))

	var out, errOut bytes.Buffer
	code := gangmapcli.Run([]string{"definitions", "--kubeconfig", cp.Kubeconfig, "--native-kinds-remove", "jobset.x-k8s.io/v1alpha2/JobSet"}, &out, &errOut)
	assert.Equal(t, 0, code, errOut.String())
	assert.Contains(t, out.String(), "e2e-example-com-v1-customjob (cluster:e2e-example-com-v1-customjob): KAI's pod-grouper (v0.17+ Karta fallback) can see this Karta")
	assert.Equal(t, 1, countEvents(t, ctx, karta.GetName()), "said once")

	label("remove")
	require.NoError(t, framework.WaitFor(ctx, timeout, func(context.Context) (bool, error) { return gauge(t) == 0, nil }), "no kind is grouped by both any more")
}

func gauge(t *testing.T) float64 {
	t.Helper()
	mfs, err := crmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "gangmap_kinds_grouped_by_both" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

func countEvents(t *testing.T, ctx context.Context, karta string) int {
	t.Helper()
	evs, err := cp.Kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	n := 0
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == karta && e.Reason == bothgroupers.Reason {
			n += int(e.Count)
			if e.Count == 0 {
				n++
			}
		}
	}
	return n
}
