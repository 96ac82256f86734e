//go:build e2e

package helm

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// gpuResource is the GPU resource the gang's GPU count adds up.
const gpuResource corev1.ResourceName = "nvidia.com/gpu"

// workloads makes CustomJobs for the grouper started with o and works out, from the Karta and a
// workload, the PodGroup the grouper must write.
type workloads struct {
	o     *app.Options
	karta *unstructured.Unstructured
}

// create creates ../testdata/customjob.yaml as name in ns with the given worker replicas, its pod
// templates scheduled by the chart's schedulerName, and the test's priority class named by KAI's
// priorityClassName label.
func (w workloads) create(t *testing.T, ctx context.Context, ns, name string, workers int64) *unstructured.Unstructured {
	t.Helper()
	job, err := framework.ReadObject("../testdata/customjob.yaml")
	require.NoError(t, err)
	job.SetName(name)
	job.SetNamespace(ns)
	labels := job.GetLabels()
	labels[kaikeys.PriorityClassLabel] = priorityClass
	job.SetLabels(labels)
	require.NoError(t, unstructured.SetNestedField(job.Object, workers, "spec", "worker", "replicas"))
	for _, role := range w.roles(t) {
		require.NoError(t, unstructured.SetNestedField(job.Object, w.o.SchedulerName, "spec", role, "template", "spec", "schedulerName"))
	}
	require.NoError(t, cp.Client.Create(ctx, job))
	return job
}

// roles are the Karta's child components, which are the CustomJob's roles (spec.<role>).
func (w workloads) roles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, c := range w.components(t) {
		name, _, _ := unstructured.NestedString(c, "name")
		out = append(out, name)
	}
	require.NotEmpty(t, out, "the Karta has child components")
	return out
}

func (w workloads) components(t *testing.T) []map[string]any {
	t.Helper()
	list, _, err := unstructured.NestedSlice(w.karta.Object, "spec", "structureDefinition", "childComponents")
	require.NoError(t, err)
	var out []map[string]any
	for _, c := range list {
		m, ok := c.(map[string]any)
		require.True(t, ok)
		out = append(out, m)
	}
	return out
}

// gang is the PodGroup a workload's pods must get.
type gang struct {
	name      string
	subGroups []v2alpha2.SubGroup
	roleGPUs  map[string]float64
	gpus      int64
	pods      int
}

// expected works the gang out from the definition and the workload as stored now: one PodGroup
// named pg-<workload UID>-<the Karta's podGroup name>, a sub-group per listed component with
// minMember the component's replicas (its scaleDefinition.replicasPath in the workload), and the
// GPUs of replicas × the GPU limit of the pod template at specDefinition.podTemplateSpecPath.
func (w workloads) expected(t *testing.T, ctx context.Context, job *unstructured.Unstructured) gang {
	t.Helper()
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(job), job))
	pgName, _, err := unstructured.NestedString(w.karta.Object, "spec", "optimizationInstructions", "gangScheduling", "podGroup", "name")
	require.NoError(t, err)
	require.NotEmpty(t, pgName)
	sgs, _, err := unstructured.NestedSlice(w.karta.Object, "spec", "optimizationInstructions", "gangScheduling", "podGroup", "subGroups")
	require.NoError(t, err)
	components := map[string]map[string]any{}
	for _, c := range w.components(t) {
		name, _, _ := unstructured.NestedString(c, "name")
		components[name] = c
	}
	g := gang{name: fmt.Sprintf("pg-%s-%s", job.GetUID(), pgName), roleGPUs: map[string]float64{}}
	for _, sg := range sgs {
		name, _, _ := unstructured.NestedString(sg.(map[string]any), "componentName")
		c, ok := components[name]
		require.True(t, ok, "sub-group %s is a component", name)
		replicasPath, _, _ := unstructured.NestedString(c, "scaleDefinition", "replicasPath")
		replicas, found, err := unstructured.NestedInt64(job.Object, fieldPath(t, replicasPath)...)
		require.NoError(t, err)
		require.True(t, found, "%s in the workload", replicasPath)
		tplPath, _, _ := unstructured.NestedString(c, "specDefinition", "podTemplateSpecPath")
		m, found, err := unstructured.NestedMap(job.Object, fieldPath(t, tplPath)...)
		require.NoError(t, err)
		require.True(t, found, "%s in the workload", tplPath)
		tpl := &corev1.PodTemplateSpec{}
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(m, tpl))
		var perPod int64
		for _, ctr := range tpl.Spec.Containers {
			q, ok := ctr.Resources.Limits[gpuResource]
			if !ok {
				q = ctr.Resources.Requests[gpuResource]
			}
			perPod += q.Value()
		}
		g.subGroups = append(g.subGroups, v2alpha2.SubGroup{Name: name, MinMember: ptr.To(int32(replicas))})
		g.roleGPUs[name] = float64(replicas * perPod)
		g.gpus += replicas * perPod
		g.pods += int(replicas)
	}
	require.NotEmpty(t, g.subGroups, "the Karta's podGroup has sub-groups")
	return g
}

