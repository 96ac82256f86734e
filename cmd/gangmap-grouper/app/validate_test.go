package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gangmap/gangmap/podgrouper/core/native"
)

// validOptions are the defaults with the webhook off, which need no file: they validate.
func validOptions() *Options {
	o := DefaultOptions()
	o.WebhookPort = 0
	return o
}

func TestValidateDefaultsWithoutWebhook(t *testing.T) {
	if err := validOptions().Validate(); err != nil {
		t.Fatalf("Validate() = %v, want nil", err)
	}
}

func TestValidateRefusesEachBadValue(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*Options)
		want   string
	}{
		{"empty scheduler", func(o *Options) { o.SchedulerName = "" }, "--scheduler-name: must not be empty (KAI's scheduler name, e.g. kai-scheduler)"},
		{"unknown KAI", func(o *Options) { o.KAIVersion = "v9" }, `--kai-version: KAI release "v9": expected vMAJOR.MINOR or vMAJOR.MINOR.PATCH; known releases are v0.9, v0.10, v0.12, v0.13, v0.14, v0.15, v0.16, v0.17`},
		{"KAI v0.11", func(o *Options) { o.KAIVersion = "v0.11" }, `--kai-version: KAI release "v0.11": there is no v0.11 release; known releases are v0.9, v0.10, v0.12, v0.13, v0.14, v0.15, v0.16, v0.17`},
		{"bad add", func(o *Options) { o.NativeKindsAdd = []string{"Bar"} }, `--native-kinds-add: expected group/version/Kind (core for the core group, * for any version), got "Bar"`},
		{"bad remove", func(o *Options) { o.NativeKindsRemove = []string{"v1/Bar"} }, `--native-kinds-remove: expected group/version/Kind (core for the core group, * for any version), got "v1/Bar"`},
		{"remove one version of a wildcard entry", func(o *Options) { o.NativeKindsRemove = []string{"run.ai/v1/InferenceWorkload"} },
			"--native-kinds-remove: run.ai/v1/InferenceWorkload is not in the native table, which has run.ai/*/InferenceWorkload (every version): remove run.ai/*/InferenceWorkload instead"},
		{"segments on an old KAI", func(o *Options) { o.KAIVersion, o.TopologySegments = "v0.14", "on" },
			"--topology-segments=on: KAI v0.14's PodGroup has no minSubGroup (v0.15+): segments (kai.scheduler/segment-size) and per-role topology constraints are not written, only the PodGroup's own topology constraint (every release has it); set --kai-version to the KAI release installed (v0.15 or later writes segments), or --topology-segments=auto to write the gang without them"},
		{"segments typo", func(o *Options) { o.TopologySegments = "yes" }, `--topology-segments: expected auto, on or off, got "yes"`},
		{"poll 0", func(o *Options) { o.DefinitionsPoll = 0 }, "--definitions-poll: must be a positive duration such as 10s, got 0s"},
		{"negative poll", func(o *Options) { o.DefinitionsPoll = -time.Second }, "--definitions-poll: must be a positive duration such as 10s, got -1s"},
		{"queue key", func(o *Options) { o.QueueLabelKey = "kai queue" }, `--queue-label-key: "kai queue" is not a label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{"nodepool key", func(o *Options) { o.NodePoolLabelKey = "" }, `--nodepool-label-key: "" is not a label key: name part must be non-empty; name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{"reconciles 0", func(o *Options) { o.MaxConcurrentReconciles = 0 }, "--max-concurrent-reconciles: must be at least 1, got 0"},
		{"reconciles -3", func(o *Options) { o.MaxConcurrentReconciles = -3 }, "--max-concurrent-reconciles: must be at least 1, got -3"},
		{"owner cache 0", func(o *Options) { o.OwnerCacheSize = 0 }, "--owner-cache-size: must be at least 1, got 0"},
		{"plan cache 0", func(o *Options) { o.PlanCacheSize = 0 }, "--plan-cache-size: must be at least 1, got 0"},
		{"plan build memory too small", func(o *Options) { o.PlanBuildMemory = "32Mi" }, `--plan-build-memory: must be a quantity of at least 64Mi (two builds of the 32 MiB expression budget), got "32Mi"`},
		{"plan build memory not a quantity", func(o *Options) { o.PlanBuildMemory = "lots" }, `--plan-build-memory: must be a quantity of at least 64Mi (two builds of the 32 MiB expression budget), got "lots"`},
		{"plan build wait 0", func(o *Options) { o.PlanBuildWait = 0 }, "--plan-build-wait: must be a positive duration such as 2s, got 0s"},
		{"qps 0", func(o *Options) { o.QPS = 0 }, "--qps: must not be 0 (client-go would silently use 5): a positive rate, or a negative value to turn client-side rate limiting off"},
		{"qps NaN", func(o *Options) { o.QPS = float32(math.NaN()) }, "--qps: must be a finite number, got NaN"},
		{"burst 0", func(o *Options) { o.Burst = 0 }, "--burst: must be at least 1 while --qps is positive, got 0"},
		{"negative burst, no rate limit", func(o *Options) { o.QPS, o.Burst = -1, -1 }, "--burst: must not be negative, got -1"},
		{"metrics address", func(o *Options) { o.MetricsAddr = "8080" }, `--metrics-bind-address: want host:port (e.g. :8080) or 0 to disable, got "8080"`},
		{"probe address", func(o *Options) { o.ProbeAddr = "" }, `--health-probe-bind-address: want host:port (e.g. :8080) or 0 to disable, got ""`},
		{"tls 1.1", func(o *Options) { o.TLSMinVersion = "1.1" }, `--tls-min-version: want 1.2 or 1.3, got "1.1"`},
		{"lease", func(o *Options) { o.LeaderElect, o.LeaderElectionID = true, "" }, "--leader-election-id: must not be empty with --leader-elect"},
		{"onboarding without webhook", func(o *Options) { o.WebhookPort, o.OnboardingPolicy = 0, "/etc/gangmap/onboarding.yaml" },
			"--onboarding-policy: needs the webhook (--webhook-port above 0): pods are onboarded at creation"},
		{"port", func(o *Options) { o.WebhookPort = -1 }, "--webhook-port: must be a TCP port (1-65535), or 0 to disable the webhook, got -1"},
		{"port too big", func(o *Options) { o.WebhookPort = 70000 }, "--webhook-port: must be a TCP port (1-65535), or 0 to disable the webhook, got 70000"},
		{"negative webhook timeout", func(o *Options) { o.WebhookPort, o.WebhookSelfSigned, o.WebhookTimeout = 9443, true, -2*time.Second },
			"--webhook-timeout: must be above 0 and at most 30s (the longest timeoutSeconds of a webhook configuration), got -2s"},
		{"webhook timeout 31s", func(o *Options) { o.WebhookPort, o.WebhookSelfSigned, o.WebhookTimeout = 9443, true, 31*time.Second },
			"--webhook-timeout: must be above 0 and at most 30s (the longest timeoutSeconds of a webhook configuration), got 31s"},
		{"namespace selector", func(o *Options) {
			o.WebhookPort, o.WebhookSelfSigned, o.WebhookNamespaceSelector = 9443, true, "a in ("
		},
			"--webhook-namespace-selector: unable to parse requirement: found '', expected: ',', ')' or identifier"},
		{"self-signed secret", func(o *Options) { o.WebhookPort, o.WebhookSelfSigned, o.WebhookSecret = 9443, true, "" },
			"--webhook-secret: must not be empty with --webhook-self-signed"},
		{"empty cert dir", func(o *Options) { o.WebhookPort, o.WebhookCertDir = 9443, "" },
			"--webhook-cert-dir: must not be empty while the webhook is on (--webhook-port=9443)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := validOptions()
			tc.modify(o)
			err := o.Validate()
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("Validate() =\n%s\nwant\n%s", err, tc.want)
			}
		})
	}
}

