//go:build e2e_kai

package inkai_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/e2e/realkai"
	"github.com/gangmap/gangmap/manifest"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// The pod-grouper's identity in a KAI install: ServiceAccount pod-grouper in KAI's namespace (KAI's
// chart templates/rbac/podgrouper-binding.yaml; deploy/kai-podgrouper/rbac.yaml binds the same).
const (
	kaiNamespace = "kai-scheduler"
	kaiSA        = "pod-grouper"
)

// loadTimeout bounds the wait from the RBAC fix to the gang's PodGroup: the Karta informer's list
// is retried with client-go's reflector backoff (at most 30 s) and KAI's pod controller retries a
// failed pod with exponential backoff (1 s doubling, at most 1 min: pkg/podgrouper/pod_controller.go
// rateLimiterBaseDelay, rateLimiterMaxDelay).
const loadTimeout = 3 * time.Minute

// withoutKartas returns the ClusterRole with "kartas" taken out of every rule's resources (a rule
// left with none is dropped).
func withoutKartas(role *rbacv1.ClusterRole) *rbacv1.ClusterRole {
	out := role.DeepCopy()
	out.Rules = nil
	for _, r := range role.Rules {
		r.Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(s string) bool { return s == "kartas" })
		if len(r.Resources) > 0 {
			out.Rules = append(out.Rules, r)
		}
	}
	return out
}

// rbacObjects reads a manifest of RBAC objects, typed.
func rbacObjects(t *testing.T, path string) (roles []*rbacv1.ClusterRole, bindings []*rbacv1.ClusterRoleBinding) {
	t.Helper()
	objs, err := manifest.ReadFile(path)
	require.NoError(t, err)
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole":
			r := &rbacv1.ClusterRole{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, r))
			roles = append(roles, r)
		case "ClusterRoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, b))
			bindings = append(bindings, b)
		default:
			t.Fatalf("%s: unexpected %s %s", path, o.GetKind(), o.GetName())
		}
	}
	return roles, bindings
}

// apply creates obj or replaces what it holds (rules, subjects).
func apply(t *testing.T, ctx context.Context, obj client.Object) {
	t.Helper()
	err := kai.Client.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		cur := obj.DeepCopyObject().(client.Object)
		require.NoError(t, kai.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur))
		obj.SetResourceVersion(cur.GetResourceVersion())
		err = kai.Client.Update(ctx, obj)
	}
	require.NoError(t, err, "%T %s", obj, obj.GetName())
}

