//go:build e2e

package helm

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/webhook"
)

const (
	timeout = 30 * time.Second
	// kartaFile defines the CustomJob kind (a Karta applied to the cluster by its admin).
	kartaFile = "../testdata/customjob-karta.yaml"
	// webhookOffLabel=off on a namespace keeps its pods from gangmap's webhook: the values file's
	// webhook.namespaceSelector, which the chart puts in the MutatingWebhookConfiguration and
	// mirrors into the grouper.
	webhookOffLabel = "example.com/gangmap-webhook"
	// priorityClass is created by the test and named on the workloads (KAI's priorityClassName
	// label): the PodGroup gets it only if the grouper may read priority classes.
	priorityClass = "gangmap-e2e-helm"
)

// renderedKinds are the kinds testdata/values.yaml must render, so that the API server checks
// each (a values change that stops rendering one fails here rather than checking less).
var renderedKinds = []string{
	"ServiceAccount", "Secret", "ConfigMap", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
	"Role", "RoleBinding", "Service", "Deployment", "PodDisruptionBudget", "MutatingWebhookConfiguration",
	"NetworkPolicy",
}

// metricsScraper is the ServiceAccount (in the release namespace) the test scrapes metrics as:
// testdata/values.yaml binds it to the chart's metrics-reader ClusterRole.
const metricsScraper = "metrics-scraper"

