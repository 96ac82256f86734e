//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/controller"
)

// TestMilvusComponentsTheSpecDoesNotList: milvus-operator's milvus_cluster_default.yaml sample
// (cluster mode, components {}) on the real API server. The test plays milvus-operator v1.3.8:
// for each component GetComponentsBySpec returns (no image: the default v2.6.11, so
// Milvus2_6Components: mixcoord, datanode, streamingnode, querynode, proxy at replicas 1; the
// standalone Deployment at 0 replicas has no pod) a Deployment owned by the Milvus
// (pkg/controllers/deployment_updater.go updateDeployment), a ReplicaSet and a pod carrying
// GetSelectorLabels (instance, component, name "milvus", managed-by "milvus-operator"). None of
// these components is listed in the spec: every pod lands in the one gang, five sub-groups of one.
// Then the pod of a retired component (indexnode) lands outside the gang.
func TestMilvusComponentsTheSpecDoesNotList(t *testing.T) {
	ctx := context.Background()
	ns := "milvus"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	objs, err := cp.ApplyFile(ctx, "../definitions/catalog/testdata/milvus-cluster-default.yaml", ns)
	require.NoError(t, err)
	milvus := objs[0]
	components := []string{"mixcoord", "datanode", "streamingnode", "querynode", "proxy"}
	var pods []*corev1.Pod
	for _, c := range components {
		pods = append(pods, milvusComponentPod(t, ctx, milvus, c))
	}

	pgName := fmt.Sprintf("pg-%s-milvus", milvus.GetUID())
	pg, err := cp.WaitForPodGroup(ctx, ns, pgName, timeout)
	require.NoError(t, err)
	assert.Nil(t, pg.Spec.MinMember)
	assert.Equal(t, ptr.To[int32](5), pg.Spec.MinSubGroup)
	var want []v2alpha2.SubGroup
	for _, c := range components {
		want = append(want, v2alpha2.SubGroup{Name: c, MinMember: ptr.To[int32](1)})
	}
	assert.Equal(t, want, pg.Spec.SubGroups)
	for i, p := range pods {
		got, err := cp.WaitForPodAnnotation(ctx, ns, p.Name, kaikeys.PodGroupName, timeout)
		require.NoError(t, err)
		assert.Equal(t, pgName, got.Annotations[kaikeys.PodGroupName], p.Name)
		assert.Equal(t, components[i], got.Labels[kaikeys.SubGroupName], p.Name)
	}
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(milvus.GroupVersionKind())
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(milvus), got); err != nil {
			return false, err
		}
		return got.GetAnnotations()[kaikeys.SkipPodGrouper] == "true", nil
	}), "gangmap marks the Milvus: KAI's pod-grouper skips its pods")

	// A component the operator no longer deploys but has not deleted yet: upgrading to 2.6, the
	// indexnode Deployment stays until the new proxy image is rolled out
	// (pkg/controllers/deployments.go cleanupIndexNodeIfNeeded). Its pod is outside the plan: it
	// joins the gang's PodGroup in no sub-group (never bound outside the gang) and a Warning Event naming the
	// instance, and the gang stays as it was.
	retired := milvusComponentPod(t, ctx, milvus, "indexnode")
	got, err := cp.WaitForPodAnnotation(ctx, ns, retired.Name, kaikeys.PodGroupName, timeout)
	require.NoError(t, err, "the retired component's pod is not left without a PodGroup")
	assert.Equal(t, pgName, got.Annotations[kaikeys.PodGroupName], "it joins the gang, in no sub-group (KAI leaves it unscheduled)")
	assert.NotContains(t, got.Labels, kaikeys.SubGroupName)
	ev := waitEvent(t, ctx, ns, retired.Name, controller.ReasonPodOutsidePlan, "indexnode", 15*time.Second)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	waitSubGroups(t, ctx, ns, pgName, "mixcoord=1 datanode=1 streamingnode=1 querynode=1 proxy=1")
}

// milvusComponentPod creates, as milvus-operator and the Deployment controller would, the
// component's Deployment <milvus>-milvus-<component> (GetDeploymentName) owned by the Milvus, a
// ReplicaSet owned by it, and one pod owned by the ReplicaSet with the operator's pod labels.
func milvusComponentPod(t *testing.T, ctx context.Context, milvus *unstructured.Unstructured, component string) *corev1.Pod {
	t.Helper()
	labels := map[string]string{
		"app.kubernetes.io/instance":   milvus.GetName(),
		"app.kubernetes.io/component":  component,
		"app.kubernetes.io/name":       "milvus",
		"app.kubernetes.io/managed-by": "milvus-operator",
	}
	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{SchedulerName: "kai-scheduler", Containers: []corev1.Container{{Name: component, Image: "milvusdb/milvus:v2.6.11"}}},
	}
	name := milvus.GetName() + "-milvus-" + component
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: milvus.GetNamespace(), Labels: labels, OwnerReferences: []metav1.OwnerReference{framework.UnstructuredOwnerRef(milvus)}},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tpl},
	}
	require.NoError(t, cp.Client.Create(ctx, dep))
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-5d8f6c7b9", Namespace: milvus.GetNamespace(), Labels: labels, OwnerReferences: []metav1.OwnerReference{framework.OwnerRef(dep, "apps/v1", "Deployment")}},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tpl},
	}
	require.NoError(t, cp.Client.Create(ctx, rs))
	pod := framework.PodFromTemplate(&tpl, milvus.GetNamespace(), rs.Name+"-x7k2p", nil, framework.OwnerRef(rs, "apps/v1", "ReplicaSet"))
	require.NoError(t, cp.Client.Create(ctx, pod))
	return pod
}
