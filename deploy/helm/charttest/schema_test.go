package charttest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/podgrouper/core/kairelease"
)

// helmResult runs hack/helm.sh like runHelm but returns a failure instead of failing the test.
func helmResult(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	runHelm(t, "version", "--short") // builds helm once, failing the test if it cannot
	cmd := exec.Command("bash", append([]string{filepath.Join(moduleRoot(t), "hack", "helm.sh")}, args...)...)
	cmd.Dir = moduleRoot(t)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// values.schema.json types every value with additionalProperties false: a misspelt key, a value
// of the wrong type or an unknown KAI release form fails helm template (as it fails helm install
// and upgrade); the documented forms pass.
func TestValuesSchemaRefusesTypos(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want string // "" when rendering must succeed
	}{
		{"top-level typo", []string{"replica=2"}, "additional properties 'replica' not allowed"},
		{"nested typo", []string{"webhook.failurPolicy=Fail"}, "additional properties 'failurPolicy' not allowed"},
		{"grafana typo", []string{"grafanaDashboard.enable=true"}, "additional properties 'enable' not allowed"},
		{"wrong type", []string{"replicas=two"}, "replicas"},
		{"bad enum", []string{"webhook.failurePolicy=Sometimes"}, "failurePolicy"},
		{"bad duration", []string{"definitionsPoll=ten"}, "definitionsPoll"},
		{"bad KAI version", []string{"kaiVersion=latest"}, "kaiVersion"},
		{"bad native kind", []string{"nativeKinds.remove[0]=JobSet"}, "nativeKinds"},
		{"KAI line", []string{"kaiVersion=v0.12"}, ""},
		{"KAI tag", []string{"kaiVersion=v0.14.7"}, ""},
		{"newer KAI", []string{"kaiVersion=v0.19.0"}, ""},
		{"KAI older than v0.9", []string{"kaiVersion=v0.8"}, "kaiVersion"},
		{"retracted KAI tag", []string{"kaiVersion=v0.20.1"}, "kaiVersion"},
		{"workload metrics off", []string{"maxWorkloadMetrics=0"}, ""},
		{"plan cache 0", []string{"planCacheSize=0"}, "planCacheSize"},
		// releaseStartupPages (--release-startup-pages) was removed in session 9 (issue 32): the
		// schema refuses it as any unknown value, naming it.
		{"removed start pages value", []string{"releaseStartupPages=false"}, "releaseStartupPages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", releaseName, chartDir(t), "--namespace", namespace}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			_, stderr, err := helmResult(t, args...)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("helm template --set %v failed: %v\n%s", tc.set, err, stderr)
			case tc.want != "" && err == nil:
				t.Errorf("helm template --set %v succeeded, want a schema error naming %q", tc.set, tc.want)
			case tc.want != "" && (!strings.Contains(stderr, "values don't meet the specifications of the schema") || !strings.Contains(stderr, tc.want)):
				t.Errorf("helm template --set %v: want a schema error naming %q, got:\n%s", tc.set, tc.want, stderr)
			}
		})
	}
}

