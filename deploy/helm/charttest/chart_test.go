package charttest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/deploy/crds"
	"github.com/gangmap/gangmap/podgrouper/core/native"
	"github.com/gangmap/gangmap/podgrouper/runtime/webhook"
)

const (
	definitionsDir = "/etc/gangmap/definitions"
	webhookService = fullname + "-webhook"
)

// grouper returns the rendered Deployment and its grouper container.
func grouper(t *testing.T, r *rendering) (*appsv1.Deployment, *corev1.Container) {
	t.Helper()
	if n := len(r.ofKind("Deployment")); n != 1 {
		t.Fatalf("%d Deployments rendered, want 1", n)
	}
	dep := decodeStrict[appsv1.Deployment](t, r.must(t, "Deployment", fullname))
	cs := dep.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Name != "grouper" {
		t.Fatalf("want one container named grouper, got %d", len(cs))
	}
	return dep, &dep.Spec.Template.Spec.Containers[0]
}

// grouperFlags parses the container's args with gangmap-grouper's own flag set, so an argument
// the binary does not know fails here.
func grouperFlags(t *testing.T, r *rendering) (*app.Options, *pflag.FlagSet) {
	t.Helper()
	_, c := grouper(t, r)
	o := app.DefaultOptions()
	fs := pflag.NewFlagSet("gangmap-grouper", pflag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	o.AddFlags(fs)
	if err := fs.Parse(c.Args); err != nil {
		t.Fatalf("gangmap-grouper rejects the rendered args %q: %v", c.Args, err)
	}
	if fs.NArg() > 0 {
		t.Fatalf("rendered args leave positional arguments %q", fs.Args())
	}
	if err := validateAsMounted(t, *o); err != nil {
		t.Fatalf("gangmap-grouper refuses the rendered args %q at start:\n%v", c.Args, err)
	}
	return o, fs
}

// validateAsMounted runs gangmap-grouper's start-up check (Options.Validate) on the rendered
// options, with the files the pod would have mounted stood in for by temporary ones: each
// --definitions path (the ConfigMap) and, with the webhook on and not self-signed, a serving
// certificate in --webhook-cert-dir (cert-manager's Secret). A value the grouper refuses at start
// fails here, at `make chart` time, rather than as a crash-looping pod.
func validateAsMounted(t *testing.T, o app.Options) error {
	t.Helper()
	dir := t.TempDir()
	o.DefinitionPaths = slices.Clone(o.DefinitionPaths) // o is a copy; its slice is not
	for i := range o.DefinitionPaths {
		o.DefinitionPaths[i] = filepath.Join(dir, fmt.Sprintf("definitions-%d", i))
		if err := os.Mkdir(o.DefinitionPaths[i], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if o.WebhookPort != 0 && !o.WebhookSelfSigned {
		o.WebhookCertDir = filepath.Join(dir, "certs")
		writeServingCert(t, o.WebhookCertDir)
	}
	return o.Validate()
}

// Values the grouper would refuse at start fail the chart check: a native kind to remove that
// KAI's table does not have (a typo would leave the kind KAI's without a word).
func TestRenderedArgsAreValidated(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "typo.yaml")
	if err := os.WriteFile(file, []byte("nativeKinds:\n  remove: [jobset.x-k8s.io/v1alpha2/JobSeet]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, c := grouper(t, render(t, file))
	o := app.DefaultOptions()
	fs := pflag.NewFlagSet("gangmap-grouper", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(c.Args); err != nil {
		t.Fatalf("the args parse: %v", err)
	}
	err := validateAsMounted(t, *o)
	if err == nil || !strings.Contains(err.Error(), "--native-kinds-remove: jobset.x-k8s.io/v1alpha2/JobSeet is not in the native table") {
		t.Fatalf("want the typo refused naming the flag and the kind, got %v", err)
	}
}

// writeServingCert writes a self-signed ECDSA tls.crt and tls.key into dir.
func writeServingCert(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gangmap-webhook"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"gangmap-webhook"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{"tls.crt": {Type: "CERTIFICATE", Bytes: der}, "tls.key": {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func grouperOptions(t *testing.T, r *rendering) *app.Options {
	t.Helper()
	o, _ := grouperFlags(t, r)
	return o
}

func volume(t *testing.T, dep *appsv1.Deployment, name string) *corev1.Volume {
	t.Helper()
	for i, v := range dep.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return &dep.Spec.Template.Spec.Volumes[i]
		}
	}
	return nil
}

func mountAt(c *corev1.Container, path string) *corev1.VolumeMount {
	for i, m := range c.VolumeMounts {
		if m.MountPath == path {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

func containerPort(c *corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

func addrPort(t *testing.T, addr string) int32 {
	t.Helper()
	i := strings.LastIndex(addr, ":")
	p, err := strconv.Atoi(addr[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("address %q has no port", addr)
	}
	return int32(p)
}

func selectorOf(t *testing.T, m map[string]any) labels.Selector {
	t.Helper()
	ls := &metav1.LabelSelector{}
	b, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, ls); err != nil {
		t.Fatalf("selector %v: %v", m, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func TestLint(t *testing.T) {
	for _, file := range valuesFiles {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			abs, err := filepath.Abs(file)
			if err != nil {
				t.Fatal(err)
			}
			out := runHelm(t, "lint", "--strict", chartDir(t), "--namespace", namespace, "-f", abs)
			if !bytes.Contains(out, []byte("1 chart(s) linted, 0 chart(s) failed")) {
				t.Errorf("helm lint:\n%s", out)
			}
		})
	}
}

// TestGrouperArgs checks that each value reaches the grouper as the flag it is meant for.
func TestGrouperArgs(t *testing.T) {
	forEachFile(t, func(t *testing.T, r *rendering) {
		v := &r.values
		_, c := grouper(t, r)
		o, fs := grouperFlags(t, r)
		if !slices.Equal(c.Command, []string{"/usr/local/bin/gangmap-grouper"}) {
			t.Errorf("command %q, want the Dockerfile's /usr/local/bin/gangmap-grouper", c.Command)
		}
		tag := v.Image.Tag
		if tag == "" {
			tag = "0.1.0" // appVersion
		}
		if want := v.Image.Repository + ":" + tag; c.Image != want {
			t.Errorf("image %q, want %q", c.Image, want)
		}
		check := func(flag string, got, want any) {
			t.Helper()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("--%s: the grouper gets %#v, values say %#v", flag, got, want)
			}
		}
		check("scheduler-name", o.SchedulerName, v.SchedulerName)
		check("kai-version", o.KAIVersion, v.KAIVersion)
		check("native-kinds-add", o.NativeKindsAdd, orNil(v.NativeKinds.Add))
		check("native-kinds-remove", o.NativeKindsRemove, orNil(v.NativeKinds.Remove))
		check("queue-label-key", o.QueueLabelKey, v.QueueLabelKey)
		check("nodepool-label-key", o.NodePoolLabelKey, v.NodePoolLabelKey)
		check("dry-run", o.DryRun, v.DryRun)
		check("zap-log-level", fs.Lookup("zap-log-level").Value.String(), v.LogLevel)
		check("max-concurrent-reconciles", o.MaxConcurrentReconciles, v.MaxConcurrent)
		check("qps", o.QPS, v.APIRateLimit.QPS)
		check("burst", o.Burst, v.APIRateLimit.Burst)
		check("cluster-definitions", o.ClusterDefinitions, v.ClusterDefs)
		check("strict-definitions", o.StrictDefinitions, v.StrictDefs)
		check("topology-segments", o.TopologySegments, v.TopoSegs)
		check("definitions", o.DefinitionPaths, []string{definitionsDir})
		poll, err := time.ParseDuration(v.DefinitionsPoll)
		if err != nil {
			t.Fatal(err)
		}
		check("definitions-poll", o.DefinitionsPoll, poll)
		for _, d := range []struct {
			flag, value string
			got         time.Duration
		}{{"findings-more-than-planned-grace", v.Findings.MoreThanPlannedGrace, o.Findings.MoreThanPlannedGrace},
			{"findings-gang-unsatisfiable-grace", v.Findings.GangUnsatisfiableGrace, o.Findings.GangUnsatisfiableGrace},
			{"findings-event-interval", v.Findings.EventInterval, o.Findings.ResendInterval}} {
			want, err := time.ParseDuration(d.value)
			if err != nil {
				t.Fatal(err)
			}
			check(d.flag, d.got, want)
		}
		check("metrics-bind-address", o.MetricsAddr, fmt.Sprintf(":%d", v.Metrics.Port))
		check("health-probe-bind-address", o.ProbeAddr, fmt.Sprintf(":%d", v.ProbePort))
		check("metrics-secure", o.MetricsSecure, v.Metrics.Secure)
		check("tls-min-version", o.TLSMinVersion, v.TLSMinVersion)
		check("enable-http2", o.EnableHTTP2, v.EnableHTTP2)
		check("leader-elect", o.LeaderElect, v.leaderElect())

		table, err := o.NativeTable()
		if err != nil {
			t.Fatalf("the grouper rejects the native table flags: %v", err)
		}
		for _, k := range v.NativeKinds.Add {
			gvk, _ := native.ParseGVK(k)
			if !table.Has(gvk) {
				t.Errorf("%s was added to the native table but is not native", k)
			}
		}
		for _, k := range v.NativeKinds.Remove {
			gvk, _ := native.ParseGVK(k)
			if table.Has(gvk) {
				t.Errorf("%s was removed from the native table but is still native", k)
			}
		}

		if !v.Webhook.Enabled {
			check("webhook-port", o.WebhookPort, 0)
			return
		}
		check("webhook-port", o.WebhookPort, v.Webhook.Port)
		dt, err := time.ParseDuration(v.Webhook.DecisionTimeout)
		if err != nil {
			t.Fatal(err)
		}
		check("webhook-timeout", o.WebhookTimeout, dt)
		if o.WebhookTimeout >= time.Duration(v.Webhook.TimeoutSeconds)*time.Second {
			t.Errorf("--webhook-timeout %v is not below the configuration's timeoutSeconds %d", o.WebhookTimeout, v.Webhook.TimeoutSeconds)
		}
	})
}

func orNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// TestWebhook checks the MutatingWebhookConfiguration, its Service and the grouper's webhook
// flags.
func TestWebhook(t *testing.T) {
	forEachFile(t, func(t *testing.T, r *rendering) {
		v := &r.values
		dep, c := grouper(t, r)
		o := grouperOptions(t, r)
		if !v.Webhook.Enabled {
			for _, kind := range []string{"MutatingWebhookConfiguration", "Certificate", "Issuer", "Secret"} {
				if n := len(r.ofKind(kind)); n > 0 {
					t.Errorf("webhook disabled, yet %d %s rendered", n, kind)
				}
			}
			if r.find("Service", webhookService) != nil || containerPort(c, "webhook") != 0 || volume(t, dep, "webhook-certs") != nil {
				t.Error("webhook disabled, yet its Service, container port or certificate volume is rendered")
			}
			return
		}
		if n := len(r.ofKind("MutatingWebhookConfiguration")); n != 1 {
			t.Fatalf("%d MutatingWebhookConfigurations, want 1", n)
		}
		mwc := decodeStrict[admissionregistrationv1.MutatingWebhookConfiguration](t, r.must(t, "MutatingWebhookConfiguration", fullname))
		if len(mwc.Webhooks) != 1 {
			t.Fatalf("%d webhooks, want 1", len(mwc.Webhooks))
		}
		w := mwc.Webhooks[0]
		if w.Name != "pods.gangmap.io" {
			t.Errorf("webhook name %q", w.Name)
		}
		wantRules := []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
				Scope: ptrTo(admissionregistrationv1.NamespacedScope)},
		}}
		if !equality.Semantic.DeepEqual(w.Rules, wantRules) {
			t.Errorf("rules %+v, want Pod CREATE only: %+v", w.Rules, wantRules)
		}
		if want := v.failurePolicy(); w.FailurePolicy == nil || string(*w.FailurePolicy) != want {
			t.Errorf("failurePolicy %v, values say %q", deref(w.FailurePolicy), want)
		}
		if filepath.Base(r.file) == "default.yaml" && (w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Ignore) {
			t.Errorf("default failurePolicy %v, want Ignore", deref(w.FailurePolicy))
		}
		if w.SideEffects == nil || *w.SideEffects != admissionregistrationv1.SideEffectClassNone {
			t.Errorf("sideEffects %v, want None", deref(w.SideEffects))
		}
		if w.TimeoutSeconds == nil || *w.TimeoutSeconds != v.Webhook.TimeoutSeconds || *w.TimeoutSeconds > 10 {
			t.Errorf("timeoutSeconds %v, want the values' %d and at most 10", deref(w.TimeoutSeconds), v.Webhook.TimeoutSeconds)
		}
		if !slices.Equal(w.AdmissionReviewVersions, []string{"v1"}) {
			t.Errorf("admissionReviewVersions %v", w.AdmissionReviewVersions)
		}
		svc := w.ClientConfig.Service
		if svc == nil || svc.Name != webhookService || svc.Namespace != namespace || svc.Path == nil || *svc.Path != webhook.Path || svc.Port == nil || *svc.Port != 443 || w.ClientConfig.URL != nil {
			t.Errorf("clientConfig %+v, want Service %s/%s port 443 path %s", w.ClientConfig, namespace, webhookService, webhook.Path)
		}

		// The Service reaches the grouper's webhook port.
		s := decodeStrict[corev1.Service](t, r.must(t, "Service", webhookService))
		if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 443 || s.Spec.Ports[0].TargetPort.String() != "webhook" {
			t.Errorf("webhook Service ports %+v, want 443 -> webhook", s.Spec.Ports)
		}
		if containerPort(c, "webhook") != int32(o.WebhookPort) {
			t.Errorf("container port webhook %d, --webhook-port %d", containerPort(c, "webhook"), o.WebhookPort)
		}
		if !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels)) || len(s.Spec.Selector) == 0 {
			t.Errorf("webhook Service selector %v does not select the grouper's pods %v", s.Spec.Selector, dep.Spec.Template.Labels)
		}

		// Selectors: the configuration carries the values' selectors (plus the excluded
		// namespaces), and the grouper applies the same ones.
		valuesNS, valuesObj := selectorOf(t, v.Webhook.NamespaceSelector), selectorOf(t, v.Webhook.ObjectSelector)
		nsSel, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
		if err != nil {
			t.Fatal(err)
		}
		excluded := sets(append(slices.Clone(v.Webhook.ExcludeNamespaces), namespace))
		var rest []string
		foundExclusion := false
		reqs, _ := nsSel.Requirements()
		for _, req := range reqs {
			if req.Key() == "kubernetes.io/metadata.name" && req.Operator() == selection.NotIn {
				foundExclusion = true
				if got := sets(req.Values().UnsortedList()); !slices.Equal(got, excluded) {
					t.Errorf("namespaceSelector excludes %v, want %v (excludeNamespaces and the release namespace)", got, excluded)
				}
				continue
			}
			rest = append(rest, req.String())
		}
		if !foundExclusion {
			t.Errorf("namespaceSelector %v does not exclude the release namespace", nsSel)
		}
		if got, want := strings.Join(rest, ","), valuesNS.String(); got != want {
			t.Errorf("namespaceSelector %q, values say %q", got, want)
		}
		objSel, err := metav1.LabelSelectorAsSelector(w.ObjectSelector)
		if err != nil {
			t.Fatal(err)
		}
		if objSel.String() != valuesObj.String() {
			t.Errorf("objectSelector %q, values say %q", objSel, valuesObj)
		}
		for flag, pair := range map[string][2]string{
			"webhook-namespace-selector": {o.WebhookNamespaceSelector, valuesNS.String()},
			"webhook-object-selector":    {o.WebhookObjectSelector, valuesObj.String()},
		} {
			parsed, err := labels.Parse(pair[0])
			if err != nil {
				t.Errorf("--%s=%q does not parse: %v", flag, pair[0], err)
				continue
			}
			if parsed.String() != pair[1] {
				t.Errorf("--%s=%q, the configuration's selector is %q", flag, parsed, pair[1])
			}
		}
		// The release namespace is never sent to the webhook; another namespace with the selected
		// labels is.
		if nsLabels := firstMatch(valuesNS); nsLabels != nil {
			in := labels.Merge(nsLabels, labels.Set{"kubernetes.io/metadata.name": "team-a"})
			own := labels.Merge(nsLabels, labels.Set{"kubernetes.io/metadata.name": namespace})
			if !nsSel.Matches(in) || nsSel.Matches(own) {
				t.Errorf("namespaceSelector %q: matches team-a %v (want true), %s %v (want false)", nsSel, nsSel.Matches(in), namespace, nsSel.Matches(own))
			}
		}
	})
}

// firstMatch returns a label set the selector matches, for the simple selectors the values use.
func firstMatch(sel labels.Selector) labels.Set {
	set := labels.Set{}
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			set[r.Key()] = r.Values().UnsortedList()[0]
		case selection.Exists:
			set[r.Key()] = "x"
		case selection.NotIn, selection.DoesNotExist, selection.NotEquals:
		default:
			return nil
		}
	}
	if !sel.Matches(set) {
		return nil
	}
	return set
}

