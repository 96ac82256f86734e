//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

const timeout = 30 * time.Second

// TestCustomKindFromClusterDefinition: a kind no KAI version knows, defined by a Karta applied to
// the cluster, with pods created as its operator would. Expected from the CustomJob's spec: one
// gang, sub-groups coordinator (1 pod) and worker (2 pods), 1 + 2×2 = 5 GPUs.
func TestCustomKindFromClusterDefinition(t *testing.T) {
	ctx := context.Background()
	ns := "custom"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	// A broken definition for another kind is applied first: it must not stop this one.
	_, err := cp.ApplyFile(ctx, "testdata/broken-karta.yaml", "")
	require.NoError(t, err)
	ensureCustomJobDefinition(t, ctx) // other tests of the shared cluster apply it too
	objs, err := cp.ApplyFile(ctx, "testdata/customjob.yaml", ns)
	require.NoError(t, err)
	job := objs[0]

	// A native kind's pod (batch/v1 Job owner) is created first and must be left alone.
	nativePod := nativeJobPod(t, ctx, ns)

	var pods []*corev1.Pod
	for _, role := range []struct {
		name  string
		count int
	}{{"coordinator", 1}, {"worker", 2}} {
		tpl := customTemplate(t, job, role.name)
		for i := 0; i < role.count; i++ {
			pod := framework.PodFromTemplate(tpl, ns, fmt.Sprintf("train-%s-%d", role.name, i), nil, framework.UnstructuredOwnerRef(job))
			require.NoError(t, cp.Client.Create(ctx, pod))
			pods = append(pods, pod)
		}
	}

	pgName := fmt.Sprintf("pg-%s-customjob", job.GetUID())
	pg, err := cp.WaitForPodGroup(ctx, ns, pgName, timeout)
	require.NoError(t, err)
	assert.Nil(t, pg.Spec.MinMember)
	assert.Equal(t, ptr.To[int32](2), pg.Spec.MinSubGroup)
	assert.Equal(t, "team-a", pg.Spec.Queue)
	assert.Equal(t, []v2alpha2.SubGroup{
		{Name: "coordinator", MinMember: ptr.To[int32](1)},
		{Name: "worker", MinMember: ptr.To[int32](2)},
	}, pg.Spec.SubGroups)
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "e2e.example.com/v1", Kind: "CustomJob", Name: "train", UID: job.GetUID()}}, pg.OwnerReferences)
	assert.Equal(t, "5", pg.Annotations[kaikeys.GPUs])
	assert.Equal(t, "e2e-example-com-v1-customjob (cluster)", pg.Annotations[kaikeys.Definition])
	assertRoleGPUs(t, pg, map[string]float64{"coordinator": 1, "worker": 4})

	for _, p := range pods {
		got, err := cp.WaitForPodAnnotation(ctx, ns, p.Name, kaikeys.PodGroupName, timeout)
		require.NoError(t, err)
		assert.Equal(t, pgName, got.Annotations[kaikeys.PodGroupName], p.Name)
		assert.Equal(t, p.Labels["e2e.example.com/role"], got.Labels[kaikeys.SubGroupName], p.Name)
		assert.Equal(t, "true", got.Annotations[kaikeys.SkipPodGrouper], p.Name)
	}
	assertLeftAlone(t, ctx, nativePod)
	assertEvent(t, ctx, "", "broken-example-com-v1-brokenjob", "DefinitionInvalid", "replicasPath")
}

// TestJobSetSeedExample: the seed's JobSet (leader 1 replica, workers 2 replicas, parallelism 1,
// 4 GPUs a pod) on a cluster whose KAI lacks the JobSet plugin: one workload, one gang of 3 pods
// (sub-groups leader 1 and workers 2), 12 GPUs.
func TestJobSetSeedExample(t *testing.T) {
	ctx := context.Background()
	ns := "jobset"
	js, pods := runSeedJobSet(t, ctx, ns)

	pgName := fmt.Sprintf("pg-%s-jobset", js.GetUID())
	pg, err := cp.WaitForPodGroup(ctx, ns, pgName, timeout)
	require.NoError(t, err)
	assert.Nil(t, pg.Spec.MinMember)
	assert.Equal(t, ptr.To[int32](2), pg.Spec.MinSubGroup)
	assert.Equal(t, []v2alpha2.SubGroup{
		{Name: "leader", MinMember: ptr.To[int32](1)},
		{Name: "workers", MinMember: ptr.To[int32](2)},
	}, pg.Spec.SubGroups)
	assert.Equal(t, "12", pg.Annotations[kaikeys.GPUs])
	assert.Equal(t, "default-queue", pg.Spec.Queue)
	assertRoleGPUs(t, pg, map[string]float64{"leader": 4, "workers": 8})
	for _, p := range pods {
		got, err := cp.WaitForPodAnnotation(ctx, ns, p.Name, kaikeys.PodGroupName, timeout)
		require.NoError(t, err)
		assert.Equal(t, pgName, got.Annotations[kaikeys.PodGroupName])
		assert.Equal(t, p.Labels[framework.LabelReplicatedJobName], got.Labels[kaikeys.SubGroupName])
	}
	var list v2alpha2.PodGroupList
	require.NoError(t, cp.Client.List(ctx, &list, client.InNamespace(ns)))
	assert.Len(t, list.Items, 1, "one workload, one PodGroup")
}

