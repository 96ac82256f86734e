//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestScalingWorkloadRegroups: a CustomJob scaled from 2 to 4 workers. The PodGroup's worker
// sub-group goes from minMember 2 to 4 on the workload change alone (gangmap watches the kind; no
// pod event follows the scale), then the two new worker pods the operator creates get the
// PodGroup at creation (webhook) and the PodGroup stays at 4 with 1 + 4×2 = 9 GPUs.
func TestScalingWorkloadRegroups(t *testing.T) {
	ctx := context.Background()
	ns := "scale"
	job, pgName, pods := runCustomJob(t, ctx, ns, "scale", 2)
	pg := waitWorkerMinMember(t, ctx, ns, pgName, 2)
	assert.Equal(t, "5", pg.Annotations[kaikeys.GPUs])
	podVersions := map[string]string{}
	for _, p := range pods {
		got := &corev1.Pod{}
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(p), got))
		podVersions[p.Name] = got.ResourceVersion
	}

	// Scale: only the workload changes.
	patch := []byte(`{"spec":{"worker":{"replicas":4}}}`)
	require.NoError(t, cp.Client.Patch(ctx, job, client.RawPatch(types.MergePatchType, patch)))
	start := time.Now()
	pg = waitWorkerMinMember(t, ctx, ns, pgName, 4)
	t.Logf("PodGroup updated %v after the scale, with no pod event", time.Since(start).Round(10*time.Millisecond))
	assert.Equal(t, "9", pg.Annotations[kaikeys.GPUs])
	assert.Equal(t, ptr.To[int32](2), pg.Spec.MinSubGroup)
	assert.Equal(t, []v2alpha2.SubGroup{
		{Name: "coordinator", MinMember: ptr.To[int32](1)},
		{Name: "worker", MinMember: ptr.To[int32](4)},
	}, pg.Spec.SubGroups)
	for _, p := range pods {
		got := &corev1.Pod{}
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(p), got))
		assert.Equal(t, podVersions[p.Name], got.ResourceVersion, "pod %s keeps its PodGroup and sub-group: not written", p.Name)
	}

	// The operator creates the two new workers: the webhook gives them the PodGroup at creation.
	for i := 2; i < 4; i++ {
		p := customJobPod(t, job, "worker", fmt.Sprintf("scale-worker-%d", i))
		require.NoError(t, cp.Client.Create(ctx, p))
		assert.Equal(t, pgName, p.Annotations[kaikeys.PodGroupName], p.Name)
		assert.Equal(t, "worker", p.Labels[kaikeys.SubGroupName], p.Name)
		assert.Equal(t, "true", p.Annotations[kaikeys.SkipPodGrouper], p.Name)
	}
	time.Sleep(time.Second)
	pg = waitWorkerMinMember(t, ctx, ns, pgName, 4)
	assert.Equal(t, "9", pg.Annotations[kaikeys.GPUs])
	var list v2alpha2.PodGroupList
	require.NoError(t, cp.Client.List(ctx, &list, client.InNamespace(ns)))
	assert.Len(t, list.Items, 1, "one workload, one PodGroup")
}

// waitWorkerMinMember waits until the PodGroup's worker sub-group has minMember want.
func waitWorkerMinMember(t *testing.T, ctx context.Context, ns, name string, want int32) *v2alpha2.PodGroup {
	t.Helper()
	pg := &v2alpha2.PodGroup{}
	var got *int32
	err := framework.WaitFor(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, sg := range pg.Spec.SubGroups {
			if sg.Name == "worker" {
				got = sg.MinMember
			}
		}
		return got != nil && *got == want, nil
	})
	require.NoError(t, err, "worker minMember %d (last seen %v)", want, ptr.Deref(got, -1))
	return pg
}

// runCustomJob creates, in a new namespace ns, a CustomJob with one coordinator and the given
// workers, and its pods as its operator would; it returns the job, its PodGroup's name and the
// pods.
func runCustomJob(t *testing.T, ctx context.Context, ns, name string, workers int) (*unstructured.Unstructured, string, []*corev1.Pod) {
	t.Helper()
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	job := createCustomJob(t, ctx, ns, name, int64(workers), "")
	pods := []*corev1.Pod{customJobPod(t, job, "coordinator", name+"-coordinator-0")}
	for i := 0; i < workers; i++ {
		pods = append(pods, customJobPod(t, job, "worker", fmt.Sprintf("%s-worker-%d", name, i)))
	}
	for _, p := range pods {
		require.NoError(t, cp.Client.Create(ctx, p))
	}
	return job, fmt.Sprintf("pg-%s-customjob", job.GetUID()), pods
}