func sets(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return slices.Compact(out)
}

func ptrTo[T any](v T) *T { return &v }

// deref shows a pointer's value in messages ("<nil>" when nil).
func deref[T any](p *T) any {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// TestWebhookCertificate checks where the webhook's certificate comes from: cert-manager, a
// Secret named in values, or the grouper's own (--webhook-self-signed); the grouper reads it from the
// directory --webhook-cert-dir names.
func TestWebhookCertificate(t *testing.T) {
	forEachFile(t, func(t *testing.T, r *rendering) {
		v := &r.values
		if !v.Webhook.Enabled {
			return
		}
		dep, c := grouper(t, r)
		o := grouperOptions(t, r)
		vol := volume(t, dep, "webhook-certs")
		m := mountAt(c, o.WebhookCertDir)
		if vol == nil || m == nil || m.Name != vol.Name {
			t.Fatalf("--webhook-cert-dir %s is not the webhook-certs volume's mount (volume %+v, mount %+v)", o.WebhookCertDir, vol, m)
		}
		if !o.WebhookSelfSigned && (vol.Secret == nil || !m.ReadOnly) {
			t.Fatalf("--webhook-cert-dir %s is not a read-only mount of the certificate Secret (volume %+v)", o.WebhookCertDir, vol)
		}
		mwc := decodeStrict[admissionregistrationv1.MutatingWebhookConfiguration](t, r.must(t, "MutatingWebhookConfiguration", fullname))
		caBundle := mwc.Webhooks[0].ClientConfig.CABundle
		svcDNS := fmt.Sprintf("%s.%s.svc", webhookService, namespace)

		switch {
		case v.Webhook.CertManager.Enabled:
			if n := len(r.ofKind("Secret")); n > 0 {
				t.Errorf("cert-manager writes the Secret, yet the chart renders %d", n)
			}
			cert := r.must(t, "Certificate", fullname+"-webhook")
			spec := cert.Object["spec"].(map[string]any)
			if spec["secretName"] != vol.Secret.SecretName {
				t.Errorf("Certificate secretName %v, the grouper mounts %s", spec["secretName"], vol.Secret.SecretName)
			}
			names, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
			if !slices.Contains(names, svcDNS) {
				t.Errorf("Certificate dnsNames %v lack %s", names, svcDNS)
			}
			issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
			if len(v.Webhook.CertManager.IssuerRef) == 0 {
				r.must(t, "Issuer", issuer)
			}
			if got := mwc.Annotations["cert-manager.io/inject-ca-from"]; got != namespace+"/"+cert.GetName() {
				t.Errorf("cert-manager.io/inject-ca-from %q, want %s/%s", got, namespace, cert.GetName())
			}
			if len(caBundle) > 0 {
				t.Error("caBundle is set; cert-manager's cainjector owns it")
			}
		case v.Webhook.TLS.SecretName != "":
			if vol.Secret.SecretName != v.Webhook.TLS.SecretName || base64.StdEncoding.EncodeToString(caBundle) != v.Webhook.TLS.CABundle {
				t.Errorf("the given Secret %s and caBundle are not what is mounted (%s) and configured", v.Webhook.TLS.SecretName, vol.Secret.SecretName)
			}
		default:
			// The grouper's own certificate: it writes it into --webhook-cert-dir (a writable
			// emptyDir), keeps it in the Secret the chart creates empty, and sets the caBundle of
			// the configuration the chart creates without one.
			if len(r.ofKind("Certificate"))+len(r.ofKind("Issuer")) > 0 {
				t.Error("cert-manager is off, yet a Certificate or Issuer is rendered")
			}
			if !o.WebhookSelfSigned {
				t.Fatal("no cert-manager and no Secret given, yet the grouper does not run with --webhook-self-signed")
			}
			if vol.EmptyDir == nil || m.ReadOnly {
				t.Errorf("--webhook-cert-dir %s must be a writable emptyDir for the grouper's own certificate (volume %+v)", o.WebhookCertDir, vol)
			}
			if o.WebhookConfigName != mwc.Name || o.WebhookService != webhookService || o.WebhookNamespace != namespace || len(o.WebhookCertDNSNames) > 0 {
				t.Errorf("--webhook-configuration-name %q --webhook-service %q --webhook-namespace %q --webhook-cert-dns-names %v; want %s, %s, %s and the Service's names",
					o.WebhookConfigName, o.WebhookService, o.WebhookNamespace, o.WebhookCertDNSNames, mwc.Name, webhookService, namespace)
			}
			s := decodeStrict[corev1.Secret](t, r.must(t, "Secret", o.WebhookSecret))
			if s.Namespace != namespace || len(s.Data)+len(s.StringData) > 0 || s.Type != corev1.SecretTypeOpaque {
				t.Errorf("the certificate Secret %s/%s must be rendered empty and Opaque (type %s, %d keys), so that an upgrade never overwrites the grouper's certificate", s.Namespace, s.Name, s.Type, len(s.Data)+len(s.StringData))
			}
			if len(caBundle) > 0 || mwc.Annotations["cert-manager.io/inject-ca-from"] != "" {
				t.Error("the grouper sets the caBundle; the chart must leave it out")
			}
			// The certificate the grouper issues is valid for the Service the configuration calls.
			cert := selfSignedCertificate(t, r)
			roots := x509.NewCertPool()
			roots.AddCert(cert.ca)
			if _, err := cert.leaf.Verify(x509.VerifyOptions{DNSName: svcDNS, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				t.Errorf("the grouper's certificate is not valid for %s: %v", svcDNS, err)
			}
		}
	})
}

type issued struct{ ca, leaf *x509.Certificate }

// selfSignedCertificate runs the grouper's certificate manager with the rendered flags on what
// the chart installs and returns the CA it put in the configuration and the serving certificate.
func selfSignedCertificate(t *testing.T, r *rendering) issued {
	t.Helper()
	o := grouperOptions(t, r)
	secret := decodeStrict[corev1.Secret](t, r.must(t, "Secret", o.WebhookSecret))
	mwc := decodeStrict[admissionregistrationv1.MutatingWebhookConfiguration](t, r.must(t, "MutatingWebhookConfiguration", o.WebhookConfigName))
	rec := newRecorder(secret, mwc)
	dir := t.TempDir()
	s := &webhook.SelfSigned{Reader: rec, Writer: rec, Secret: client.ObjectKey{Namespace: o.WebhookNamespace, Name: o.WebhookSecret},
		WebhookConfiguration: o.WebhookConfigName, DNSNames: serviceDNSNames(o.WebhookService, o.WebhookNamespace), CertDir: dir}
	if err := s.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := rec.Get(context.Background(), client.ObjectKey{Name: o.WebhookConfigName}, got); err != nil {
		t.Fatal(err)
	}
	parse := func(b []byte) *x509.Certificate {
		block, _ := pem.Decode(b)
		if block == nil {
			t.Fatal("not PEM")
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	crt, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(crt, key); err != nil {
		t.Fatal(err)
	}
	return issued{ca: parse(got.Webhooks[0].ClientConfig.CABundle), leaf: parse(crt)}
}

// serviceDNSNames are the names the grouper issues its certificate for by default (the
// Service's; cmd/gangmap-grouper/app Options.webhookDNSNames).
func serviceDNSNames(svc, ns string) []string {
	return []string{svc, svc + "." + ns, svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local"}
}

func TestPodDisruptionBudget(t *testing.T) {
	forEachFile(t, func(t *testing.T, r *rendering) {
		pdbs := r.ofKind("PodDisruptionBudget")
		if r.values.Replicas <= 1 {
			if len(pdbs) > 0 {
				t.Errorf("replicas %d, yet a PodDisruptionBudget is rendered", r.values.Replicas)
			}
			return
		}
		if len(pdbs) != 1 {
			t.Fatalf("replicas %d: %d PodDisruptionBudgets, want 1", r.values.Replicas, len(pdbs))
		}
		pdb := decodeStrict[policyv1.PodDisruptionBudget](t, pdbs[0])
		dep, _ := grouper(t, r)
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
			t.Errorf("PodDisruptionBudget selector %v does not select the grouper's pods", pdb.Spec.Selector)
		}
		if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
			t.Errorf("maxUnavailable %v, want 1", pdb.Spec.MaxUnavailable)
		}
		if dep.Spec.Replicas == nil || int(*dep.Spec.Replicas) != r.values.Replicas {
			t.Errorf("Deployment replicas %v, values say %d", dep.Spec.Replicas, r.values.Replicas)
		}
	})
}

func TestMetricsAndServiceMonitor(t *testing.T) {
	forEachFile(t, func(t *testing.T, r *rendering) {
		dep, c := grouper(t, r)
		o := grouperOptions(t, r)
		svc := decodeStrict[corev1.Service](t, r.must(t, "Service", fullname+"-metrics"))
		if containerPort(c, "metrics") != addrPort(t, o.MetricsAddr) {
			t.Errorf("container port metrics %d, --metrics-bind-address %s", containerPort(c, "metrics"), o.MetricsAddr)
		}
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
			t.Errorf("metrics Service ports %+v", svc.Spec.Ports)
		}
		if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels)) {
			t.Errorf("metrics Service selector %v does not select the grouper's pods", svc.Spec.Selector)
		}

		sms := r.ofKind("ServiceMonitor")
		if !r.values.Metrics.ServiceMonitor.Enabled {
			if len(sms) > 0 {
				t.Errorf("metrics.serviceMonitor.enabled is false, yet %d ServiceMonitors are rendered", len(sms))
			}
			return
		}
		if len(sms) != 1 {
			t.Fatalf("%d ServiceMonitors, want 1", len(sms))
		}
		sm := sms[0]
		if sm.GetAPIVersion() != "monitoring.coreos.com/v1" || sm.GetNamespace() != namespace {
			t.Errorf("ServiceMonitor %s in %s", sm.GetAPIVersion(), sm.GetNamespace())
		}
		for k, val := range r.values.Metrics.ServiceMonitor.Labels {
			if sm.GetLabels()[k] != val {
				t.Errorf("ServiceMonitor lacks label %s=%s", k, val)
			}
		}
		matchLabels, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		sel := labels.SelectorFromSet(matchLabels)
		var selected []string
		for _, s := range r.ofKind("Service") {
			if sel.Matches(labels.Set(s.GetLabels())) {
				selected = append(selected, s.GetName())
			}
		}
		if !slices.Equal(selected, []string{svc.Name}) {
			t.Errorf("ServiceMonitor selects Services %v, want only %s", selected, svc.Name)
		}
		eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(eps) != 1 || eps[0].(map[string]any)["port"] != "metrics" || eps[0].(map[string]any)["path"] != "/metrics" {
			t.Fatalf("ServiceMonitor endpoints %v, want port metrics path /metrics", eps)
		}
		// Secure metrics: HTTPS with Prometheus's ServiceAccount token (the grouper reviews it).
		ep := eps[0].(map[string]any)
		wantScheme, wantToken := "http", ""
		if o.MetricsSecure {
			wantScheme, wantToken = "https", "/var/run/secrets/kubernetes.io/serviceaccount/token"
			if !reflect.DeepEqual(ep["tlsConfig"], r.values.Metrics.ServiceMonitor.TLSConfig) {
				t.Errorf("ServiceMonitor tlsConfig %v, values say %v", ep["tlsConfig"], r.values.Metrics.ServiceMonitor.TLSConfig)
			}
		}
		if ep["scheme"] != wantScheme || fmt.Sprint(ep["bearerTokenFile"]) != fmt.Sprint(orNilString(wantToken)) {
			t.Errorf("ServiceMonitor scheme %v bearerTokenFile %v; --metrics-secure=%v wants %s and %q", ep["scheme"], ep["bearerTokenFile"], o.MetricsSecure, wantScheme, wantToken)
		}
	})
}