// TestLeaderWorkerSetPerGroupGangs: replicas 2, size 4, 8 GPUs a pod in limits only: one gang per
// group (LWS's all-or-nothing unit), each leader 1 + workers 3, 32 GPUs per group.
func TestLeaderWorkerSetPerGroupGangs(t *testing.T) {
	ctx := context.Background()
	ns := "lws"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	objs, err := cp.ApplyFile(ctx, "testdata/lws-replicas2-size4-8gpu-limits.yaml", ns)
	require.NoError(t, err)
	lws := objs[0]
	pods, err := cp.RunLeaderWorkerSet(ctx, lws)
	require.NoError(t, err)
	require.Len(t, pods, 8)
	for g := 0; g < 2; g++ {
		pgName := fmt.Sprintf("pg-%s-group-%d", lws.GetUID(), g)
		pg, err := cp.WaitForPodGroup(ctx, ns, pgName, timeout)
		require.NoError(t, err)
		assert.Equal(t, ptr.To[int32](2), pg.Spec.MinSubGroup)
		assert.Equal(t, []v2alpha2.SubGroup{
			{Name: "leader", MinMember: ptr.To[int32](1)},
			{Name: "worker", MinMember: ptr.To[int32](3)},
		}, pg.Spec.SubGroups)
		assert.Equal(t, "32", pg.Annotations[kaikeys.GPUs])
	}
	for _, p := range pods {
		got, err := cp.WaitForPodAnnotation(ctx, ns, p.Name, kaikeys.PodGroupName, timeout)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("pg-%s-group-%s", lws.GetUID(), p.Labels[framework.LabelGroupIndex]), got.Annotations[kaikeys.PodGroupName])
		want := "worker"
		if p.Labels[framework.LabelWorkerIndex] == "0" {
			want = "leader"
		}
		assert.Equal(t, want, got.Labels[kaikeys.SubGroupName], p.Name)
	}
}

func customTemplate(t *testing.T, job *unstructured.Unstructured, role string) *corev1.PodTemplateSpec {
	m, ok, err := unstructured.NestedMap(job.Object, "spec", role, "template")
	require.NoError(t, err)
	require.True(t, ok)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	tpl := &corev1.PodTemplateSpec{}
	require.NoError(t, json.Unmarshal(b, tpl))
	return tpl
}

func nativeJobPod(t *testing.T, ctx context.Context, ns string) *corev1.Pod {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "native", Namespace: ns}, Spec: batchv1.JobSpec{
		Suspend: ptr.To(true),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "registry.example/none:0"}}}}}}
	require.NoError(t, cp.Client.Create(ctx, job))
	pod := framework.PodFromTemplate(&job.Spec.Template, ns, "native-0", nil, framework.OwnerRef(job, "batch/v1", "Job"))
	require.NoError(t, cp.Client.Create(ctx, pod))
	return pod
}

// assertLeftAlone checks that gangmap never patched a pod of a native kind.
func assertLeftAlone(t *testing.T, ctx context.Context, pod *corev1.Pod) {
	got := &corev1.Pod{}
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(pod), got))
	assert.Empty(t, got.Annotations[kaikeys.PodGroupName])
	assert.Empty(t, got.Annotations[kaikeys.SkipPodGrouper])
	assert.Equal(t, pod.ResourceVersion, got.ResourceVersion, "the native pod was never written to")
}

func assertRoleGPUs(t *testing.T, pg *v2alpha2.PodGroup, want map[string]float64) {
	var roles []struct {
		Role string  `json:"role"`
		GPUs float64 `json:"gpus"`
	}
	require.NoError(t, json.Unmarshal([]byte(pg.Annotations[kaikeys.RoleGPUs]), &roles))
	got := map[string]float64{}
	for _, r := range roles {
		got[r.Role] = r.GPUs
	}
	assert.Equal(t, want, got)
}

// assertEvent waits for an Event on the named object with the reason and a message containing
// text.
func assertEvent(t *testing.T, ctx context.Context, ns, name, reason, text string) {
	err := framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		evs, err := cp.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason && strings.Contains(e.Message, text) {
				return true, nil
			}
		}
		return false, nil
	})
	assert.NoError(t, err, "event %s on %s mentioning %q", reason, name, text)
}

// runSeedJobSet creates namespace ns, applies the seed JobSet there and plays its operator: the
// Jobs and the 3 pods (leader 1, workers 2).
func runSeedJobSet(t *testing.T, ctx context.Context, ns string) (*unstructured.Unstructured, []*corev1.Pod) {
	t.Helper()
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	objs, err := cp.ApplyFile(ctx, "testdata/jobset-leader-workers.yaml", ns)
	require.NoError(t, err)
	js := objs[0]
	pods, err := cp.RunJobSet(ctx, js)
	require.NoError(t, err)
	require.Len(t, pods, 3)
	return js, pods
}