// TestChartOnAPIServer installs the chart (every rendered object server-side applied and
// accepted), runs the grouper with the Deployment's args as the chart's ServiceAccount, and checks
// that it does its whole job with the chart's RBAC: the self-signed webhook certificate (its
// Secret and caBundle), the Lease, the webhook mutating pods at creation (reading namespaces for
// the selector), PodGroups created with the gang the definition implies and updated when the
// workload scales (watching the kind), pods patched by the controller where the webhook is off,
// Events, the priority class; no RBAC problem in its metrics or its log. Then that the same
// ServiceAccount may do nothing the chart must not grant (see rbac_test.go).
func TestChartOnAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// 1. The chart, as helm renders it, on the API server.
	objs := helmTemplate(t, "")
	for _, k := range renderedKinds {
		require.NotEmpty(t, ofKind(objs, k), "%s renders no %s: the API server would not check it", valuesFile, k)
	}
	require.NoError(t, cp.CreateNamespace(ctx, releaseNamespace), "the release namespace (helm install --create-namespace)")
	if !t.Run("every rendered object is accepted", func(t *testing.T) { applyAll(t, ctx, objs) }) {
		t.FailNow()
	}

	// 2. The grouper, as the Deployment runs it, as the chart's ServiceAccount.
	dep := &appsv1.Deployment{}
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: one(t, objs, "Deployment").GetName()}, dep))
	require.Len(t, dep.Spec.Template.Spec.Containers, 1)
	container := &dep.Spec.Template.Spec.Containers[0]
	o := chartOptions(t, container.Args)
	// The values turn on everything whose RBAC this test exercises.
	require.True(t, o.LeaderElect, "the rendered args elect a leader (replicas: 2)")
	require.Equal(t, releaseNamespace, o.LeaderElectionNamespace)
	require.True(t, o.WebhookSelfSigned && o.WebhookPort != 0, "the rendered args serve the webhook with the grouper's own certificate")
	require.NotEmpty(t, o.WebhookNamespaceSelector, "the rendered args mirror the webhook's namespace selector")

	saName := dep.Spec.Template.Spec.ServiceAccountName
	require.NotEmpty(t, saName, "the Deployment names its ServiceAccount")
	kubeconfig, saConfig := serviceAccountKubeconfig(t, ctx, releaseNamespace, saName)

	webhookPort, err := framework.FreePort()
	require.NoError(t, err)
	probePort, err := framework.FreePort()
	require.NoError(t, err)
	pointWebhookAtLocalhost(t, ctx, o.WebhookConfigName, webhookPort)
	svcNames := serviceDNSNames(o.WebhookService, o.WebhookNamespace)
	// Only what must differ outside a pod. The metrics address (a free localhost port) and the
	// kubeconfig (the ServiceAccount's token) are set by framework.StartGrouperProcess.
	args := grouperArgs(t, container.Args, map[string]string{
		"metrics-bind-address":      "", // framework.StartGrouperProcess's
		"health-probe-bind-address": net.JoinHostPort("127.0.0.1", strconv.Itoa(probePort)),
		"webhook-port":              strconv.Itoa(webhookPort),
		"webhook-host":              "127.0.0.1",
		// The emptyDir the grouper writes its certificate into.
		"webhook-cert-dir": t.TempDir(),
		// The ConfigMap mount, with the rendered ConfigMap's files.
		"definitions": strings.Join(mountDefinitions(t, ctx, dep, container, o.DefinitionPaths), ","),
		// The Service's names (the grouper's default) and localhost, where the API server calls.
		"webhook-cert-dns-names": strings.Join(append(svcNames, "localhost"), ","),
	})
	logDir := filepath.Join(workDir, t.Name())
	require.NoError(t, os.MkdirAll(logDir, 0o755))
	require.True(t, o.MetricsSecure, "the chart serves metrics over HTTPS with authentication by default")
	require.NoError(t, cp.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: metricsScraper}}))
	_, scraper := serviceAccountKubeconfig(t, ctx, releaseNamespace, metricsScraper)
	g, err := framework.StartSecureGrouperProcess(ctx, grouperBin, kubeconfig, scraper.BearerToken, logDir, args...)
	if err != nil {
		t.Fatalf("gangmap-grouper with the chart's args as ServiceAccount %s/%s: %v\n%s", releaseNamespace, saName, err, logTail(filepath.Join(logDir, "gangmap-grouper.log")))
	}
	t.Cleanup(func() {
		_ = g.Stop()
		if t.Failed() {
			t.Logf("grouper log %s:\n%s", g.LogPath, logTail(g.LogPath))
		}
	})

	t.Run("webhook certificate in the chart's Secret and caBundle", func(t *testing.T) {
		assertSelfSignedCertificate(t, ctx, o, svcNames)
	})
	t.Run("lease acquired", func(t *testing.T) {
		lease := &coordinationv1.Lease{}
		err := framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
			if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: o.LeaderElectionNamespace, Name: o.LeaderElectionID}, lease); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			return ptr.Deref(lease.Spec.HolderIdentity, "") != "", nil
		})
		require.NoError(t, err, "Lease %s/%s held by the grouper", o.LeaderElectionNamespace, o.LeaderElectionID)
	})
	t.Run("probes answer", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz"} {
			url := fmt.Sprintf("http://127.0.0.1:%d%s", probePort, path)
			err := framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) { return httpOK(ctx, url), nil })
			assert.NoError(t, err, "GET %s (the chart's probe) answers 200", url)
		}
	})

	// 3. A kind of the user's own, defined by a Karta, with pods its operator creates.
	_, err = cp.ApplyFile(ctx, kartaFile, "")
	require.NoError(t, err)
	karta, err := framework.ReadObject(kartaFile)
	require.NoError(t, err)
	waitClusterDefinition(t, ctx, g)
	require.NoError(t, cp.Client.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: priorityClass}, Value: 1000}))
	w := workloads{o: o, karta: karta}
	// Pods created in the webhook's namespaces, and in all.
	var mutatedPods, allPods int

	t.Run("webhook namespace: pods grouped at creation", func(t *testing.T) {
		ns := "team"
		require.NoError(t, cp.CreateNamespace(ctx, ns))
		job := w.create(t, ctx, ns, "train", 2)
		waitWebhookServes(t, ctx, job, w.roles(t)[0])
		pods, err := cp.RunRoles(ctx, job, 4, w.roles(t)...)
		require.NoError(t, err)
		want := w.expected(t, ctx, job)
		require.Len(t, pods, want.pods)
		for _, p := range pods {
			// The create response: the webhook set everything before KAI could see the pod.
			assert.Equal(t, want.name, p.Annotations[kaikeys.PodGroupName], "pod %s as created", p.Name)
			assert.Equal(t, "true", p.Annotations[kaikeys.SkipPodGrouper], "pod %s as created", p.Name)
			assert.Equal(t, p.Labels["e2e.example.com/role"], p.Labels[kaikeys.SubGroupName], "pod %s as created", p.Name)
		}
		w.assertGrouped(t, ctx, job, want, pods)
		assertEvents(t, ctx, ns, "PodGroupCreated", want.name, job.GetName())

		// Scaling the workload updates the gang at once (the grouper watches the kind and updates
		// its PodGroup); the operator's new pod is grouped at creation.
		require.NoError(t, cp.Client.Patch(ctx, job, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"worker":{"replicas":3}}}`))))
		scaled := w.expected(t, ctx, job)
		require.Equal(t, want.pods+1, scaled.pods)
		err = framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
			pg := &v2alpha2.PodGroup{}
			if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: want.name}, pg); err != nil {
				return false, err
			}
			return assert.ObjectsAreEqual(scaled.subGroups, pg.Spec.SubGroups), nil
		})
		require.NoError(t, err, "the PodGroup follows the scaled workload: sub-groups %s", subGroupsString(scaled.subGroups))
		p, err := cp.CreatePodFor(ctx, job, "worker", 2)
		require.NoError(t, err)
		assert.Equal(t, want.name, p.Annotations[kaikeys.PodGroupName], "the new pod as created")
		w.assertGrouped(t, ctx, job, scaled, append(pods, p))
		mutatedPods += len(pods) + 1
		allPods += len(pods) + 1
		assertEvents(t, ctx, ns, "PodGroupUpdated", want.name, job.GetName())
	})

	t.Run("namespace without the webhook: pods patched by the controller", func(t *testing.T) {
		ns := "no-webhook"
		require.NoError(t, cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{webhookOffLabel: "off"}}}))
		job := w.create(t, ctx, ns, "eval", 3)
		pods, err := cp.RunRoles(ctx, job, 4, w.roles(t)...)
		require.NoError(t, err)
		want := w.expected(t, ctx, job)
		require.Len(t, pods, want.pods)
		for _, p := range pods {
			assert.Empty(t, p.Annotations[kaikeys.PodGroupName], "pod %s as created: the chart's namespace selector keeps the webhook off", p.Name)
		}
		w.assertGrouped(t, ctx, job, want, pods)
		assertEvents(t, ctx, ns, "PodGroupCreated", want.name, job.GetName())
		// One Warning Event on the workload for all its pods, once their repairs are quiet.
		assertEvents(t, ctx, ns, "GangmapRepairedPod", fmt.Sprintf("labelled %d pods after creation", len(pods)), job.GetName())
		assertEvents(t, ctx, ns, "GangmapRepairedPod", fmt.Sprintf("%d joined PodGroup %s", len(pods), want.name), job.GetName())
		allPods += len(pods)
	})

	t.Run("metrics and log show no RBAC problem", func(t *testing.T) {
		require.True(t, strings.HasPrefix(g.MetricsURL, "https://"), g.MetricsURL)
		m, err := g.Metrics(ctx)
		require.NoError(t, err, "the metrics reader scrapes over HTTPS (the grouper's TokenReview and SubjectAccessReview allowed by the chart)")
		assert.Zero(t, framework.Sum(m, "gangmap_rbac_missing_total"), "gangmap_rbac_missing_total is absent or 0: %v", samples(m, "gangmap_rbac_missing_total"))
		assert.Zero(t, framework.Sum(m, "gangmap_grouping_errors_total"), "no grouping error: %v", samples(m, "gangmap_grouping_errors_total"))
		assert.Equal(t, 2.0, framework.Sum(m, "gangmap_podgroup_writes_total", `result="Created"`), "two PodGroups created: %v", samples(m, "gangmap_podgroup_writes_total"))
		assert.GreaterOrEqual(t, framework.Sum(m, "gangmap_podgroup_writes_total", `result="Updated"`), 1.0, "the scaled workload's PodGroup updated")
		assert.GreaterOrEqual(t, framework.Sum(m, "gangmap_pods_grouped_total", `kind="CustomJob"`, `dry_run="false"`), float64(allPods), "every pod grouped")
		// The webhook reads namespaces (the selector) and decides with the same RBAC: no error.
		assert.Zero(t, framework.Sum(m, "gangmap_webhook_errors_total"), "no webhook error: %v", samples(m, "gangmap_webhook_errors_total"))
		assert.GreaterOrEqual(t, framework.Sum(m, "gangmap_webhook_admissions_total", `result="Mutated"`), float64(mutatedPods), "the webhook namespace's pods mutated")
		b, err := os.ReadFile(g.LogPath)
		require.NoError(t, err)
		var forbidden []string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(strings.ToLower(line), "forbidden") {
				forbidden = append(forbidden, line)
			}
		}
		if len(forbidden) > 0 {
			for i := range forbidden {
				if len(forbidden[i]) > 500 {
					forbidden[i] = forbidden[i][:500] + "..."
				}
			}
			if len(forbidden) > 5 {
				forbidden = append(forbidden[:5], fmt.Sprintf("(%d more)", len(forbidden)-5))
			}
			t.Errorf("the grouper's log (%s) reports forbidden requests:\n%s", g.LogPath, strings.Join(forbidden, "\n"))
		}
	})

	t.Run("metrics refuse scrapes without a metrics reader's token", func(t *testing.T) {
		// No token: 401. The grouper's own ServiceAccount: authenticated by the TokenReview, but
		// the SubjectAccessReview finds no get on /metrics: 403. Plain HTTP: no metrics.
		for _, c := range []struct {
			who, token string
			want       int
		}{{"anonymous", "", http.StatusUnauthorized}, {"the grouper's ServiceAccount", saConfig.BearerToken, http.StatusForbidden}} {
			resp, err := g.GetMetrics(ctx, c.token)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, c.want, resp.StatusCode, c.who)
			assert.Equal(t, "HTTP/1.1", resp.Proto, "HTTP/2 off by default")
		}
		plain, err := http.Get("http://" + strings.TrimPrefix(g.MetricsURL, "https://"))
		if err == nil {
			_ = plain.Body.Close()
			assert.NotEqual(t, http.StatusOK, plain.StatusCode, "plain HTTP serves no metrics")
		}
	})

	t.Run("least privilege", func(t *testing.T) {
		// Its own time: it runs even when a wait above used the test's.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assertLeastPrivilege(t, ctx, saConfig, objs, o)
	})
}

// applyAll server-side applies every object, each as its own subtest, with strict field
// validation: an unknown or duplicated field is an error, not a silently dropped value.
func applyAll(t *testing.T, ctx context.Context, objs []*unstructured.Unstructured) {
	for _, o := range objs {
		t.Run(o.GetKind()+"_"+o.GetName(), func(t *testing.T) {
			gvk := o.GroupVersionKind()
			m, err := cp.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
			require.NoError(t, err, "the API server serves %s", gvk)
			ri := cp.Dynamic.Resource(m.Resource)
			var got *unstructured.Unstructured
			data, err := o.MarshalJSON()
			require.NoError(t, err)
			opts := metav1.PatchOptions{FieldManager: "helm", FieldValidation: metav1.FieldValidationStrict}
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				require.Equal(t, releaseNamespace, o.GetNamespace(), "a namespaced object of the chart is in the release namespace")
				got, err = ri.Namespace(o.GetNamespace()).Patch(ctx, o.GetName(), types.ApplyPatchType, data, opts)
			} else {
				require.Empty(t, o.GetNamespace(), "a cluster-scoped object names no namespace")
				got, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, opts)
			}
			require.NoError(t, err, "the API server rejects %s %s", gvk.Kind, o.GetName())
			assert.NotEmpty(t, got.GetUID())
		})
	}
}

// chartOptions parses the rendered args with gangmap-grouper's own flag set and start-up check.
func chartOptions(t *testing.T, args []string) *app.Options {
	t.Helper()
	o := app.DefaultOptions()
	fs := app.NewFlagSet(o, io.Discard)
	require.NoError(t, fs.Parse(args), "gangmap-grouper parses the rendered args %q", args)
	require.Zero(t, fs.NArg(), "no positional arguments in %q", args)
	return o
}

// grouperArgs returns the rendered args with the flags of overrides replaced: each rendered
// --name=value of an overridden flag is dropped, and --name=value appended unless value is empty
// (a flag framework.StartGrouperProcess sets). Every overridden flag the chart renders must be
// rendered as --name=value, so that it is replaced rather than repeated (--definitions would
// append).
func grouperArgs(t *testing.T, rendered []string, overrides map[string]string) []string {
	t.Helper()
	var out []string
	for _, a := range rendered {
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if _, ok := overrides[name]; ok {
			require.True(t, strings.HasPrefix(a, "--") && hasValue, "rendered arg %q: want --name=value", a)
			continue
		}
		out = append(out, a)
	}
	names := make([]string, 0, len(overrides))
	for n := range overrides {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if overrides[n] != "" {
			out = append(out, "--"+n+"="+overrides[n])
		}
	}
	return out
}

// mountDefinitions stands in for the kubelet: for each --definitions path, the volume the
// container mounts there must be the rendered ConfigMap, whose files (as stored by the API
// server) are written into a temporary directory. It returns the directories, in order.
func mountDefinitions(t *testing.T, ctx context.Context, dep *appsv1.Deployment, c *corev1.Container, paths []string) []string {
	t.Helper()
	require.NotEmpty(t, paths, "the rendered args name the definitions mount")
	var dirs []string
	for _, p := range paths {
		var mount *corev1.VolumeMount
		for i := range c.VolumeMounts {
			if c.VolumeMounts[i].MountPath == p {
				mount = &c.VolumeMounts[i]
			}
		}
		require.NotNil(t, mount, "--definitions=%s is mounted", p)
		var vol *corev1.Volume
		for i := range dep.Spec.Template.Spec.Volumes {
			if dep.Spec.Template.Spec.Volumes[i].Name == mount.Name {
				vol = &dep.Spec.Template.Spec.Volumes[i]
			}
		}
		require.True(t, vol != nil && vol.ConfigMap != nil, "volume %s at %s is a ConfigMap", mount.Name, p)
		cm := &corev1.ConfigMap{}
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: dep.Namespace, Name: vol.ConfigMap.Name}, cm))
		dir := t.TempDir()
		for k, v := range cm.Data {
			require.NoError(t, os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644))
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

// serviceAccountKubeconfig gets a token for the ServiceAccount from the TokenRequest API, writes a
// kubeconfig file with it (the API server's address and CA, the bearer token, no client
// certificate) and checks with a SelfSubjectReview that the file authenticates as the
// ServiceAccount. It returns the file and its client configuration.
func serviceAccountKubeconfig(t *testing.T, ctx context.Context, ns, name string) (string, *rest.Config) {
	t.Helper()
	tr, err := cp.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "TokenRequest for ServiceAccount %s/%s (the API server must sign service-account tokens)", ns, name)
	require.NotEmpty(t, tr.Status.Token)
	host := cp.Config.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	require.NotEmpty(t, cp.Config.CAData, "the control plane's CA")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: cp.Config.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: name}
	kc.CurrentContext = name
	path := filepath.Join(t.TempDir(), "serviceaccount.kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ssr, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err, "the ServiceAccount's token authenticates")
	require.Equal(t, "system:serviceaccount:"+ns+":"+name, ssr.Status.UserInfo.Username, "the kubeconfig the grouper gets is the chart's ServiceAccount")
	return path, cfg
}

// pointWebhookAtLocalhost points every webhook of the configuration, accepted as rendered (a
// Service reference the API server cannot reach here), at https://localhost:<port><its path>.
func pointWebhookAtLocalhost(t *testing.T, ctx context.Context, name string, port int) {
	t.Helper()
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Name: name}, mwc), "the grouper's --webhook-configuration-name is the chart's configuration")
	require.NotEmpty(t, mwc.Webhooks)
	for i := range mwc.Webhooks {
		cc := &mwc.Webhooks[i].ClientConfig
		require.NotNil(t, cc.Service, "webhook %s calls the chart's Service", mwc.Webhooks[i].Name)
		require.Equal(t, webhook.Path, ptr.Deref(cc.Service.Path, ""), "the path the grouper serves")
		cc.URL = ptr.To(fmt.Sprintf("https://localhost:%d%s", port, *cc.Service.Path))
		cc.Service = nil
	}
	require.NoError(t, cp.Client.Update(ctx, mwc))
}

// serviceDNSNames are the webhook Service's names the grouper issues its certificate for by
// default.
func serviceDNSNames(svc, ns string) []string {
	return []string{svc, svc + "." + ns, svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local"}
}

// assertSelfSignedCertificate: the grouper filled the chart's (empty) Secret with a CA and a
// serving certificate for the Service's names, and set the CA as the configuration's caBundle.
func assertSelfSignedCertificate(t *testing.T, ctx context.Context, o *app.Options, svcNames []string) {
	sec := &corev1.Secret{}
	err := framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		err := cp.Client.Get(ctx, client.ObjectKey{Namespace: o.WebhookNamespace, Name: o.WebhookSecret}, sec)
		return err == nil && len(sec.Data[webhook.SecretCACert]) > 0, err
	})
	require.NoError(t, err, "Secret %s/%s filled", o.WebhookNamespace, o.WebhookSecret)
	for _, k := range []string{webhook.SecretCACert, webhook.SecretCAKey, webhook.SecretCert, webhook.SecretKey} {
		assert.NotEmpty(t, sec.Data[k], "Secret key %s", k)
	}
	block, _ := pem.Decode(sec.Data[webhook.SecretCert])
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.Subset(t, cert.DNSNames, svcNames, "the serving certificate is valid for the chart's Service")
	err = framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Name: o.WebhookConfigName}, mwc); err != nil {
			return false, err
		}
		for _, w := range mwc.Webhooks {
			if string(w.ClientConfig.CABundle) != string(sec.Data[webhook.SecretCACert]) {
				return false, nil
			}
		}
		return true, nil
	})
	assert.NoError(t, err, "the caBundle of %s is the Secret's CA", o.WebhookConfigName)
}

// waitClusterDefinition waits until the grouper has loaded a cluster definition (the Karta).
func waitClusterDefinition(t *testing.T, ctx context.Context, g *framework.GrouperProcess) {
	t.Helper()
	err := framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		m, err := g.Metrics(ctx)
		if err != nil {
			return false, nil
		}
		return framework.Sum(m, "gangmap_definitions", `source="cluster"`) >= 1, nil
	})
	require.NoError(t, err, "the grouper loads the Karta from the cluster")
}

// waitWebhookServes waits until the API server calls the webhook and the webhook groups a pod of
// job: a server-side dry-run create (the webhook has no side effects) of a pod of role comes
// back mutated. The caBundle and the definition reach the API server and the grouper
// asynchronously; after this, pods created for real are mutated at creation.
func waitWebhookServes(t *testing.T, ctx context.Context, job *unstructured.Unstructured, role string) {
	t.Helper()
	err := framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		p, err := framework.RolePod(job, role, 0)
		if err != nil {
			return false, err
		}
		if err := cp.Client.Create(ctx, p, client.DryRunAll); err != nil {
			return false, err
		}
		return p.Annotations[kaikeys.SkipPodGrouper] == "true", nil
	})
	require.NoError(t, err, "a pod of %s %s is mutated by the webhook (dry-run create)", job.GetKind(), job.GetName())
}

// assertEvents waits for an Event on each named object in ns with the reason and a message
// containing text.
func assertEvents(t *testing.T, ctx context.Context, ns, reason, text string, names ...string) {
	t.Helper()
	var missing []string
	err := framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		evs, err := cp.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		missing = nil
		for _, name := range names {
			found := false
			for _, e := range evs.Items {
				if e.InvolvedObject.Name == name && e.Reason == reason && strings.Contains(e.Message, text) {
					found = true
					break
				}
			}
			if !found {
				missing = append(missing, name)
			}
		}
		return len(missing) == 0, nil
	})
	assert.NoError(t, err, "Event %s mentioning %q on %s/%v", reason, text, ns, missing)
}

func httpOK(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// subGroupsString renders sub-groups as name:minMember,...
func subGroupsString(sgs []v2alpha2.SubGroup) string {
	var parts []string
	for _, sg := range sgs {
		parts = append(parts, fmt.Sprintf("%s:%d", sg.Name, ptr.Deref(sg.MinMember, 0)))
	}
	return strings.Join(parts, ",")
}

// samples lists the metric's samples, for failure messages.
func samples(m map[string]float64, name string) []string {
	var out []string
	for k, v := range m {
		if base, _, _ := strings.Cut(k, "{"); base == name {
			out = append(out, fmt.Sprintf("%s %v", k, v))
		}
	}
	sort.Strings(out)
	return out
}

// logTail is the end of a log file, for failure messages.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 80 {
		lines = lines[len(lines)-80:]
	}
	return strings.Join(lines, "\n")
}