// The schema lists the known KAI release lines, exactly kairelease.Known(), and every key of
// values.yaml is in the schema (and the other way round), so neither drifts from the other.
func TestValuesSchemaMatchesValuesAndReleases(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir(t), "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		AdditionalProperties *bool `json:"additionalProperties"`
		Properties           map[string]struct {
			AnyOf []struct {
				Enum []string `json:"enum"`
			} `json:"anyOf"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	if schema.AdditionalProperties == nil || *schema.AdditionalProperties {
		t.Error("values.schema.json: additionalProperties must be false at the top")
	}
	kv := schema.Properties["kaiVersion"]
	if len(kv.AnyOf) == 0 || !slices.Equal(kv.AnyOf[0].Enum, kairelease.Known()) {
		t.Errorf("kaiVersion's first anyOf enum = %v, want the known releases %v", kv.AnyOf, kairelease.Known())
	}
	raw := map[string]any{}
	vb, err := os.ReadFile(filepath.Join(chartDir(t), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(vb, &raw); err != nil {
		t.Fatal(err)
	}
	for k := range raw {
		if _, ok := schema.Properties[k]; !ok {
			t.Errorf("values.yaml key %s is not in values.schema.json", k)
		}
	}
	for k := range schema.Properties {
		if _, ok := raw[k]; !ok && k != "global" {
			t.Errorf("values.schema.json property %s is not in values.yaml", k)
		}
	}
}

// TestValuesSchemaKAIVersionAsTheGrouper: every kaiVersion the schema accepts is one the grouper's
// --kai-version accepts (kairelease.Parse), so a value helm installs never crash-loops the
// grouper at start ("older than v0.9", "no v0.11 release", a retracted v0.20.0/v0.20.1); and every
// line and tag form the grouper knows renders.
func TestValuesSchemaKAIVersionAsTheGrouper(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir(t), "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties map[string]struct {
			AnyOf []struct {
				Enum    []string `json:"enum"`
				Pattern string   `json:"pattern"`
			} `json:"anyOf"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	var enum []string
	var patterns []*regexp.Regexp
	for _, a := range schema.Properties["kaiVersion"].AnyOf {
		enum = append(enum, a.Enum...)
		if a.Pattern != "" {
			patterns = append(patterns, regexp.MustCompile(a.Pattern))
		}
	}
	accepts := func(v string) bool {
		if slices.Contains(enum, v) {
			return true
		}
		for _, p := range patterns {
			if p.MatchString(v) {
				return true
			}
		}
		return false
	}
	for _, v := range []string{
		"v0.0", "v0.5.1", "0.8", "v0.8.9", "v0.9", "v0.9.0", "v0.9.20", "v0.10", "v0.10.5", "0.10.5",
		"v0.11", "v0.11.0", "v0.12.0-rc1", "v0.14.7", "v0.17", "v0.17.0", "v0.19.0", "v0.20",
		"v0.20.0", "v0.20.1", "v0.20.2", "v0.21.0", "v0.99", "v0.100.1", "v1.0", "v1.2.3-beta.1", "v10.0.0",
	} {
		_, perr := kairelease.Parse(v)
		if got, want := accepts(v), perr == nil; got != want {
			t.Errorf("kaiVersion %q: schema accepts %v, grouper accepts %v (%v)", v, got, want, perr)
		}
	}
}

// renderNotes renders templates/NOTES.txt with the --set values as helm install prints it, without
// a cluster: a copy of the chart gets a template that renders NOTES.txt through tpl.
func renderNotes(t *testing.T, sets ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "gangmap")
	if err := os.CopyFS(dir, os.DirFS(chartDir(t))); err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(filepath.Join(dir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "files", "notes-under-test.txt"), notes, 0o644); err != nil {
		t.Fatal(err)
	}
	tpl := "notes: |\n{{ tpl (.Files.Get \"files/notes-under-test.txt\") . | indent 2 }}\n"
	if err := os.WriteFile(filepath.Join(dir, "templates", "zz-notes-under-test.yaml"), []byte(tpl), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"template", releaseName, dir, "--namespace", namespace, "--show-only", "templates/zz-notes-under-test.yaml"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out, stderr, err := helmResult(t, args...)
	if err != nil {
		t.Fatalf("rendering NOTES.txt: %v\n%s", err, stderr)
	}
	return out
}

// NOTES.txt says what was installed, how to check the grouper is ready and how to try a
// definition in shadow mode; on a KAI before v0.15 it says what that release costs.
func TestNotes(t *testing.T) {
	notes := renderNotes(t, "grafanaDashboard.enabled=true")
	for _, want := range []string{
		"is installed in namespace gangmap-system as release gangmap",
		"KAI v0.17, scheduler kai-scheduler",
		"MutatingWebhookConfiguration gangmap (Pod CREATE, failurePolicy Ignore, certificate: selfSigned)",
		"Grafana dashboard ConfigMap gangmap-dashboard",
		"kubectl -n gangmap-system rollout status deployment/gangmap",
		`grep -m1 "Starting gangmap-grouper"`,
		"--set dryRun=true",
		"gangmap plan -f my-workload.yaml --definitions my-karta.yaml",
		"gangmap validate --crd my-crd.yaml my-karta.yaml",
		// kubectl apply -f of a definition with spec.gangmap fails strict decoding (issue 31 point 4).
		"gangmap karta my-karta.yaml | kubectl apply -f -",
		"extraWorkloadKinds",
		`gangmap\.io/status`,
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "kubectl apply -f my-karta.yaml\n") {
		t.Errorf("NOTES apply a definition file as it is (refused for spec.gangmap):\n%s", notes)
	}
	if strings.Contains(notes, "older than v0.15") {
		t.Errorf("NOTES for v0.17 mention an older release:\n%s", notes)
	}
	notes = renderNotes(t, "kaiVersion=v0.14.7", "dryRun=true")
	for _, want := range []string{"KAI v0.14.7 is older than v0.15", "GangmapYieldedToKAI", "SHADOW MODE"} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES for v0.14.7 lack %q:\n%s", want, notes)
		}
	}
}
