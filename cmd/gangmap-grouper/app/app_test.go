package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"
)

// writeKubeconfig writes a kubeconfig for server at p and returns p.
func writeKubeconfig(t *testing.T, p, server string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	kc := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + server + `"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRestConfigPrecedence: --kubeconfig, then $KUBECONFIG, then in-cluster, then ~/.kube/config,
// as controller-runtime's config.GetConfig.
func TestRestConfigPrecedence(t *testing.T) {
	home := noCluster(t)
	writeKubeconfig(t, filepath.Join(home, ".kube", "config"), "https://home:6443")
	flagFile := writeKubeconfig(t, filepath.Join(t.TempDir(), "flag"), "https://flag:6443")
	envFile := writeKubeconfig(t, filepath.Join(t.TempDir(), "env"), "https://env:6443")
	host := func(o *Options) string {
		t.Helper()
		cfg, err := o.RestConfig()
		if err != nil {
			t.Fatalf("RestConfig() error: %v", err)
		}
		return cfg.Host
	}
	o := validOptions()
	if got := host(o); got != "https://home:6443" {
		t.Errorf("only ~/.kube/config: host %q", got)
	}
	inClusterConfig = func() (*rest.Config, error) { return &rest.Config{Host: "https://in-cluster:443"}, nil }
	if got := host(o); got != "https://in-cluster:443" {
		t.Errorf("in a cluster, with ~/.kube/config: host %q, want the in-cluster config", got)
	}
	t.Setenv("KUBECONFIG", envFile)
	if got := host(o); got != "https://env:6443" {
		t.Errorf("$KUBECONFIG in a cluster: host %q, want $KUBECONFIG's", got)
	}
	o.Kubeconfig = flagFile
	o.QPS, o.Burst = 7, 9
	cfg, err := o.RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://flag:6443" || cfg.QPS != 7 || cfg.Burst != 9 {
		t.Errorf("--kubeconfig with $KUBECONFIG: host %q qps %v burst %d, want --kubeconfig's with --qps 7 --burst 9", cfg.Host, cfg.QPS, cfg.Burst)
	}
}

func TestRestConfigErrors(t *testing.T) {
	home := noCluster(t)
	o := validOptions()
	homeConfig := filepath.Join(home, ".kube", "config")

	_, err := o.RestConfig()
	want := "no Kubernetes configuration: not running in a cluster, and neither --kubeconfig nor $KUBECONFIG is set and " + homeConfig + " does not exist"
	if err == nil || err.Error() != want {
		t.Errorf("nothing: RestConfig() error %v, want %q", err, want)
	}

	// In a pod whose service account token is missing: that is the problem to report.
	inClusterConfig = func() (*rest.Config, error) { return nil, errors.New("open token: no such file or directory") }
	_, err = o.RestConfig()
	if want := "in-cluster config: open token: no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("broken in-cluster: RestConfig() error %v, want %q", err, want)
	}
	inClusterConfig = func() (*rest.Config, error) { return nil, rest.ErrNotInCluster }

	missing := filepath.Join(t.TempDir(), "missing")
	t.Setenv("KUBECONFIG", missing)
	_, err = o.RestConfig()
	if want := "$KUBECONFIG (" + missing + "): no configuration there (missing or empty files)"; err == nil || err.Error() != want {
		t.Errorf("$KUBECONFIG missing: RestConfig() error %v, want %q", err, want)
	}

	o.Kubeconfig = missing
	_, err = o.RestConfig()
	if err == nil || !strings.HasPrefix(err.Error(), "--kubeconfig "+missing+": ") || !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("--kubeconfig missing: RestConfig() error %v, want one naming the flag, the path and the cause", err)
	}
}

func TestLogStart(t *testing.T) {
	var lines []string
	log := funcr.NewJSON(func(obj string) { lines = append(lines, obj) }, funcr.Options{})
	o := DefaultOptions()
	o.DefinitionPaths = []string{"/etc/gangmap/definitions"}
	o.DryRun, o.LeaderElect, o.LeaderElectionNamespace = true, true, "gangmap-system"
	o.NativeKindsRemove = []string{"jobset.x-k8s.io/v1alpha2/JobSet"}
	Version = "v1.2.3"
	t.Cleanup(func() { Version = "" })
	logStart(log, o, &rest.Config{Host: "https://api:6443"})
	if len(lines) != 1 {
		t.Fatalf("want one startup line, got %d: %q", len(lines), lines)
	}
	for _, kv := range []string{
		`"msg":"Starting gangmap-grouper"`, `"version":"v1.2.3"`, `"apiServer":"https://api:6443"`,
		`"definitions":["/etc/gangmap/definitions"]`, `"clusterDefinitions":true`, `"dryRun":true`,
		`"webhook":"cert-dir"`, `"webhookPort":9443`, `"webhookCertDir":"/tmp/k8s-webhook-server/serving-certs"`,
		`"kaiVersion":"v0.17"`, `"nativeKindsAdd":[]`, `"nativeKindsRemove":["jobset.x-k8s.io/v1alpha2/JobSet"]`,
		`"schedulerName":"kai-scheduler"`, `"leaderElect":true`, `"leaderElectionID":"gangmap-grouper.gangmap.io"`,
		`"leaderElectionNamespace":"gangmap-system"`,
	} {
		if !strings.Contains(lines[0], kv) {
			t.Errorf("startup line lacks %s: %s", kv, lines[0])
		}
	}

	lines = nil
	o.WebhookSelfSigned = true
	logStart(log, o, &rest.Config{})
	if len(lines) != 1 || !strings.Contains(lines[0], `"webhook":"self-signed"`) || !strings.Contains(lines[0], `"webhookSecret":"gangmap-system/gangmap-grouper-webhook-cert"`) {
		t.Errorf("self-signed: %q", lines)
	}
	lines = nil
	o.WebhookPort = 0
	logStart(log, o, &rest.Config{})
	if len(lines) != 1 || !strings.Contains(lines[0], `"webhook":"off"`) || strings.Contains(lines[0], "webhookPort") {
		t.Errorf("webhook off: %q", lines)
	}
}

// On a KAI release before v0.15 the startup log says what it costs (kai-releases.md §2, §3): no
// skip annotation (and how gangmap avoids the tug-of-war) and no minSubGroup; a newer release is
// treated as the latest with a warning.
func TestLogStartKAIRelease(t *testing.T) {
	var lines []string
	log := funcr.NewJSON(func(obj string) { lines = append(lines, obj) }, funcr.Options{})
	o := DefaultOptions()
	o.KAIVersion = "v0.14.7"
	logStart(log, o, &rest.Config{})
	all := strings.Join(lines, "\n")
	for _, want := range []string{`"kaiReleaseLine":"v0.14"`, `"kaiSkipAnnotation":false`, `"kaiMinSubGroup":false`,
		"does not honour kai.scheduler/skip-podgrouper", "never takes back a pod", "flat PodGroup", "segments (kai.scheduler/segment-size) and per-role topology constraints are not written"} {
		if !strings.Contains(all, want) {
			t.Errorf("startup log for v0.14.7 lacks %s:\n%s", want, all)
		}
	}
	if len(lines) != 5 { // start line, skip annotation, minSubGroup, segments, delays
		t.Errorf("want 5 lines for v0.14.7, got %d:\n%s", len(lines), all)
	}
	lines = nil
	o.KAIVersion = "v0.19.1"
	logStart(log, o, &rest.Config{})
	if len(lines) != 2 || !strings.Contains(lines[1], "newer than the latest release gangmap knows (v0.17)") || !strings.Contains(lines[0], `"kaiReleaseLine":"v0.17"`) {
		t.Errorf("v0.19.1: want the start line and one warning, got %q", lines)
	}
}

func TestVersion(t *testing.T) {
	if v := version(); v == "" {
		t.Error("version() is empty")
	}
	Version = "v9.9.9"
	t.Cleanup(func() { Version = "" })
	if v := version(); v != "v9.9.9" {
		t.Errorf("version() = %q, want Version, set with -X", v)
	}
}
