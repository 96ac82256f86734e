//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/controller"
)

// TestMissingRBACIsReported: a grouper whose ClusterRole grants everything it needs except list
// and watch on the defined kind (CustomJob: get only) groups none of its pods and says why: a
// Warning Event on the Karta naming the missing verbs, gangmap_rbac_missing_total{kind}, and no
// fallback: the pod is given KAI's skip annotation and nothing else (held from KAI's pod-grouper,
// which would group it alone, controller.PodReconciler.holdFromKAI). Without the check, a cache
// read of the kind would block.
func TestMissingRBACIsReported(t *testing.T) {
	ctx := context.Background()
	const scheduler = "rbac-scheduler"
	ns := "rbac"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	ensureCustomJobDefinition(t, ctx)

	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gangmap-restricted"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"", "apps", "batch", "scheduling.run.ai", "run.ai", "coordination.k8s.io", "events.k8s.io", "authorization.k8s.io", "scheduling.k8s.io", "apiextensions.k8s.io"},
			Resources: []string{"*"}, Verbs: []string{"*"}},
		{APIGroups: []string{"e2e.example.com"}, Resources: []string{"customjobs"}, Verbs: []string{"get"}},
	}}
	require.NoError(t, cp.Client.Create(ctx, role))
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gangmap-restricted"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "gangmap-restricted"}}}
	require.NoError(t, cp.Client.Create(ctx, binding))
	user, err := cp.Env.AddUser(envtest.User{Name: "gangmap-restricted", Groups: []string{"gangmap-restricted"}}, nil)
	require.NoError(t, err)

	o := app.DefaultOptions()
	o.SchedulerName = scheduler
	o.SkipControllerNameValidation = true
	gctx, cancel := context.WithCancel(ctx)
	g, err := cp.RunGrouper(gctx, o, rest.CopyConfig(user.Config()))
	require.NoError(t, err)
	t.Cleanup(func() {
		cancel()
		select {
		case <-g.Done:
		case <-time.After(30 * time.Second):
			t.Error("the restricted grouper did not stop")
		}
	})

	job := createCustomJob(t, ctx, ns, "rbac", 2, scheduler)
	// The counter is the process's: other tests' groupers hold pods too (an owner cycle's).
	heldBefore := counterValue(t, "gangmap_pods_held_total", nil)
	pod := customJobPod(t, job, "worker", "rbac-worker-0")
	require.NoError(t, cp.Client.Create(ctx, pod))

	assertEvent(t, ctx, "", "e2e-example-com-v1-customjob", controller.ReasonRBACMissing, "may not list, watch customjobs.e2e.example.com")
	assert.Positive(t, counterValue(t, "gangmap_rbac_missing_total", map[string]string{"kind": "CustomJob.e2e.example.com"}))
	got := &corev1.Pod{}
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(pod), got))
	assert.Empty(t, got.Annotations[kaikeys.PodGroupName], "no fallback grouping")
	assert.Empty(t, got.Labels[kaikeys.SubGroupName], "no sub-group")
	require.Eventually(t, func() bool {
		return cp.Client.Get(ctx, client.ObjectKeyFromObject(pod), got) == nil && got.Annotations[kaikeys.SkipPodGrouper] == "true"
	}, 30*time.Second, 100*time.Millisecond, "the pod is held from KAI's pod-grouper")
	assert.Equal(t, map[string]string{kaikeys.SkipPodGrouper: "true", kaikeys.Held: "true"}, got.Annotations, "only KAI's skip annotation and gangmap's held mark are written")
	assert.Equal(t, heldBefore+1, counterValue(t, "gangmap_pods_held_total", nil), "this pod alone was held")
	assertEvent(t, ctx, ns, pod.Name, controller.ReasonGroupingFailed, "RBACMissing")
}

// counterValue reads a counter of the process's controller-runtime metrics registry.
func counterValue(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
