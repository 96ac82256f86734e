package charttest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The release every test renders.
const (
	releaseName = "gangmap"
	namespace   = "gangmap-system"
	// fullname is the chart's full name for releaseName (it contains the chart name).
	fullname = "gangmap"
)

// valuesFiles are rendered and checked one by one, relative to this package's directory.
var valuesFiles = []string{
	"testdata/default.yaml",
	"testdata/ha-certmanager-servicemonitor.yaml",
	"testdata/dryrun-custom-kinds-definitions.yaml",
	"testdata/webhook-disabled.yaml",
	"testdata/onboarding.yaml",
	"testdata/extra-workload-kinds.yaml",
	// The values `make e2e-kind` installs the chart with.
	"../../../e2e/kind/testdata/gangmap-values.yaml",
}

var (
	rootOnce sync.Once
	root     string
	rootErr  error

	helmOnce sync.Once
	helmErr  error
)

// moduleRoot is the directory of gangmap's go.mod, found upwards from the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			rootErr = err
			return
		}
		for {
			b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err == nil && bytes.Contains(b, []byte("module github.com/gangmap/gangmap\n")) {
				root = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				rootErr = errors.New("no go.mod of github.com/gangmap/gangmap above the test's directory")
				return
			}
			dir = parent
		}
	})
	if rootErr != nil {
		t.Fatal(rootErr)
	}
	return root
}

func chartDir(t *testing.T) string { return filepath.Join(moduleRoot(t), "deploy", "helm", "gangmap") }

// runHelm runs hack/helm.sh with args from the module root and returns its stdout. The first call
// builds helm if it is not cached yet (about 2-3 minutes cold); a failure to build or run helm
// fails the test: the chart checks never skip.
func runHelm(t *testing.T, args ...string) []byte {
	t.Helper()
	script := filepath.Join(moduleRoot(t), "hack", "helm.sh")
	helmOnce.Do(func() {
		cmd := exec.Command("bash", script, "--path")
		cmd.Dir = root
		cmd.Stderr = os.Stderr // build progress
		if out, err := cmd.Output(); err != nil {
			helmErr = fmt.Errorf("%v (stdout: %s)", err, out)
		}
	})
	if helmErr != nil {
		t.Fatalf("helm cannot be built or run with hack/helm.sh (it needs go and the Go module proxy once): %v", helmErr)
	}
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\nstderr:\n%s\nstdout:\n%s", strings.Join(args, " "), err, stderr.String(), out)
	}
	return out
}

// kindRule is one entry of workloadKinds or ownerKinds.
type kindRule struct {
	APIGroup  string   `json:"apiGroup"`
	Resources []string `json:"resources"`
}

// labelSelector is the part of metav1.LabelSelector the values use (decoded with the meta type
// later, to keep JSON round trips exact).
type labelSelector = map[string]any

