package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gangmap/gangmap/manifest"
)

// TestOnboardThenPlan: `gangmap onboard` on the LWS docs manifest, then `gangmap plan` on its
// output: the LWS definition reads leaderTemplate and workerTemplate, and both carry
// kai-scheduler, the queue label and the extra label; the LWS itself carries the queue label.
func TestOnboardThenPlan(t *testing.T) {
	r := gangmap(t, "onboard", "-f", "testdata/manifests/lws-sglang-gpu-limits-only.yaml", "--queue", "team-a", "--label", "team=a")
	require.Equal(t, ExitOK, r.code, "stderr: %s", r.stderr)
	objs, err := manifest.Read(strings.NewReader(r.stdout), "stdout")
	require.NoError(t, err)
	require.Len(t, objs, 1)
	lws := objs[0].Object
	assert.Equal(t, "team-a", objs[0].GetLabels()["kai.scheduler/queue"])
	tpl := lws["spec"].(map[string]any)["leaderWorkerTemplate"].(map[string]any)
	for _, name := range []string{"leaderTemplate", "workerTemplate"} {
		pod := tpl[name].(map[string]any)
		assert.Equal(t, "kai-scheduler", pod["spec"].(map[string]any)["schedulerName"], name)
		labels := pod["metadata"].(map[string]any)["labels"].(map[string]any)
		assert.Equal(t, "team-a", labels["kai.scheduler/queue"], name)
		assert.Equal(t, "a", labels["team"], name)
	}
	out := filepath.Join(t.TempDir(), "lws.yaml")
	require.NoError(t, os.WriteFile(out, []byte(r.stdout), 0o600))
	doc, _ := planJSON(t, ExitOK, "-f", out)
	require.Len(t, doc.Plans, 1)
	assert.Empty(t, doc.Plans[0].Error)
}

// TestOnboardDiffAndInPlace: --diff shows only the added lines; -i writes the file, and a second
// run has nothing left to change.
func TestOnboardDiffAndInPlace(t *testing.T) {
	src, err := os.ReadFile(seed)
	require.NoError(t, err)
	f := filepath.Join(t.TempDir(), "seed.yaml")
	require.NoError(t, os.WriteFile(f, src, 0o600))

	r := gangmap(t, "onboard", "-f", f, "--queue", "team-a", "--diff")
	require.Equal(t, ExitOK, r.code, "stderr: %s", r.stderr)
	var added, removed int
	for _, l := range strings.Split(r.stdout, "\n") {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		case strings.HasPrefix(l, "+"):
			added++
		case strings.HasPrefix(l, "-"):
			removed++
		}
	}
	assert.Zero(t, removed, r.stdout)
	// labels: + queue on the JobSet (2 lines), template metadata+labels+queue for leader and workers (3 each)
	assert.Equal(t, 8, added, r.stdout)

	r = gangmap(t, "onboard", "-f", f, "--queue", "team-a", "-i")
	require.Equal(t, ExitOK, r.code, "stderr: %s", r.stderr)
	assert.Contains(t, r.stderr, "wrote "+f)
	r = gangmap(t, "onboard", "-f", f, "--queue", "team-a", "--diff")
	require.Equal(t, ExitOK, r.code)
	assert.Empty(t, r.stdout, "a second run changes nothing")
}

// TestOnboardRefusesUnwritableRoles: a definition whose template expression builds the template
// cannot be written through: exit 1, the role and the definition field named, nothing printed.
func TestOnboardRefusesUnwritableRoles(t *testing.T) {
	def := "../../../definitions/onboard/testdata/built-karta.yaml"
	m := filepath.Join(t.TempDir(), "built-job.yaml")
	src, err := os.ReadFile("../../../definitions/onboard/testdata/built-job.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(m, src, 0o600))
	r := gangmap(t, "onboard", "-f", m, "--definitions", def, "--queue", "q", "-i")
	assert.Equal(t, ExitProblems, r.code)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "component worker")
	assert.Contains(t, r.stderr, "spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath")
	assert.Contains(t, r.stderr, "nothing written")
	after, err := os.ReadFile(m)
	require.NoError(t, err)
	assert.NotContains(t, string(after), "kai-scheduler")
}

// TestOnboardBadFlags: bad label and queue values are usage errors.
func TestOnboardBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--label", "no-equals"},
		{"--queue", "not a label value"},
		{"--scheduler-name", ""},
		{"-i", "--diff", "--queue", "q"},
		// KAI's grouping keys: set on every pod template they would put every pod in one PodGroup,
		// or (the skip annotation) hide pods nobody groups from KAI's pod-grouper
		{"--annotation", "kai.scheduler/skip-podgrouper=true"},
		{"--annotation", "pod-group-name=pg-other"},
		{"--label", "kai.scheduler/subgroup-name=leader"},
	} {
		r := gangmap(t, append([]string{"onboard", "-f", seed}, args...)...)
		assert.Equal(t, ExitUnusable, r.code, "%v: %s", args, r.stderr)
	}
}

// TestOnboardSaysWhereTheOperatorHasNoField: Kubeflow Trainer offers no TrainJob field for its
// pods' scheduler name (kubeflow/trainer pkg/apis/trainer/v1alpha1/trainjob_types.go: no pod
// override type names one), and the NIM operator gives a multi-node NIMService's worker pods none
// (k8s-nim-operator manifests/lws.yaml): `gangmap onboard` exits 1, prints nothing, names each
// such role and why, and points to the grouper's onboarding policy. A single-node NIMService is
// onboarded through spec.schedulerName, which `plan` reads back.
func TestOnboardSaysWhereTheOperatorHasNoField(t *testing.T) {
	for _, tc := range []struct{ manifest, role string }{
		{"trainjob-flux-resourcespernode-gpu.yaml", "component node, training node pods: the operator has no field in the workload for their schedulerName"},
		{"nimservice-multinode-deepseek-pp2.yaml", "component nimservice, multi-node worker pods: the operator has no field in the workload for their schedulerName"},
	} {
		r := gangmap(t, "onboard", "-f", "../../../definitions/catalog/testdata/"+tc.manifest, "--queue", "team-a")
		assert.Equal(t, ExitProblems, r.code, tc.manifest)
		assert.Empty(t, r.stdout, tc.manifest)
		assert.Contains(t, r.stderr, tc.role, tc.manifest)
		assert.Contains(t, r.stderr, "Onboard them with the grouper's onboarding policy instead", tc.manifest)
		assert.Contains(t, r.stderr, "nothing written", tc.manifest)
	}

	r := gangmap(t, "onboard", "-f", "../../../definitions/catalog/testdata/nimservice-hpa-min1-max2.yaml", "--queue", "team-a")
	require.Equal(t, ExitOK, r.code, "stderr: %s", r.stderr)
	objs, err := manifest.Read(strings.NewReader(r.stdout), "stdout")
	require.NoError(t, err)
	require.Len(t, objs, 1)
	spec := objs[0].Object["spec"].(map[string]any)
	assert.Equal(t, "kai-scheduler", spec["schedulerName"])
	assert.Equal(t, "team-a", spec["labels"].(map[string]any)["kai.scheduler/queue"])
}