func TestValidateReturnsAllErrorsAtOnce(t *testing.T) {
	o := validOptions()
	o.QPS, o.MaxConcurrentReconciles, o.DefinitionsPoll, o.WebhookPort = 0, 0, -time.Second, -5
	err := o.Validate()
	if err == nil {
		t.Fatal("Validate() = nil")
	}
	want := []string{
		"--definitions-poll: must be a positive duration such as 10s, got -1s",
		"--max-concurrent-reconciles: must be at least 1, got 0",
		"--qps: must not be 0 (client-go would silently use 5): a positive rate, or a negative value to turn client-side rate limiting off",
		"--webhook-port: must be a TCP port (1-65535), or 0 to disable the webhook, got -5",
	}
	if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Validate() =\n%s\nwant\n%s", err, strings.Join(want, "\n"))
	}
}

func TestValidateAcceptsNegativeQPS(t *testing.T) {
	o := validOptions()
	o.QPS = -1 // client-go: no client-side rate limiting
	if err := o.Validate(); err != nil {
		t.Errorf("Validate() = %v, want nil", err)
	}
}

func TestValidateNativeKindsRemove(t *testing.T) {
	o := validOptions()
	o.NativeKindsRemove = []string{"foo/v1/Bar"}
	err := o.Validate()
	if err == nil {
		t.Fatal("Validate() = nil, want the unknown kind refused")
	}
	want := "--native-kinds-remove: foo/v1/Bar is not in the native table of KAI v0.17 (plus --native-kinds-add), so removing it would change nothing; the table has: " +
		strings.Join(native.DefaultTable().Entries(), ", ")
	if err.Error() != want {
		t.Errorf("Validate() =\n%s\nwant\n%s", err, want)
	}
	if !strings.Contains(err.Error(), "jobset.x-k8s.io/v1alpha2/JobSet, ") {
		t.Errorf("the list does not show the table: %s", err)
	}

	for _, ok := range [][]string{
		{"jobset.x-k8s.io/v1alpha2/JobSet", "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet"}, // the demo's and e2e's
		{"ray.io/*/RayJob"},            // every version of a kind listed per version
		{"run.ai/*/InferenceWorkload"}, // a wildcard entry
		{"core/v1/Pod", "core/v1/Pod"}, // named twice
		{"example.com/v1/Added"},       // added below
	} {
		o := validOptions()
		o.NativeKindsAdd = []string{"example.com/v1/Added"}
		o.NativeKindsRemove = ok
		if err := o.Validate(); err != nil {
			t.Errorf("--native-kinds-remove %v: Validate() = %v, want nil", ok, err)
		}
	}
}