// saKubeconfig writes a kubeconfig that impersonates the pod-grouper's ServiceAccount (with the
// groups the API server gives a ServiceAccount token) from the harness's admin kubeconfig.
func saKubeconfig(t *testing.T) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kai.Kubeconfig)
	require.NoError(t, err)
	for _, a := range cfg.AuthInfos {
		a.Impersonate = "system:serviceaccount:" + kaiNamespace + ":" + kaiSA
		a.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + kaiNamespace, "system:authenticated"}
	}
	path := filepath.Join(kai.LogDir, "pod-grouper-sa.kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// saClient is a client with the pod-grouper ServiceAccount's permissions.
func saClient(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	c, err := client.New(rc, client.Options{Scheme: kai.Client.Scheme()})
	require.NoError(t, err)
	return c
}

// startAsServiceAccount starts a second gangmap-kai-podgrouper with the harness's flags, as the
// pod-grouper ServiceAccount. It is not waited for to be ready (/readyz fails until the
// definitions load); it returns the process and its probe address.
func startAsServiceAccount(t *testing.T, ctx context.Context, kubeconfig string) (*realkai.Process, string) {
	t.Helper()
	metrics, probe, err := addrs()
	require.NoError(t, err)
	p := &realkai.Process{Name: "gangmap-kai-podgrouper-sa", Bin: podGrouperBin,
		Args: []string{"--kubeconfig=" + kubeconfig, "--scheduler-name=" + realkai.SchedulerName,
			"--queue-label-key=" + realkai.QueueLabelKey, "--nodepool-label-key=" + realkai.NodePoolLabelKey,
			"--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + probe},
		LogPath: filepath.Join(kai.LogDir, "gangmap-kai-podgrouper-sa.log"), ReadyURL: "http://" + probe + "/healthz"}
	require.NoError(t, p.Start(ctx))
	return p, probe
}

// TestInKAIAsItsServiceAccountWaitsForDefinitions: gangmap-kai-podgrouper runs as the pod-grouper
// ServiceAccount on the RBAC API server (envtest's kube-apiserver, --authorization-mode=RBAC),
// bound to KAI v0.17.0's own pod-grouper ClusterRole (KAI_SRC deployments/kai-scheduler/templates/
// rbac/podgrouper.yaml) and deploy/kai-podgrouper/rbac.yaml, first both without kartas (an install
// whose role misses them), with a CustomJob's 3 pods already pending (it is defined only by a
// cluster Karta):
//   - while the Kartas cannot be listed, the cluster definition source never syncs (sources.Cluster
//     waits for the informer's first list), so the hub answers Waiting: for 10 s on 6 free GPUs
//     (the 5-GPU gang fits) no PodGroup is written in the namespace and no pod is bound, KAI
//     records PodGrouperWarning Events saying the definitions are still loading, and /readyz fails;
//     a JobSet (native in KAI v0.17) is grouped meanwhile by KAI's plugin (native kinds never wait);
//   - once deploy/kai-podgrouper/rbac.yaml is applied as written (kartas get/list/watch), the
//     definitions load and the only PodGroup ever written is the gang's (pg-<uid>-customjob, from the
//     cluster Karta), and KAI binds all 3 pods;
//   - the ServiceAccount is refused what it must not do: read secrets, delete pods or PodGroups,
//     write the CustomJob (nothing marks workloads inside KAI) or Kartas.
func TestInKAIAsItsServiceAccountWaitsForDefinitions(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, podGrouper.Stop())
	defer func() { require.NoError(t, podGrouper.Start(ctx)) }()

	ns := "inkai-rbac"
	newBed(t, ns, 3, 2)
	job := read(t, "../../testdata/customjob.yaml", ns)
	require.NoError(t, kai.Client.Create(ctx, job))
	pods, err := kai.RunRoles(ctx, job, 3, "coordinator", "worker")
	require.NoError(t, err)

	require.NoError(t, kai.CreateNamespace(ctx, kaiNamespace))
	apply(t, ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: kaiNamespace, Name: kaiSA}})
	kaiRoles, _ := rbacObjects(t, filepath.Join(kai.Config.Src, "deployments/kai-scheduler/templates/rbac/podgrouper.yaml"))
	require.Len(t, kaiRoles, 1)
	apply(t, ctx, withoutKartas(kaiRoles[0]))
	apply(t, ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: kaiRoles[0].Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kaiRoles[0].Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: kaiSA, Namespace: kaiNamespace}}})
	ours, ourBindings := rbacObjects(t, "../../../deploy/kai-podgrouper/rbac.yaml")
	require.Len(t, ours, 1)
	require.Len(t, ourBindings, 1)
	apply(t, ctx, withoutKartas(ours[0]))
	apply(t, ctx, ourBindings[0])

	kubeconfig := saKubeconfig(t)
	sa, probe := startAsServiceAccount(t, ctx, kubeconfig)
	defer func() { _ = sa.Stop() }()

	// Waiting: nothing grouped, nothing bound, told on the pods, not ready; native kinds grouped.
	start := time.Now()
	msg := waitEvent(t, ctx, ns, pods[0].Name, "PodGrouperWarning", 2*admitTimeout)
	assert.Contains(t, msg, "still loading")
	p, err := kai.AssertNoneBound(ctx, ns, labels.Everything(), holdPeriod)
	require.NoError(t, err, "definitions not loaded: KAI binds none of the pods on 6 free GPUs")
	assert.Len(t, p.Pending, 3)
	pgs := &v2alpha2.PodGroupList{}
	require.NoError(t, kai.Client.List(ctx, pgs, client.InNamespace(ns)))
	assert.Empty(t, pgs.Items, "no PodGroup while the definitions cannot load")
	assert.False(t, realkai.HTTPOK(ctx, "http://"+probe+"/readyz"), "/readyz fails until the definitions load")
	jsNS := "inkai-rbac-native"
	require.NoError(t, kai.CreateNamespace(ctx, jsNS))
	js := read(t, "../../testdata/jobset-leader-workers.yaml", jsNS)
	require.NoError(t, kai.Client.Create(ctx, js))
	jsPods, err := kai.RunJobSet(ctx, js)
	require.NoError(t, err)
	jsGroups := podGroupsOf(t, ctx, jsNS, jsPods)
	assert.NotEmpty(t, jsGroups, "a native kind is grouped by KAI's plugin while the definitions load")
	t.Logf("waiting %v: %d PodGrouperWarning lines, e.g. %q; JobSet PodGroups %d", time.Since(start).Round(time.Second),
		len(sa.Grep(1000, "still loading")), msg, len(jsGroups))

	// The fix: rbac.yaml as written.
	apply(t, ctx, ours[0])
	fixed := time.Now()
	got := map[string]*v2alpha2.PodGroup{}
	for _, pod := range pods {
		g, err := kai.WaitForPodAnnotation(ctx, ns, pod.Name, kaikeys.PodGroupName, loadTimeout)
		require.NoError(t, err, kai.Report(ctx, ns))
		got[g.Annotations[kaikeys.PodGroupName]] = nil
	}
	t.Logf("grouped %v after rbac.yaml was applied", time.Since(fixed).Round(time.Second))
	require.NoError(t, kai.Client.List(ctx, pgs, client.InNamespace(ns)))
	require.Len(t, pgs.Items, 1, "only the gang's PodGroup was ever written")
	assert.Equal(t, fmt.Sprintf("pg-%s-customjob", job.GetUID()), pgs.Items[0].Name)
	assert.Equal(t, "e2e-example-com-v1-customjob (cluster)", pgs.Items[0].Annotations[kaikeys.Definition], "read from the cluster Karta")
	assert.Len(t, got, 1)
	_, err = kai.WaitAllBound(ctx, ns, labels.Everything(), 3, admitTimeout)
	require.NoError(t, err, "the gang is admitted whole\n%s", kai.Report(ctx, ns))
	require.NoError(t, framework.WaitFor(ctx, admitTimeout, func(ctx context.Context) (bool, error) { return realkai.HTTPOK(ctx, "http://"+probe+"/readyz"), nil }))

	assertLeastPrivilege(t, ctx, saClient(t, kubeconfig), ns, job, pgs.Items[0].Name)
}

