//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
)

// TestFindingsOmittedInDescribe: a definition requiring 18 roles the operator never creates
// (extra-00 ... extra-17, one pod each, next to the coordinator and workers it does create) gives
// 18 GangUnsatisfiable findings: the grouper's health annotation lists the first 16 and counts 2,
// Events name 16 and GangFindingsMore counts 2, and "gangmap describe" says there are 18, lists
// 16 and says 2 more are not listed and why; "gangmap get" ends its FINDINGS with "+2 more";
// "gangmap definitions --cluster" counts the 2 on the definition.
func TestFindingsOmittedInDescribe(t *testing.T) {
	ctx := context.Background()
	const extras = 18
	kind := "ManyRolesJob"
	k := findingsKind(t, ctx, kind, func(k *unstructured.Unstructured) {
		cs := []map[string]any{component(t, k, "coordinator"), component(t, k, "worker")}
		sgs := []any{map[string]any{"componentName": "coordinator"}, map[string]any{"componentName": "worker"}}
		for i := range extras {
			name := fmt.Sprintf("extra-%02d", i)
			cs = append(cs, map[string]any{"name": name, "ownerRef": "customjob",
				"specDefinition":  map[string]any{"podTemplateSpecPath": ".spec.worker.template"},
				"scaleDefinition": map[string]any{"replicasPath": ".spec.coordinator.replicas"},
				"podSelector":     map[string]any{"componentTypeSelector": map[string]any{"keyPath": `.metadata.labels["e2e.example.com/role"]`, "value": name}}})
			sgs = append(sgs, map[string]any{"componentName": name})
		}
		setComponents(t, k, cs...)
		require.NoError(t, unstructured.SetNestedSlice(k.Object, sgs, "spec", "optimizationInstructions", "gangScheduling", "podGroup", "subGroups"))
	})
	job := findingsJob(t, ctx, "find-omitted", kind)
	for _, p := range []*corev1.Pod{customJobPod(t, job, "coordinator", "c-0"), customJobPod(t, job, "worker", "w-0"), customJobPod(t, job, "worker", "w-1")} {
		require.NoError(t, cp.Client.Create(ctx, p))
	}
	pgName := fmt.Sprintf("pg-%s-customjob", job.GetUID())
	_, err := cp.WaitForPodGroup(ctx, job.GetNamespace(), pgName, timeout)
	require.NoError(t, err)
	var h *findings.Health
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		h = health(t, ctx, job.GetNamespace(), pgName)
		return h != nil && len(h.Findings)+h.Omitted == extras, nil
	}), "the PodGroup's %s counts %d findings", findings.HealthAnnotation, extras)
	require.Len(t, h.Findings, findings.MaxHealthFindings)
	assert.Equal(t, extras-findings.MaxHealthFindings, h.Omitted)
	waitEvent(t, ctx, job.GetNamespace(), job.GetName(), findings.ReasonMoreFindings, "2 more finding(s) not sent as Events", 5*time.Second)

	stdout, stderr, code := runCLI(t, "describe", strings.ToLower(kind)+"."+findingsGroup+"/train", "-n", job.GetNamespace())
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "\nFindings (18, the first 16 listed; the grouper's pods against the plan;")
	assert.Contains(t, stdout, "\n  GangUnsatisfiable(extra-15): the gang requires 1 pods of the role, 0 exist")
	assert.NotContains(t, stdout, "GangUnsatisfiable(extra-16)")
	assert.Contains(t, stdout, "\n  ... and 2 more, not listed: the grouper's gangmap.io/health annotation lists a workload's first 16 findings and counts the rest;\n"+
		"  the grouper's Events name at most 16 at a time (the workload's GangFindingsMore Event counts the others);\n"+
		"  the ROLE table above shows every role's live pods (READY: ready/live) against its PODS and GANG-PODS\n")
	assert.Contains(t, stdout, "\nextra-17 ", "the ROLE table has the roles not listed")

	stdout, stderr, code = runCLI(t, "get", strings.ToLower(kind)+"."+findingsGroup, "-n", job.GetNamespace())
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "GangUnsatisfiable(extra-15), +2 more\n")

	stdout, stderr, code = runCLI(t, "definitions", "--cluster")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, k.GetName()+" (cluster:"+k.GetName()+"): findings: GangUnsatisfiable on 1 workload(s), e.g. "+kind+" find-omitted/train")
	assert.Contains(t, stdout, "findings: 2 more, not listed by reason (a workload's gangmap.io/health annotation lists its first 16), on 1 workload(s), e.g. "+kind+" find-omitted/train (gangmap describe says how many)")
}