// orNilString is nil for "" (an absent field) and s otherwise.
func orNilString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func TestProbes(t *testing.T) {
	forEachFile(t, func(t *testing.T, r *rendering) {
		_, c := grouper(t, r)
		o := grouperOptions(t, r)
		if containerPort(c, "probes") != addrPort(t, o.ProbeAddr) || addrPort(t, o.ProbeAddr) != 8081 {
			t.Errorf("probe port %d, --health-probe-bind-address %s, want 8081", containerPort(c, "probes"), o.ProbeAddr)
		}
		for name, pair := range map[string]struct {
			p    *corev1.Probe
			path string
		}{"liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}} {
			if pair.p == nil || pair.p.HTTPGet == nil || pair.p.HTTPGet.Path != pair.path || pair.p.HTTPGet.Port.String() != "probes" {
				t.Errorf("%s probe %+v, want GET %s on port probes", name, pair.p, pair.path)
			}
		}
	})
}

func TestSecurityContext(t *testing.T) {
	forEachFile(t, func(t *testing.T, r *rendering) {
		dep, c := grouper(t, r)
		ps := dep.Spec.Template.Spec
		if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot ||
			ps.SecurityContext.SeccompProfile == nil || ps.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("pod securityContext %+v, want runAsNonRoot and seccomp RuntimeDefault", ps.SecurityContext)
		}
		if ps.HostNetwork || ps.HostPID || ps.HostIPC {
			t.Error("the grouper shares a host namespace")
		}
		for _, v := range ps.Volumes {
			if v.HostPath != nil {
				t.Errorf("volume %s is a hostPath", v.Name)
			}
		}
		sc := c.SecurityContext
		switch {
		case sc == nil:
			t.Fatal("no container securityContext")
		case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
			t.Error("root filesystem is writable")
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			t.Error("privilege escalation is allowed")
		case sc.Privileged != nil && *sc.Privileged:
			t.Error("privileged")
		case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
			t.Errorf("capabilities %+v, want drop ALL and add none", sc.Capabilities)
		case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
			t.Error("container runAsNonRoot is not set")
		case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
			t.Error("container seccomp is not RuntimeDefault")
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := c.Resources.Requests[res]; !ok {
				t.Errorf("no %s request", res)
			}
		}
		if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
			t.Error("no memory limit")
		}
		if dep.Spec.Template.Spec.AutomountServiceAccountToken == nil || !*dep.Spec.Template.Spec.AutomountServiceAccountToken {
			t.Error("the grouper needs its ServiceAccount token")
		}
		if m := mountAt(c, "/tmp"); m == nil || volume(t, dep, m.Name).EmptyDir == nil {
			t.Error("no writable emptyDir at /tmp under the read-only root filesystem")
		}
	})
}