// assertLeastPrivilege checks, as the ServiceAccount, what it may read and what it is refused
// (with server-side dry run: nothing is changed even where a request would be allowed).
func assertLeastPrivilege(t *testing.T, ctx context.Context, c client.Client, ns string, job *unstructured.Unstructured, pg string) {
	t.Helper()
	kartas := &unstructured.UnstructuredList{}
	kartas.SetAPIVersion("run.ai/v1alpha1")
	kartas.SetKind("KartaList")
	require.NoError(t, c.List(ctx, kartas), "rbac.yaml: list kartas")
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(job.GroupVersionKind())
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(job), cur), "rbac.yaml: get customjobs")

	forbidden := func(what string, err error) {
		t.Helper()
		assert.True(t, apierrors.IsForbidden(err), "%s: want Forbidden, got %v", what, err)
	}
	forbidden("list secrets", c.List(ctx, &corev1.SecretList{}, client.InNamespace(kaiNamespace)))
	pods := &corev1.PodList{}
	require.NoError(t, c.List(ctx, pods, client.InNamespace(ns)), "KAI's role: list pods")
	require.NotEmpty(t, pods.Items)
	forbidden("delete a pod", c.Delete(ctx, &pods.Items[0], client.DryRunAll))
	forbidden("delete a PodGroup", c.Delete(ctx, &v2alpha2.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pg}}, client.DryRunAll))
	cur.SetAnnotations(map[string]string{kaikeys.SkipPodGrouper: "true"})
	forbidden("update the CustomJob", c.Update(ctx, cur, client.DryRunAll))
	karta := &unstructured.Unstructured{}
	karta.SetAPIVersion("run.ai/v1alpha1")
	karta.SetKind("Karta")
	karta.SetName("inkai-rbac-probe")
	forbidden("create a Karta", c.Create(ctx, karta, client.DryRunAll))
}