func TestValidateDefinitionPaths(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(file, []byte("not even a Karta"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyDir := t.TempDir()
	brokenDir := t.TempDir()
	brokenLink := filepath.Join(brokenDir, "gone.yaml")
	if err := os.Symlink(filepath.Join(brokenDir, "missing.yaml"), brokenLink); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink("/nonexistent/target", dangling); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		paths []string
		want  string
	}{
		// Content is checked later, per file, as on every poll: only the path must work.
		{[]string{dir, file, emptyDir}, ""},
		{[]string{"/nonexistent/gangmap"}, "--definitions: /nonexistent/gangmap does not exist (or is a broken symbolic link)"},
		{[]string{dangling}, "--definitions: " + dangling + " does not exist (or is a broken symbolic link)"},
		{[]string{brokenDir}, "--definitions: " + brokenLink + " does not exist (or is a broken symbolic link)"},
		{[]string{""}, "--definitions: empty path"},
		{[]string{dir, "/nonexistent/a", "/nonexistent/b"}, "--definitions: /nonexistent/a does not exist (or is a broken symbolic link)\n" +
			"--definitions: /nonexistent/b does not exist (or is a broken symbolic link)"},
	} {
		o := validOptions()
		o.DefinitionPaths = tc.paths
		err := o.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("--definitions %q: Validate() = %q, want %q", tc.paths, got, tc.want)
		}
	}
}

func TestValidateWebhookCertificate(t *testing.T) {
	good := t.TempDir()
	writeServingCert(t, good)
	onlyCrt := t.TempDir()
	writeServingCert(t, onlyCrt)
	if err := os.Remove(filepath.Join(onlyCrt, "tls.key")); err != nil {
		t.Fatal(err)
	}
	garbage := t.TempDir()
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(garbage, f), []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const advice = "; the webhook (--webhook-port=9443) needs its serving certificate there at start: mount one (cert-manager or a Secret) or point --webhook-cert-dir at it, " +
		"or pass --webhook-self-signed to have the grouper issue its own, or --webhook-port=0 to disable the webhook"
	for _, tc := range []struct {
		dir        string
		selfSigned bool
		want       string
	}{
		{good, false, ""},
		{onlyCrt, false, "--webhook-cert-dir: " + onlyCrt + " has no tls.key" + advice},
		{garbage, false, "--webhook-cert-dir: " + garbage + ": tls.crt and tls.key do not load: tls: failed to find any PEM data in certificate input" + advice},
		// Self-signed mode writes the certificate itself: nothing to find at start.
		{t.TempDir(), true, ""},
	} {
		o := DefaultOptions()
		o.WebhookCertDir, o.WebhookSelfSigned = tc.dir, tc.selfSigned
		err := o.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("--webhook-cert-dir %s (self-signed %v): Validate() =\n%s\nwant\n%s", tc.dir, tc.selfSigned, got, tc.want)
		}
	}
}

// writeServingCert writes a self-signed tls.crt and tls.key into dir.
func writeServingCert(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gangmap-grouper-webhook"},
		DNSNames: []string{"gangmap-grouper-webhook"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
}
