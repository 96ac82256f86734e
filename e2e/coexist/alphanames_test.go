//go:build e2e

package coexist

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestAlphaFormOnePodGroupWithKAI: an AlphaJob defined in the alpha podGroups form, grouped by a
// label its operator sets on every pod (testdata/alphajob-karta.yaml, which KAI's Karta hub sees).
// Its first pod is created while gangmap is down: KAI's pod-grouper (the stand-in, naming as KAI's
// Karta fallback does) puts it in pg-<UID>-<job name>, sized 3 (KAI calcPodGroupName and
// CalculateSubtreeScale of the root: coordinator 1 + workers 2). gangmap comes back: its webhook
// puts the workers in that same PodGroup at creation, and the first pod is never moved, so the
// workload has one PodGroup from the start, written by gangmap, with no stray to collect.
func TestAlphaFormOnePodGroupWithKAI(t *testing.T) {
	ctx := context.Background()
	ns := "alpha-names"
	karta, err := framework.ReadObject("testdata/alphajob-karta.yaml")
	require.NoError(t, err)
	require.NoError(t, cp.Client.Create(ctx, karta))
	t.Cleanup(func() { _ = cp.Client.Delete(context.Background(), karta) })
	waitDefinition(t, ctx, "e2e.example.com/v1", "AlphaJob", karta.GetName(), definitions.SourceCluster)
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	obs := observe(t, ctx, ns)
	job, err := framework.ReadObject("../testdata/customjob.yaml")
	require.NoError(t, err)
	job.SetKind("AlphaJob")
	job.SetNamespace(ns)
	require.NoError(t, cp.Client.Create(ctx, job))
	// KAI's name: "pg-<UID>" + "-" + the pod's value of e2e.example.com/job-name.
	pgName := fmt.Sprintf("pg-%s-%s", job.GetUID(), job.GetName())

	gm.stop()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			require.NoError(t, gm.start(context.Background()))
		}
	})
	first := alphaJobPod(t, ctx, job, "coordinator", 0)
	waitGrouped(t, ctx, ns, pgName, first)
	pg, err := cp.WaitForPodGroup(ctx, ns, pgName, timeout)
	require.NoError(t, err, "KAI's pod-grouper made the PodGroup its Karta fallback names")
	assert.Equal(t, int32(3), ptr.Deref(pg.Spec.MinMember, 0), "KAI sizes it at the root's subtree scale")
	assert.NotContains(t, pg.Annotations, kaikeys.Definition, "KAI wrote it, not gangmap")

	require.NoError(t, gm.start(ctx))
	restarted = true
	waitDefinition(t, ctx, "e2e.example.com/v1", "AlphaJob", karta.GetName(), definitions.SourceCluster)
	w0, w1 := alphaJobPod(t, ctx, job, "worker", 0), alphaJobPod(t, ctx, job, "worker", 1)
	for _, p := range []*corev1.Pod{w0, w1} {
		assert.Equal(t, pgName, p.Annotations[kaikeys.PodGroupName], "the webhook put %s in KAI's PodGroup at creation", p.Name)
	}
	waitGrouped(t, ctx, ns, pgName, first, w0, w1)
	waitOnePodGroup(t, ctx, ns, job, pgName, timeout)
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		got := &v2alpha2.PodGroup{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pgName}, got); err != nil {
			return false, nil
		}
		return got.Annotations[kaikeys.Definition] != "" && ptr.Deref(got.Spec.MinMember, 0) == 3, nil
	}), "gangmap wrote the same PodGroup: its definition annotation, the whole gang of 3")

	obs.mu.Lock()
	defer obs.mu.Unlock()
	for _, p := range []*corev1.Pod{first, w0, w1} {
		assert.Equal(t, map[string]bool{pgName: true}, obs.named[p.Name], "%s only ever named the one PodGroup", p.Name)
	}
	for name := range obs.minPods {
		assert.True(t, name == pgName || !strings.HasPrefix(name, "pg-"+string(job.GetUID())), "no other PodGroup of the workload ever existed: %s", name)
	}
	assert.Equal(t, int32(3), obs.minPods[pgName], "the PodGroup never required fewer than the whole gang")
}

// alphaJobPod creates pod number i of role as the AlphaJob's operator would: its template, owned
// by the job, with the e2e.example.com/job-name label the operator sets on every pod.
func alphaJobPod(t *testing.T, ctx context.Context, job *unstructured.Unstructured, role string, i int) *corev1.Pod {
	t.Helper()
	p, err := framework.RolePod(job, role, i)
	require.NoError(t, err)
	p.Labels["e2e.example.com/job-name"] = job.GetName()
	require.NoError(t, cp.Client.Create(ctx, p))
	return p
}
