//go:build e2e

package helm

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// access is one request's attributes, for a SelfSubjectAccessReview.
type access struct {
	ns, verb, group, resource, sub, name string
}

func (a access) String() string {
	r := a.resource
	if a.group != "" {
		r += "." + a.group
	}
	if a.sub != "" {
		r += "/" + a.sub
	}
	if a.name != "" {
		r += " " + a.name
	}
	ns := a.ns
	if ns == "" {
		ns = "all namespaces / cluster"
	}
	return fmt.Sprintf("%s %s (%s)", a.verb, r, ns)
}

// mustNotGrant is what the chart must not give the grouper, with o the grouper's options: nothing
// beyond the calls it makes (least privilege, README "Install with Helm").
func mustNotGrant(o *app.Options) []access {
	rel := releaseNamespace
	return []access{
		// Secrets: only get/update on the one certificate Secret, in the release namespace.
		{verb: "list", resource: "secrets"},
		{verb: "get", resource: "secrets"},
		{verb: "watch", resource: "secrets"},
		{ns: rel, verb: "list", resource: "secrets"},
		{ns: rel, verb: "create", resource: "secrets"},
		{ns: rel, verb: "get", resource: "secrets", name: "unrelated-credentials"},
		{ns: rel, verb: "delete", resource: "secrets", name: o.WebhookSecret},
		{ns: "team", verb: "get", resource: "secrets", name: o.WebhookSecret},
		{ns: "kube-system", verb: "get", resource: "secrets", name: o.WebhookSecret},
		// Pods: get/list/watch/patch only; no create, update, delete, eviction, exec.
		{ns: "team", verb: "create", resource: "pods"},
		{ns: "team", verb: "update", resource: "pods"},
		{ns: "team", verb: "delete", resource: "pods"},
		{verb: "deletecollection", resource: "pods"},
		{ns: "team", verb: "create", resource: "pods", sub: "eviction"},
		{ns: "team", verb: "create", resource: "pods", sub: "exec"},
		{ns: "team", verb: "patch", resource: "pods", sub: "status"},
		// PodGroups: no patch (delete is granted: stray PodGroups, podgrouper/runtime/strays).
		{ns: "team", verb: "patch", group: "scheduling.run.ai", resource: "podgroups"},
		{verb: "deletecollection", group: "scheduling.run.ai", resource: "podgroups"},
		// Kartas: read only.
		{verb: "create", group: "run.ai", resource: "kartas"},
		{verb: "update", group: "run.ai", resource: "kartas"},
		{verb: "patch", group: "run.ai", resource: "kartas"},
		{verb: "delete", group: "run.ai", resource: "kartas"},
		// Workload kinds: read only; owner kinds: get only.
		{ns: "team", verb: "update", group: "e2e.example.com", resource: "customjobs"},
		{ns: "team", verb: "delete", group: "e2e.example.com", resource: "customjobs"},
		{ns: "team", verb: "update", group: "e2e.example.com", resource: "customjobs", sub: "status"},
		{verb: "list", group: "apps", resource: "deployments"},
		{ns: "team", verb: "update", group: "apps", resource: "deployments"},
		{verb: "list", group: "batch", resource: "jobs"},
		{verb: "delete", group: "batch", resource: "jobs"},
		// Webhook configurations: get/update on the chart's one only.
		{verb: "list", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations"},
		{verb: "create", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations"},
		{verb: "update", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations", name: "someone-elses-webhook"},
		{verb: "delete", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations", name: o.WebhookConfigName},
		{verb: "update", group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations", name: o.WebhookConfigName},
		// Leases: create, and get/update on the one Lease, in the release namespace only.
		{ns: rel, verb: "update", group: "coordination.k8s.io", resource: "leases", name: "someone-elses-lease"},
		{ns: rel, verb: "delete", group: "coordination.k8s.io", resource: "leases", name: o.LeaderElectionID},
		{ns: rel, verb: "list", group: "coordination.k8s.io", resource: "leases"},
		{ns: "kube-system", verb: "create", group: "coordination.k8s.io", resource: "leases"},
		{ns: "kube-system", verb: "update", group: "coordination.k8s.io", resource: "leases", name: o.LeaderElectionID},
		// Namespaces: read only (the webhook's namespace selector).
		{verb: "update", resource: "namespaces", name: "team"},
		{verb: "delete", resource: "namespaces", name: "team"},
		// Nothing else of the cluster.
		{verb: "get", resource: "nodes"},
		{ns: rel, verb: "get", resource: "configmaps"},
		{ns: rel, verb: "create", resource: "serviceaccounts", sub: "token"},
		{ns: "team", verb: "delete", resource: "events"},
		{verb: "update", group: "scheduling.k8s.io", resource: "priorityclasses"},
		{verb: "create", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
		{verb: "update", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", name: "kartas.run.ai"},
		{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"},
		{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles"},
		{verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles"},
		{verb: "impersonate", resource: "users"},
		{verb: "impersonate", resource: "serviceaccounts"},
		{verb: "create", group: "certificates.k8s.io", resource: "certificatesigningrequests"},
	}
}

// granted is every (group, resource, verb, name) the chart's rendered ClusterRole and Role give,
// the Role's in the release namespace.
func granted(t *testing.T, objs []*unstructured.Unstructured) []access {
	t.Helper()
	var out []access
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, u := range ofKind(objs, kind) {
			var rules []rbacv1.PolicyRule
			list, _, err := unstructured.NestedSlice(u.Object, "rules")
			require.NoError(t, err)
			for _, r := range list {
				var rule rbacv1.PolicyRule
				require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(r.(map[string]any), &rule))
				rules = append(rules, rule)
			}
			for _, r := range rules {
				names := r.ResourceNames
				if len(names) == 0 {
					names = []string{""}
				}
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						for _, v := range r.Verbs {
							for _, n := range names {
								out = append(out, access{ns: u.GetNamespace(), verb: v, group: g, resource: res, name: n})
							}
						}
					}
				}
			}
		}
	}
	return out
}

// allowed asks the API server, as the ServiceAccount, whether it may do a.
func allowed(t *testing.T, ctx context.Context, kube kubernetes.Interface, a access) bool {
	t.Helper()
	r, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: a.ns, Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub, Name: a.name,
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "SelfSubjectAccessReview %s", a)
	return r.Status.Allowed
}

// assertLeastPrivilege checks, as the chart's ServiceAccount on the real API server, that every
// rule the chart renders is in force (so the checks below can tell allowed from forbidden) and
// that everything the chart must not grant is forbidden, by SelfSubjectAccessReview and, for the
// most telling ones, by a real request that the API server refuses.
func assertLeastPrivilege(t *testing.T, ctx context.Context, saConfig *rest.Config, objs []*unstructured.Unstructured, o *app.Options) {
	saConfig = rest.CopyConfig(saConfig)
	saConfig.QPS, saConfig.Burst = -1, 0 // many reviews; no client-side rate limit
	kube, err := kubernetes.NewForConfig(saConfig)
	require.NoError(t, err)
	for _, a := range granted(t, objs) {
		assert.True(t, allowed(t, ctx, kube, a), "the chart grants %s", a)
	}
	for _, a := range mustNotGrant(o) {
		assert.False(t, allowed(t, ctx, kube, a), "the chart must not grant %s", a)
	}

	// Real requests.
	require.NoError(t, cp.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: "unrelated-credentials"},
		StringData: map[string]string{"password": "not for gangmap"}}))
	_, err = kube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "list Secrets in all namespaces: want Forbidden, got %v", err)
	_, err = kube.CoreV1().Secrets(releaseNamespace).Get(ctx, "unrelated-credentials", metav1.GetOptions{})
	assert.True(t, apierrors.IsForbidden(err), "get another Secret of the release namespace: want Forbidden, got %v", err)
	_, err = kube.CoreV1().Secrets(o.WebhookNamespace).Get(ctx, o.WebhookSecret, metav1.GetOptions{})
	assert.NoError(t, err, "get its own certificate Secret")

	pods, err := cp.Kube.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, pods.Items, "the webhook namespace's pods")
	victim := pods.Items[0]
	err = kube.CoreV1().Pods("team").Delete(ctx, victim.Name, metav1.DeleteOptions{})
	assert.True(t, apierrors.IsForbidden(err), "delete a pod: want Forbidden, got %v", err)
	assert.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(&victim), &corev1.Pod{}), "the pod is still there")

	dyn, err := dynamic.NewForConfig(saConfig)
	require.NoError(t, err)
	kartas := schema.GroupVersionResource{Group: "run.ai", Version: "v1alpha1", Resource: "kartas"}
	list, err := dyn.Resource(kartas).List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "list Kartas (granted)")
	require.NotEmpty(t, list.Items)
	k := list.Items[0].DeepCopy()
	k.SetLabels(map[string]string{"changed-by": "gangmap"})
	_, err = dyn.Resource(kartas).Update(ctx, k, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsForbidden(err), "update a Karta: want Forbidden, got %v", err)

	var pgs v2alpha2.PodGroupList
	require.NoError(t, cp.Client.List(ctx, &pgs, client.InNamespace("team")))
	require.NotEmpty(t, pgs.Items, "the webhook namespace's PodGroup")
	podgroups := schema.GroupVersionResource{Group: "scheduling.run.ai", Version: "v2alpha2", Resource: "podgroups"}
	_, err = dyn.Resource(podgroups).Namespace("team").Patch(ctx, pgs.Items[0].Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"changed-by":"gangmap"}}}`), metav1.PatchOptions{})
	assert.True(t, apierrors.IsForbidden(err), "patch a PodGroup: want Forbidden, got %v", err)
}
