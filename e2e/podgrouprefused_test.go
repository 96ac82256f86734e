//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestRefusedPodGroupHoldsThePod: a CustomJob whose own annotations fill the API server's 256 KiB
// (apimachinery's TotalAnnotationSizeLimitB). Its PodGroup, which copies them as KAI's default
// grouper does, is past the limit and refused (podgroup.Validate), and so is the workload's
// skip mark (its annotations would pass the limit too). A pod the webhook did not see (webhook
// off in the namespace) has then neither a PodGroup nor a marked owner: KAI's pod-grouper would
// group it by its own rules, outside gangmap's gang. The controller holds it instead (KAI's skip
// annotation and gangmap.io/held) and says why (GangmapGroupingFailed, reason PodGroupWrite).
func TestRefusedPodGroupHoldsThePod(t *testing.T) {
	ctx := context.Background()
	ensureCustomJobDefinition(t, ctx)
	ns := "podgroup-refused"
	require.NoError(t, cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{webhookLabel: "disabled"}}}))
	job, err := framework.ReadObject("testdata/customjob.yaml")
	require.NoError(t, err)
	job.SetNamespace(ns)
	const key = "e2e.example.com/blob"
	job.SetAnnotations(map[string]string{key: strings.Repeat("x", apivalidation.TotalAnnotationSizeLimitB-len(key)-10)})
	require.NoError(t, cp.Client.Create(ctx, job), "the workload's own annotations fit")

	assertPodHeld(t, ctx, job, "PodGroupWrite")

	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(job), job))
	assert.Empty(t, job.GetAnnotations()[kaikeys.SkipPodGrouper], "the workload's mark was refused too: the pod's own hold is what keeps KAI's pod-grouper off it")
}
