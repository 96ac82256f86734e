package charttest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestChartRefusesDangerousKindsAndArgs (issue 28): the chart refuses workloadKinds and
// ownerKinds that would grant the grouper cluster-wide rights on core secrets or configmaps, or
// on RBAC, admission or certificate objects, and extraArgs that would override a flag the chart
// sets for security (pflag keeps the last occurrence: an extra --enable-http2=true undid
// enableHTTP2=false), each with a message saying why and what to set instead. An ordinary kind
// and an ordinary extra flag still render.
func TestChartRefusesDangerousKindsAndArgs(t *testing.T) {
	runHelm(t, "version") // builds helm once
	for _, tc := range []struct {
		name string
		args []string // helm template flags
		want string   // "" renders
	}{
		{"core secrets", []string{"--set-json", `workloadKinds=[{"apiGroup":"","resources":["secrets"]}]`},
			"workloadKinds, extraWorkloadKinds and ownerKinds may not name core secrets: the grouper would get cluster-wide get/list/watch"},
		{"core secrets added to the defaults", []string{"--set-json", `extraWorkloadKinds=[{"apiGroup":"","resources":["secrets"]}]`},
			"may not name core secrets"},
		{"core configmaps as an owner kind", []string{"--set-json", `ownerKinds=[{"apiGroup":"","resources":["configmaps"]}]`},
			"may not name core configmaps"},
		{"a subresource of secrets", []string{"--set-json", `workloadKinds=[{"apiGroup":"","resources":["Secrets/status"]}]`},
			"may not name core secrets"},
		{"core namespaces (patch would relabel Pod Security levels)", []string{"--set-json", `extraWorkloadKinds=[{"apiGroup":"","resources":["namespaces"]}]`},
			"may not name core namespaces: cluster-wide patch on them"},
		{"core nodes", []string{"--set-json", `workloadKinds=[{"apiGroup":"","resources":["Nodes"]}]`}, "may not name core nodes"},
		{"core persistentvolumes as an owner kind", []string{"--set-json", `ownerKinds=[{"apiGroup":"","resources":["persistentvolumes"]}]`},
			"may not name core persistentvolumes"},
		{"core serviceaccounts", []string{"--set-json", `extraWorkloadKinds=[{"apiGroup":"","resources":["serviceaccounts"]}]`}, "may not name core serviceaccounts"},
		{"a subresource of pods", []string{"--set-json", `extraWorkloadKinds=[{"apiGroup":"","resources":["pods/exec"]}]`},
			"take resources, not subresources: /pods/exec"},
		{"a subresource of a workload kind", []string{"--set-json", `extraWorkloadKinds=[{"apiGroup":"example.com","resources":["trainjobs/status"]}]`},
			"take resources, not subresources: example.com/trainjobs/status"},
		{"RBAC roles", []string{"--set-json", `workloadKinds=[{"apiGroup":"rbac.authorization.k8s.io","resources":["clusterroles"]}]`},
			"may not name rbac.authorization.k8s.io/clusterroles: read and patch rights on RBAC"},
		{"admission webhooks", []string{"--set-json", `workloadKinds=[{"apiGroup":"admissionregistration.k8s.io","resources":["mutatingwebhookconfigurations"]}]`},
			"may not name admissionregistration.k8s.io/mutatingwebhookconfigurations"},
		{"KAI queues (issue 28 follow-up: patch would change every team's quota)", []string{"--set-json", `extraWorkloadKinds=[{"apiGroup":"scheduling.run.ai","resources":["queues"]}]`},
			"may not name scheduling.run.ai/queues: KAI's own objects"},
		{"two resources in one string (RBAC matches neither)", []string{"--set-json", `extraWorkloadKinds=[{"apiGroup":"example.com","resources":["trainjobs,pytorchjobs"]}]`},
			`take one resource name per list entry (lower-case letters, digits, '-', '.'): "trainjobs,pytorchjobs" in example.com matches nothing in RBAC`},
		{"a resource with a leading space", []string{"--set-json", `extraWorkloadKinds=[{"apiGroup":"","resources":[" secrets"]}]`},
			`" secrets" in  matches nothing`},
		{"HTTP/2 back on", []string{"--set", "extraArgs[0]=--enable-http2=true"},
			"extraArgs may not set --enable-http2=true: it would override the chart's own --enable-http2 flag, a security setting (HTTP/2 is off against rapid-reset floods, CVE-2023-44487); set enableHTTP2 instead"},
		{"HTTP/2 as a bare flag", []string{"--set", "extraArgs[0]=--qps=100", "--set", "extraArgs[1]=--enable-http2"},
			"extraArgs may not set --enable-http2:"},
		{"insecure metrics", []string{"--set", "extraArgs[0]=--metrics-secure=false"}, "set metrics.secure instead"},
		{"a lower TLS floor", []string{"--set", "extraArgs[0]=--tls-min-version=VersionTLS10"}, "set tlsMinVersion instead"},
		{"an ordinary kind", []string{"--set-json", `workloadKinds=[{"apiGroup":"example.com","resources":["trainjobs"]}]`}, ""},
		{"an ordinary flag", []string{"--set", "extraArgs[0]=--qps=100"}, ""},
	} {
		args := []string{"template", releaseName, chartDir(t), "--namespace", namespace}
		args = append(args, tc.args...)
		out, err := exec.Command(filepath.Join(moduleRoot(t), "hack", "helm.sh"), args...).CombinedOutput()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: helm template should render, got %v:\n%.2000s", tc.name, err, out)
			}
			continue
		}
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: helm template should fail with %q, got err %v:\n%.2000s", tc.name, tc.want, err, out)
		}
	}
}