// fieldPath splits a simple definition path (.spec.worker.replicas) into fields.
func fieldPath(t *testing.T, p string) []string {
	t.Helper()
	require.True(t, strings.HasPrefix(p, ".") && !strings.ContainsAny(p, `[]"' `), "a plain field path: %q", p)
	return strings.Split(strings.TrimPrefix(p, "."), ".")
}

// assertGrouped waits for the workload's PodGroup and checks it against want (gang, queue and
// priority class from the workload's labels, owner, GPUs, definition), and that every pod carries
// the PodGroup's name, KAI's skip annotation and its role as sub-group label.
func (w workloads) assertGrouped(t *testing.T, ctx context.Context, job *unstructured.Unstructured, want gang, pods []*corev1.Pod) {
	t.Helper()
	pg, err := cp.WaitForPodGroup(ctx, job.GetNamespace(), want.name, timeout)
	require.NoError(t, err)
	err = framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(pg), pg); err != nil {
			return false, err
		}
		return pg.Annotations[kaikeys.GPUs] == strconv.FormatInt(want.gpus, 10), nil
	})
	assert.NoError(t, err, "PodGroup %s counts %d GPUs (has %q)", want.name, want.gpus, pg.Annotations[kaikeys.GPUs])
	assert.Nil(t, pg.Spec.MinMember, "a gang of sub-groups")
	assert.Equal(t, ptr.To(int32(len(want.subGroups))), pg.Spec.MinSubGroup)
	assert.Equal(t, want.subGroups, pg.Spec.SubGroups)
	assert.Equal(t, job.GetLabels()[w.o.QueueLabelKey], pg.Spec.Queue, "queue from the workload's %s label", w.o.QueueLabelKey)
	assert.Equal(t, priorityClass, pg.Spec.PriorityClassName, "the workload's priority class (read by the grouper)")
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: job.GetAPIVersion(), Kind: job.GetKind(), Name: job.GetName(), UID: job.GetUID()}}, pg.OwnerReferences)
	assert.Equal(t, w.karta.GetName()+" (cluster)", pg.Annotations[kaikeys.Definition])
	var roles []struct {
		Role string  `json:"role"`
		GPUs float64 `json:"gpus"`
	}
	if assert.NoError(t, json.Unmarshal([]byte(pg.Annotations[kaikeys.RoleGPUs]), &roles)) {
		got := map[string]float64{}
		for _, r := range roles {
			got[r.Role] = r.GPUs
		}
		assert.Equal(t, want.roleGPUs, got)
	}
	// One wait for every pod (the controller or the webhook wrote all three keys at once).
	got := map[string]*corev1.Pod{}
	err = framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		for _, p := range pods {
			cur := &corev1.Pod{}
			if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
				return false, err
			}
			if cur.Annotations[kaikeys.SkipPodGrouper] == "" {
				return false, nil
			}
			got[p.Name] = cur
		}
		return true, nil
	})
	require.NoError(t, err, "every pod of %s carries %s", job.GetName(), kaikeys.SkipPodGrouper)
	for _, p := range got {
		assert.Equal(t, want.name, p.Annotations[kaikeys.PodGroupName], p.Name)
		assert.Equal(t, "true", p.Annotations[kaikeys.SkipPodGrouper], p.Name)
		assert.Equal(t, p.Labels["e2e.example.com/role"], p.Labels[kaikeys.SubGroupName], p.Name)
	}
}
