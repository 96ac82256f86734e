package charttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestExtraWorkloadKindsAddToTheDefaults: extraWorkloadKinds adds a kind to the default
// workloadKinds instead of replacing them (Helm replaces lists, so a user who set workloadKinds
// for one kind of their own dropped the catalog's kinds; issue 31 point 3). The ClusterRole of
// testdata/extra-workload-kinds.yaml grants every default kind and CustomJob.
func TestExtraWorkloadKindsAddToTheDefaults(t *testing.T) {
	def := render(t, "testdata/default.yaml")
	extra := render(t, "testdata/extra-workload-kinds.yaml")
	if len(extra.values.WorkloadKinds) == 0 || len(extra.values.ExtraWorkloadKinds) != 1 {
		t.Fatalf("values: %d workloadKinds, %d extraWorkloadKinds; want the defaults and one", len(extra.values.WorkloadKinds), len(extra.values.ExtraWorkloadKinds))
	}
	readable := func(r *rendering) map[string]bool {
		cr := decodeStrict[rbacv1.ClusterRole](t, r.must(t, "ClusterRole", fullname))
		out := map[string]bool{}
		for _, rule := range cr.Rules {
			if !strings.Contains(strings.Join(rule.Verbs, ","), "watch") {
				continue
			}
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					out[g+"/"+res] = true
				}
			}
		}
		return out
	}
	base, got := readable(def), readable(extra)
	for _, k := range def.values.WorkloadKinds {
		for _, res := range k.Resources {
			if !base[k.APIGroup+"/"+res] || !got[k.APIGroup+"/"+res] {
				t.Errorf("default workload kind %s/%s: granted by default %v, with extraWorkloadKinds %v", k.APIGroup, res, base[k.APIGroup+"/"+res], got[k.APIGroup+"/"+res])
			}
		}
	}
	if base["example.com/customjobs"] || !got["example.com/customjobs"] {
		t.Errorf("example.com/customjobs: granted by default %v (want false), with extraWorkloadKinds %v (want true)", base["example.com/customjobs"], got["example.com/customjobs"])
	}
}

// TestDefinitionWithoutRBACRefused: an inline definition whose root kind the grouper may not
// read makes `helm template` fail, naming the definition, the resource and the value to set
// (issue 31 point 3: it rendered without a word, and the grouper then grouped none of its pods).
// The resource is the kind's default plural (gangmap.pluralOf, as controller-gen derives it).
func TestDefinitionWithoutRBACRefused(t *testing.T) {
	runHelm(t, "version") // builds helm once
	script := filepath.Join(moduleRoot(t), "hack", "helm.sh")
	dir := t.TempDir()
	def := func(group, kind string) string {
		file := filepath.Join(dir, group+"-"+kind+".yaml")
		karta := "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: mine}\nspec:\n  structureDefinition:\n    rootComponent:\n      name: root\n      kind: {group: " + group + ", version: v1, kind: " + kind + "}\n"
		if err := os.WriteFile(file, []byte(karta), 0o600); err != nil {
			t.Fatal(err)
		}
		return "definitions.mine=" + file
	}
	for name, tc := range map[string]struct {
		set     []string
		wantErr string // "" renders
	}{
		"no rule for the kind": {set: []string{def("example.com", "CustomJob")},
			wantErr: `definitions.mine is for example.com CustomJob (resource customjobs.example.com), which the grouper may not read: add {apiGroup: "example.com", resources: [customjobs]} to extraWorkloadKinds`},
		"extraWorkloadKinds grants it": {set: []string{def("example.com", "CustomJob"), "extraWorkloadKinds[0].apiGroup=example.com", "extraWorkloadKinds[0].resources[0]=customjobs"}},
		"a default kind":               {set: []string{def("batch.volcano.sh", "Job")}},
		"plural -ies": {set: []string{def("example.com", "Policy"), "extraWorkloadKinds[0].apiGroup=example.com", "extraWorkloadKinds[0].resources[0]=policys"},
			wantErr: "(resource policies.example.com)"},
		"plural -es": {set: []string{def("example.com", "Batch"), "extraWorkloadKinds[0].apiGroup=example.com", "extraWorkloadKinds[0].resources[0]=batches"}},
		"check off":  {set: []string{def("example.com", "Mouse"), "extraWorkloadKinds[0].apiGroup=example.com", "extraWorkloadKinds[0].resources[0]=mice", "checkDefinitionRBAC=false"}},
		"workloadKinds replaced": {set: []string{def("batch.volcano.sh", "Job"), "workloadKinds[0].apiGroup=example.com", "workloadKinds[0].resources[0]=customjobs"},
			wantErr: "definitions.mine is for batch.volcano.sh Job (resource jobs.batch.volcano.sh)"},
	} {
		args := []string{"template", releaseName, chartDir(t), "--namespace", namespace}
		for _, s := range tc.set {
			flag := "--set"
			if strings.HasPrefix(s, "definitions.") {
				flag = "--set-file"
			}
			args = append(args, flag, s)
		}
		out, err := exec.Command(script, args...).CombinedOutput()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: helm template failed: %v\n%s", name, err, out)
		case tc.wantErr != "" && (err == nil || !strings.Contains(string(out), tc.wantErr)):
			t.Errorf("%s: helm template should fail with %q, got err %v:\n%s", name, tc.wantErr, err, out)
		}
	}
}
