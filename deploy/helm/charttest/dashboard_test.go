package charttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The dashboard decodes strictly with Grafana's own dashboard schema (the types Grafana's
// foundation SDK generates from Grafana's dashboard and panel kinds: an unknown field, a wrong
// type or a missing required field fails, panel options and field config included), and its
// structure is what the chart promises: a unique uid, every panel with a title, a datasource
// variable for its queries, and queries for workloads by kind and status, GPUs by role and
// namespace, gang findings, grouping errors and decision latency, naming only metrics gangmap
// exports.
func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "files", "gangmap-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	plugins.RegisterDefaultPlugins()
	if err := strictProblems((&dashboard.Dashboard{}).UnmarshalJSONStrict(raw)); err != nil {
		t.Fatalf("the dashboard does not decode with Grafana's dashboard schema: %v", err)
	}
	// Read it with the SDK's lenient decoder: its strict one drops panels that pass (see
	// strictProblems).
	d := &dashboard.Dashboard{}
	if err := json.Unmarshal(raw, d); err != nil {
		t.Fatal(err)
	}
	// The check is strict: a misspelt field or a wrong panel option fails it.
	for _, bad := range []string{
		strings.Replace(string(raw), `"panels"`, `"panelz"`, 1),
		strings.Replace(string(raw), `"stacking": {`, `"stackng": {`, 1),
		strings.Replace(string(raw), `"graphTooltip": 1`, `"graphTooltip": "shared"`, 1),
	} {
		if bad == string(raw) {
			t.Fatal("the negative case changed nothing")
		}
		if strictProblems((&dashboard.Dashboard{}).UnmarshalJSONStrict([]byte(bad))) == nil {
			t.Errorf("a broken dashboard decodes without error:\n%.300s", bad)
		}
	}
	if d.Uid == nil || *d.Uid != "gangmap-workloads" || d.Title == nil || *d.Title == "" {
		t.Errorf("uid %v, title %v: want uid gangmap-workloads and a title", d.Uid, d.Title)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = string(v.Type)
	}
	if vars["datasource"] != "datasource" || vars["namespace"] != "query" {
		t.Errorf("template variables %v: want datasource (datasource) and namespace (query)", vars)
	}
	var exprs []string
	ids := map[uint32]bool{}
	for _, p := range d.Panels {
		if p.Panel == nil {
			t.Errorf("a row panel: rows are not used")
			continue
		}
		pn := p.Panel
		if pn.Title == nil || *pn.Title == "" || pn.Description == nil || *pn.Description == "" {
			t.Errorf("panel %v lacks a title or description", pn.Id)
		}
		if pn.Id == nil || ids[*pn.Id] {
			t.Errorf("panel %q: missing or repeated id", *pn.Title)
		} else {
			ids[*pn.Id] = true
		}
		if pn.GridPos == nil || pn.GridPos.W < 1 || pn.GridPos.X+pn.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24 columns", *pn.Title, pn.GridPos)
		}
		b, _ := json.Marshal(pn.Targets)
		var targets []struct {
			Expr       string `json:"expr"`
			Datasource struct{ Uid string }
		}
		if err := json.Unmarshal(b, &targets); err != nil || len(targets) == 0 {
			t.Errorf("panel %q: no Prometheus targets (%v)", *pn.Title, err)
		}
		for _, tg := range targets {
			if tg.Datasource.Uid != "${datasource}" {
				t.Errorf("panel %q: target data source %q, want ${datasource}", *pn.Title, tg.Datasource.Uid)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	all := strings.Join(exprs, "\n")
	for _, want := range []string{
		"sum by (kind, status) (gangmap_workload_status",
		"sum by (namespace, role) (gangmap_workload_role_gpus",
		"gangmap_gang_findings",
		"gangmap_grouping_errors_total",
		"gangmap_decision_duration_seconds_bucket",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no panel queries %q", want)
		}
	}
	known := map[string]bool{"gangmap_gang_findings": true} // exported by the findings checks
	for _, m := range []string{"gangmap_workload_status", "gangmap_workload_info", "gangmap_workload_gpus", "gangmap_workload_gang_min_gpus",
		"gangmap_workload_role_gpus", "gangmap_workload_role_pods", "gangmap_workload_metrics_workloads", "gangmap_workload_metrics_dropped_total",
		"gangmap_grouping_errors_total", "gangmap_pods_yielded_total", "gangmap_decision_duration_seconds_bucket", "gangmap_podgroup_writes_total"} {
		known[m] = true
	}
	for _, m := range regexp.MustCompile(`gangmap_[a-z_]+`).FindAllString(all, -1) {
		if !known[m] {
			t.Errorf("a panel queries %s, which gangmap does not export", m)
		}
	}
}

// strictProblems is err unless it is the SDK's empty error list: UnmarshalJSONStrict returns its
// nil cog.BuildErrors as a non-nil error when all is well (and, for the same reason, leaves a panel
// that passes out of the decoded dashboard; its problems are still reported).
func strictProblems(err error) error {
	if be, ok := err.(cog.BuildErrors); ok && len(be) == 0 {
		return nil
	}
	return err
}

// The dashboard ConfigMap is off by default; enabled, it carries the Grafana sidecar's label and
// the dashboard JSON unchanged.
func TestGrafanaDashboardConfigMap(t *testing.T) {
	for _, obj := range render(t, "testdata/default.yaml").objs {
		if obj.GetKind() == "ConfigMap" && strings.HasSuffix(obj.GetName(), "-dashboard") {
			t.Fatalf("default values render the dashboard ConfigMap %s", obj.GetName())
		}
	}
	out, stderr, err := helmResult(t, "template", releaseName, chartDir(t), "--namespace", namespace,
		"--set", "grafanaDashboard.enabled=true", "--set", "grafanaDashboard.namespace=monitoring", "--set", "grafanaDashboard.annotations.grafana_folder=GPU")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	var cm *unstructured.Unstructured
	for _, obj := range splitObjects(t, []byte(out)) {
		if obj.GetKind() == "ConfigMap" && obj.GetName() == fullname+"-dashboard" {
			cm = obj
		}
	}
	if cm == nil {
		t.Fatal("grafanaDashboard.enabled=true renders no ConfigMap gangmap-dashboard")
	}
	if cm.GetLabels()["grafana_dashboard"] != "1" || cm.GetNamespace() != "monitoring" || cm.GetAnnotations()["grafana_folder"] != "GPU" {
		t.Errorf("ConfigMap labels %v, namespace %s, annotations %v", cm.GetLabels(), cm.GetNamespace(), cm.GetAnnotations())
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", "gangmap-workloads.json")
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "files", "gangmap-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(data) != strings.TrimSpace(string(raw)) {
		t.Error("the ConfigMap's dashboard differs from files/gangmap-dashboard.json")
	}
}