// TestInKAIWithoutWorkloadRBACHoldsPods: gangmap-kai-podgrouper as the pod-grouper ServiceAccount
// bound to KAI v0.17.0's own pod-grouper ClusterRole only (it lists Kartas, so the definitions
// load, but grants nothing on e2e.example.com customjobs): KAI's owner walk cannot get a
// CustomJob's pod's owner (Forbidden) and hands the pod itself to its Pod plugin as the top owner
// (pkg/podgrouper/podgrouper/podgrouper.go handleGetOwnerError), which would give each pod a
// PodGroup of its own, minMember 1, and KAI would bind them apart. gangmap's guard refuses them
// (kaiplugin.Hub.UnreadOwner): for 10 s on 6 free GPUs no PodGroup is written and no pod is bound,
// and KAI records PodGrouperWarning Events naming the missing permission; once
// deploy/kai-podgrouper/rbac.yaml is applied, the gang's PodGroup is written and all 3 pods bound.
func TestInKAIWithoutWorkloadRBACHoldsPods(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, podGrouper.Stop())
	defer func() { require.NoError(t, podGrouper.Start(ctx)) }()

	require.NoError(t, kai.CreateNamespace(ctx, kaiNamespace))
	apply(t, ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: kaiNamespace, Name: kaiSA}})
	kaiRoles, _ := rbacObjects(t, filepath.Join(kai.Config.Src, "deployments/kai-scheduler/templates/rbac/podgrouper.yaml"))
	require.Len(t, kaiRoles, 1)
	apply(t, ctx, kaiRoles[0])
	apply(t, ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: kaiRoles[0].Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kaiRoles[0].Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: kaiSA, Namespace: kaiNamespace}}})
	ours, ourBindings := rbacObjects(t, "../../../deploy/kai-podgrouper/rbac.yaml")
	require.NoError(t, client.IgnoreNotFound(kai.Client.Delete(ctx, ourBindings[0].DeepCopy())))

	ns := "inkai-norbac"
	newBed(t, ns, 3, 2)
	job := read(t, "../../testdata/customjob.yaml", ns)
	require.NoError(t, kai.Client.Create(ctx, job))
	pods, err := kai.RunRoles(ctx, job, 3, "coordinator", "worker")
	require.NoError(t, err)
	sa, _ := startAsServiceAccount(t, ctx, saKubeconfig(t))
	defer func() { _ = sa.Stop() }()

	msg := waitEvent(t, ctx, ns, pods[0].Name, "PodGrouperWarning", 2*admitTimeout)
	assert.Contains(t, msg, "may not read the pod's owner")
	assert.Contains(t, msg, "CustomJob.e2e.example.com")
	t.Logf("PodGrouperWarning: %s", msg)
	p, err := kai.AssertNoneBound(ctx, ns, labels.Everything(), holdPeriod)
	require.NoError(t, err, "KAI binds none of the pods on 6 free GPUs")
	assert.Len(t, p.Pending, 3)
	pgs := &v2alpha2.PodGroupList{}
	require.NoError(t, kai.Client.List(ctx, pgs, client.InNamespace(ns)))
	assert.Empty(t, pgs.Items, "no one-pod PodGroup")

	apply(t, ctx, ours[0])
	apply(t, ctx, ourBindings[0])
	for _, pod := range pods {
		_, err := kai.WaitForPodAnnotation(ctx, ns, pod.Name, kaikeys.PodGroupName, loadTimeout)
		require.NoError(t, err, kai.Report(ctx, ns))
	}
	require.NoError(t, kai.Client.List(ctx, pgs, client.InNamespace(ns)))
	require.Len(t, pgs.Items, 1, "only the gang's PodGroup was ever written")
	assert.Equal(t, fmt.Sprintf("pg-%s-customjob", job.GetUID()), pgs.Items[0].Name)
	_, err = kai.WaitAllBound(ctx, ns, labels.Everything(), 3, admitTimeout)
	require.NoError(t, err, "the gang is admitted whole\n%s", kai.Report(ctx, ns))
}
