//go:build e2e

package coexist

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/ownerskip"
)

// customJob creates ../testdata/customjob.yaml (1 coordinator, 2 workers: a gang of 3 pods) as
// name in ns.
func customJob(t *testing.T, ctx context.Context, ns, name string) *unstructured.Unstructured {
	t.Helper()
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	job, err := framework.ReadObject("../testdata/customjob.yaml")
	require.NoError(t, err)
	job.SetName(name)
	job.SetNamespace(ns)
	require.NoError(t, cp.Client.Create(ctx, job))
	return job
}

func createPod(t *testing.T, ctx context.Context, job *unstructured.Unstructured, role string, i int) *corev1.Pod {
	t.Helper()
	p, err := cp.CreatePodFor(ctx, job, role, i)
	require.NoError(t, err)
	return p
}

// waitGrouped waits until every named pod names want.
func waitGrouped(t *testing.T, ctx context.Context, ns, want string, pods ...*corev1.Pod) {
	t.Helper()
	err := framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		for _, p := range pods {
			got := &corev1.Pod{}
			if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil || got.Annotations[kaikeys.PodGroupName] != want {
				return false, nil
			}
		}
		return true, nil
	})
	require.NoError(t, err, "every pod in PodGroup %s", want)
}

// waitOnePodGroup waits until the workload owns exactly want (no other PodGroup).
func waitOnePodGroup(t *testing.T, ctx context.Context, ns string, job *unstructured.Unstructured, want string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var got []string
	err := framework.WaitFor(ctx, within, func(ctx context.Context) (bool, error) {
		var err error
		got, err = podGroupsOf(ctx, ns, string(job.GetUID()))
		return err == nil && len(got) == 1 && got[0] == want, nil
	})
	require.NoError(t, err, "the workload owns exactly PodGroup %s, got %v", want, got)
	return time.Since(start)
}

// TestGangmapDownMidGang: gangmap groups the first pod of a 3-pod CustomJob (webhook at creation)
// and marks the CustomJob with KAI's skip annotation; then every gangmap replica is down (webhook
// unreachable, no controller) while the other two pods are created: KAI's pod-grouper (the
// stand-in) leaves them alone because of the mark on their owner, and they wait ungrouped (KAI
// schedules no pod without a PodGroup). gangmap comes back and groups them. Over the whole test
// no pod ever named a PodGroup it alone satisfies, and the workload ends with exactly one.
func TestGangmapDownMidGang(t *testing.T) {
	ctx := context.Background()
	ns := "down-mid-gang"
	obs := observe(t, ctx, ns+"")
	job := customJob(t, ctx, ns, "train")
	pgName := fmt.Sprintf("pg-%s-customjob", job.GetUID())

	first := createPod(t, ctx, job, "coordinator", 0)
	assert.Equal(t, pgName, first.Annotations[kaikeys.PodGroupName], "the webhook grouped the first pod at creation")
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(job.GroupVersionKind())
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(job), got); err != nil {
			return false, nil
		}
		return ownerskip.Marked(got) && got.GetAnnotations()[ownerskip.SetBy] == ownerskip.SetByValue, nil
	}), "gangmap marks the CustomJob with KAI's skip annotation")
	_, err := cp.WaitForPodGroup(ctx, ns, pgName, timeout)
	require.NoError(t, err)

	gm.stop()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			require.NoError(t, gm.start(context.Background()))
		}
	})
	w0, w1 := createPod(t, ctx, job, "worker", 0), createPod(t, ctx, job, "worker", 1)
	for _, p := range []*corev1.Pod{w0, w1} {
		assert.Empty(t, p.Annotations[kaikeys.PodGroupName], "%s admitted unchanged: the webhook is down", p.Name)
	}
	// KAI's pod-grouper saw both pods (its cache has them within milliseconds) and left them.
	time.Sleep(3 * time.Second)
	for _, p := range []*corev1.Pod{w0, w1} {
		got := &corev1.Pod{}
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(p), got))
		assert.Empty(t, got.Annotations[kaikeys.PodGroupName], "%s waits ungrouped while gangmap is down", p.Name)
	}
	for _, g := range kai.Grouped() {
		assert.NotEqual(t, ns, g.Pod.Namespace, "KAI's pod-grouper grouped %s", g)
	}

	require.NoError(t, gm.start(ctx))
	restarted = true
	waitGrouped(t, ctx, ns, pgName, first, w0, w1)
	waitOnePodGroup(t, ctx, ns, job, pgName, timeout)
	assert.Empty(t, obs.aloneSatisfied(first.Name, w0.Name, w1.Name), "no pod ever in a PodGroup it alone satisfies")
	obs.mu.Lock()
	assert.Equal(t, int32(3), obs.minPods[pgName], "gangmap's PodGroup needs the whole gang")
	obs.mu.Unlock()
}

// TestFirstPodWhileGangmapDown is the case the mark cannot cover, and the stray collector: the
// first pod of a workload is created while gangmap is down, so KAI's pod-grouper (the stand-in)
// puts it in a one-pod PodGroup (KAI could bind it alone: what strict mode prevents). When gangmap
// is back it moves the pod to the gang's PodGroup, marks the workload, and deletes KAI's PodGroup,
// which no pod names any more, after the grace period: the workload ends with exactly one.
func TestFirstPodWhileGangmapDown(t *testing.T) {
	ctx := context.Background()
	ns := "first-pod-down"
	job := customJob(t, ctx, ns, "train")
	pgName := fmt.Sprintf("pg-%s-customjob", job.GetUID())
	kaiName := fmt.Sprintf("pg-%s-%s", job.GetName(), job.GetUID())

	gm.stop()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			require.NoError(t, gm.start(context.Background()))
		}
	})
	first := createPod(t, ctx, job, "coordinator", 0)
	waitGrouped(t, ctx, ns, kaiName, first)
	_, err := cp.WaitForPodGroup(ctx, ns, kaiName, timeout)
	require.NoError(t, err, "KAI's pod-grouper made its one-pod PodGroup")

	require.NoError(t, gm.start(ctx))
	restarted = true
	w0, w1 := createPod(t, ctx, job, "worker", 0), createPod(t, ctx, job, "worker", 1)
	waitGrouped(t, ctx, ns, pgName, first, w0, w1)
	took := waitOnePodGroup(t, ctx, ns, job, pgName, strayGrace+timeout)
	t.Logf("KAI's stray PodGroup gone %v after the pods were regrouped (grace %v)", took.Round(100*time.Millisecond), strayGrace)
	assertStrayEvent(t, ctx, ns, job.GetName(), kaiName)
}