// chartValues are the values a rendering used: the chart's values.yaml merged with the file, as
// helm merges them (maps merged, everything else replaced).
type chartValues struct {
	Image struct {
		Repository string `json:"repository"`
		Tag        string `json:"tag"`
		PullPolicy string `json:"pullPolicy"`
	} `json:"image"`
	Replicas         int    `json:"replicas"`
	SchedulerName    string `json:"schedulerName"`
	KAIVersion       string `json:"kaiVersion"`
	NativeKinds      struct{ Add, Remove []string }
	QueueLabelKey    string `json:"queueLabelKey"`
	NodePoolLabelKey string `json:"nodePoolLabelKey"`
	DryRun           bool   `json:"dryRun"`
	MarkWorkloads    bool   `json:"markWorkloads"`
	StrayGrace       string `json:"strayPodGroupGrace"`
	LogLevel         string `json:"logLevel"`
	MaxConcurrent    int    `json:"maxConcurrentReconciles"`
	APIRateLimit     struct {
		QPS   float32 `json:"qps"`
		Burst int     `json:"burst"`
	} `json:"apiRateLimit"`
	ClusterDefs bool           `json:"clusterDefinitions"`
	StrictDefs  bool           `json:"strictDefinitions"`
	TopoSegs    string         `json:"topologySegments"`
	Definitions map[string]any `json:"definitions"`
	Onboarding  struct {
		Enabled bool             `json:"enabled"`
		Rules   []map[string]any `json:"rules"`
	} `json:"onboarding"`
	DefinitionsPoll string `json:"definitionsPoll"`
	Findings        struct {
		MoreThanPlannedGrace   string `json:"moreThanPlannedGrace"`
		GangUnsatisfiableGrace string `json:"gangUnsatisfiableGrace"`
		EventInterval          string `json:"eventInterval"`
	} `json:"findings"`
	WorkloadKinds []kindRule `json:"workloadKinds"`
	// ExtraWorkloadKinds are added to WorkloadKinds (the chart's gangmap.workloadKinds).
	ExtraWorkloadKinds []kindRule `json:"extraWorkloadKinds"`
	OwnerKinds         []kindRule `json:"ownerKinds"`
	InstallKartaCRD    bool       `json:"installKartaCRD"`
	LeaderElection     struct {
		Enabled   bool   `json:"enabled"`
		LeaseName string `json:"leaseName"`
	} `json:"leaderElection"`
	Metrics struct {
		Port                  int    `json:"port"`
		Secure                bool   `json:"secure"`
		CertSecret            string `json:"certSecret"`
		ReaderServiceAccounts []struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"readerServiceAccounts"`
		ServiceMonitor struct {
			Enabled   bool              `json:"enabled"`
			Labels    map[string]string `json:"labels"`
			TLSConfig map[string]any    `json:"tlsConfig"`
		} `json:"serviceMonitor"`
	} `json:"metrics"`
	TLSMinVersion string `json:"tlsMinVersion"`
	EnableHTTP2   bool   `json:"enableHTTP2"`
	NetworkPolicy struct {
		Enabled        bool             `json:"enabled"`
		APIServerPeers []map[string]any `json:"apiServerPeers"`
		MetricsPeers   []map[string]any `json:"metricsPeers"`
	} `json:"networkPolicy"`
	ProbePort int `json:"probePort"`
	Webhook   struct {
		Enabled           bool          `json:"enabled"`
		Port              int           `json:"port"`
		FailurePolicy     string        `json:"failurePolicy"`
		Strict            bool          `json:"strict"`
		TimeoutSeconds    int32         `json:"timeoutSeconds"`
		DecisionTimeout   string        `json:"decisionTimeout"`
		NamespaceSelector labelSelector `json:"namespaceSelector"`
		ObjectSelector    labelSelector `json:"objectSelector"`
		ExcludeNamespaces []string      `json:"excludeNamespaces"`
		CertManager       struct {
			Enabled   bool           `json:"enabled"`
			IssuerRef map[string]any `json:"issuerRef"`
		} `json:"certManager"`
		TLS struct {
			SecretName string `json:"secretName"`
			CABundle   string `json:"caBundle"`
		} `json:"tls"`
	} `json:"webhook"`
}

// failurePolicy is the webhook's failurePolicy the values ask for: Fail in strict mode.
func (v *chartValues) failurePolicy() string {
	if v.Webhook.Strict {
		return "Fail"
	}
	return v.Webhook.FailurePolicy
}

// leaderElect is whether the chart turns leader election on.
func (v *chartValues) leaderElect() bool { return v.Replicas > 1 || v.LeaderElection.Enabled }

// rendering is the output of `helm template` for one values file.
type rendering struct {
	file   string
	values chartValues
	objs   []*unstructured.Unstructured
}

var (
	renderMu    sync.Mutex
	renderCache = map[string]*rendering{}
)

// render returns `helm template` of the chart with the values file (cached per file).
func render(t *testing.T, file string) *rendering {
	t.Helper()
	renderMu.Lock()
	defer renderMu.Unlock()
	if r, ok := renderCache[file]; ok {
		return r
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	out := runHelm(t, "template", releaseName, chartDir(t), "--namespace", namespace, "-f", abs)
	r := &rendering{file: file, values: loadValues(t, abs), objs: splitObjects(t, out)}
	renderCache[file] = r
	return r
}

func loadValues(t *testing.T, file string) chartValues {
	t.Helper()
	read := func(p string) map[string]any {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return m
	}
	merged := mergeValues(read(filepath.Join(chartDir(t), "values.yaml")), read(file))
	b, err := yaml.Marshal(merged)
	if err != nil {
		t.Fatal(err)
	}
	var v chartValues
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("values of %s: %v", file, err)
	}
	return v
}

// mergeValues merges src into dst as helm merges a values file into the chart's values.
func mergeValues(dst, src map[string]any) map[string]any {
	for k, sv := range src {
		if sm, ok := sv.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = sv
	}
	return dst
}

func splitObjects(t *testing.T, out []byte) []*unstructured.Unstructured {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("rendered document does not parse: %v\n%s", err, doc)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs
}

// ofKind returns the rendered objects of a kind.
func (r *rendering) ofKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// find returns the rendered object of a kind and name, or nil.
func (r *rendering) find(kind, name string) *unstructured.Unstructured {
	for _, o := range r.ofKind(kind) {
		if o.GetName() == name {
			return o
		}
	}
	return nil
}

// must returns the rendered object of a kind and name, failing the test when it is missing.
func (r *rendering) must(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	o := r.find(kind, name)
	if o == nil {
		t.Fatalf("%s: no %s %q rendered", r.file, kind, name)
	}
	return o
}

// decodeStrict decodes u into a typed object, failing on any field the type does not know (a
// typo in a template).
func decodeStrict[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := yaml.UnmarshalStrict(b, out); err != nil {
		t.Fatalf("%s %s does not decode strictly: %v", u.GetKind(), u.GetName(), err)
	}
	return out
}

// forEachFile runs f as a subtest per values file.
func forEachFile(t *testing.T, f func(t *testing.T, r *rendering)) {
	for _, file := range valuesFiles {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			f(t, render(t, file))
		})
	}
}