// TestDefinitionsConfigMap checks that inline definitions become files of the ConfigMap the
// grouper polls, each a valid definition, and that the ConfigMap is mounted where --definitions
// points.
func TestDefinitionsConfigMap(t *testing.T) {
	compiler, err := expr.NewCompiler(expr.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	forEachFile(t, func(t *testing.T, r *rendering) {
		dep, c := grouper(t, r)
		o := grouperOptions(t, r)
		cm := decodeStrict[corev1.ConfigMap](t, r.must(t, "ConfigMap", fullname+"-definitions"))
		m := mountAt(c, o.DefinitionPaths[0])
		vol := volume(t, dep, "definitions")
		if m == nil || vol == nil || m.Name != vol.Name || !m.ReadOnly || vol.ConfigMap == nil || vol.ConfigMap.Name != cm.Name {
			t.Fatalf("--definitions %v is not a read-only mount of ConfigMap %s (mount %+v, volume %+v)", o.DefinitionPaths, cm.Name, m, vol)
		}
		want := map[string]any{}
		for name, def := range r.values.Definitions {
			file := name
			if ext := filepath.Ext(name); ext != ".yaml" && ext != ".yml" && ext != ".json" {
				file += ".yaml"
			}
			want[file] = def
		}
		var got []string
		for f := range cm.Data {
			got = append(got, f)
		}
		var wantFiles []string
		for f := range want {
			wantFiles = append(wantFiles, f)
		}
		sort.Strings(got)
		sort.Strings(wantFiles)
		if !slices.Equal(got, wantFiles) {
			t.Fatalf("ConfigMap files %v, want %v", got, wantFiles)
		}
		for file, def := range want {
			data := cm.Data[file]
			switch d := def.(type) {
			case string:
				if strings.TrimSpace(data) != strings.TrimSpace(d) {
					t.Errorf("%s: the ConfigMap holds\n%s\nvalues say\n%s", file, data, d)
				}
			default:
				var parsed any
				if err := yaml.Unmarshal([]byte(data), &parsed); err != nil || !reflect.DeepEqual(parsed, d) {
					t.Errorf("%s: the ConfigMap's definition differs from the values' object (%v)", file, err)
				}
			}
			ls, err := definitions.Decode(strings.NewReader(data), file, definitions.SourceFile, definitions.DecodeOptions{Strict: r.values.StrictDefs})
			if err != nil || len(ls) != 1 {
				t.Errorf("%s does not decode to one definition: %v", file, err)
				continue
			}
			if _, err := definitions.Compile(ls[0], compiler); err != nil {
				t.Errorf("%s does not compile: %v", file, err)
			}
		}
	})
}

// TestKartaCRD checks the chart's copy of the Karta CRD and when it is rendered.
func TestKartaCRD(t *testing.T) {
	copyBytes, err := os.ReadFile(filepath.Join(chartDir(t), "files", crds.KartaFile))
	if err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(filepath.Join(moduleRoot(t), "deploy", "crds", crds.KartaFile))
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := crds.Files.ReadFile(crds.KartaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(copyBytes, orig) || !bytes.Equal(copyBytes, embedded) {
		t.Fatalf("deploy/helm/gangmap/files/%s differs from deploy/crds/%s: copy it again (cp deploy/crds/%[1]s deploy/helm/gangmap/files/)", crds.KartaFile, crds.KartaFile)
	}
	want, err := crds.Karta()
	if err != nil {
		t.Fatal(err)
	}
	forEachFile(t, func(t *testing.T, r *rendering) {
		var kartas []*unstructured.Unstructured
		for _, u := range r.ofKind("CustomResourceDefinition") {
			if u.GetName() != crds.KartaName {
				t.Errorf("the chart renders CRD %s; gangmap installs only the Karta CRD (KAI owns its PodGroup CRD)", u.GetName())
				continue
			}
			kartas = append(kartas, u)
		}
		for _, u := range r.objs {
			if strings.HasPrefix(u.GetAPIVersion(), "scheduling.run.ai/") {
				t.Errorf("the chart renders a KAI object %s %s", u.GetKind(), u.GetName())
			}
		}
		if !r.values.InstallKartaCRD {
			if len(kartas) > 0 {
				t.Error("installKartaCRD is false, yet the Karta CRD is rendered")
			}
			return
		}
		if len(kartas) != 1 {
			t.Fatalf("%d Karta CRDs rendered, want 1 (helm template has no cluster, so lookup finds none)", len(kartas))
		}
		got := decodeStrict[apiextensionsv1.CustomResourceDefinition](t, kartas[0])
		if got.Annotations["helm.sh/resource-policy"] != "keep" {
			t.Errorf("the Karta CRD lacks helm.sh/resource-policy: keep (annotations %v)", got.Annotations)
		}
		if got.Name != want.Name || !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
			t.Error("the rendered Karta CRD's spec differs from deploy/crds/run.ai_kartas.yaml")
		}
	})
}

// TestKartaCRDLookupGuard checks that the CRD template renders only when lookup finds no Karta
// CRD: the guard is in the template's condition (lookup cannot be exercised without a cluster).
func TestKartaCRDLookupGuard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir(t), "templates", "karta-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	guard := `{{- if and .Values.installKartaCRD (not (lookup "apiextensions.k8s.io/v1" "CustomResourceDefinition" "" "kartas.run.ai")) }}`
	if !bytes.Contains(b, []byte(guard)) {
		t.Errorf("templates/karta-crd.yaml lost its guard %s", guard)
	}
	if _, err := os.Stat(filepath.Join(chartDir(t), "crds")); err == nil {
		t.Error("the chart has a crds/ directory: Helm never upgrades it and installs it unconditionally")
	}
}
