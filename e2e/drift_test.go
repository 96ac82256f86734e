//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDefinitionsReportsDrift: `gangmap definitions` against the real control plane tries each
// active definition on the live workloads of its kind. A JobSet definition with a misspelt count
// (.spec.replicatedJob in replicasPath) cannot plan them (definitions.UnknownCountError), and the
// listing says so for each, naming the path; one with a misspelt template path resolves nothing
// there, and the listing counts the workloads it missed on.
func TestDefinitionsReportsDrift(t *testing.T) {
	ctx := context.Background()
	ns := "drift"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	_, err := cp.ApplyFile(ctx, "testdata/jobset-leader-workers.yaml", ns)
	require.NoError(t, err)

	joined := driftLines(t, "testdata/jobset-typo-karta.yaml")
	assert.Contains(t, joined, "drift: JobSet drift/train-llm does not plan: spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath (instance \"leader\") (.spec.replicatedJob[]? | (.replicas // 1)) resolved to nothing on this workload")

	b, err := os.ReadFile("testdata/jobset-typo-karta.yaml")
	require.NoError(t, err)
	typo := strings.Replace(string(b), "replicasPath: .spec.replicatedJob[]?", "replicasPath: .spec.replicatedJobs[]?", 1)
	typo = strings.Replace(typo, "podTemplateSpecPath: .spec.replicatedJobs[]?.template.spec.template", "podTemplateSpecPath: .spec.replicatedJobs[]?.template.spec.templat", 1)
	require.NotEqual(t, string(b), typo)
	path := filepath.Join(t.TempDir(), "jobset-template-typo.yaml")
	require.NoError(t, os.WriteFile(path, []byte(typo), 0o600))
	joined = driftLines(t, path)
	assert.Contains(t, joined, "drift: spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath (.spec.replicatedJobs[]?.template.spec.templat) resolved to nothing on")
	assert.Contains(t, joined, "JobSet workloads")
}

// driftLines runs `gangmap definitions --definitions def -o json` and returns the jobset-typo
// definition's problem lines, one per line.
func driftLines(t *testing.T, def string) string {
	t.Helper()
	stdout, stderr, code := runCLI(t, "definitions", "--definitions", def, "-o", "json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	var doc struct {
		Definitions []struct {
			Name     string   `json:"name"`
			Active   bool     `json:"active"`
			Problems []string `json:"problems"`
		} `json:"definitions"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	var drift []string
	for _, d := range doc.Definitions {
		if d.Name == "jobset-typo" {
			assert.True(t, d.Active, "the file definition wins over the catalog")
			drift = d.Problems
		}
	}
	require.NotEmpty(t, drift, "the misspelt definition has drift lines")
	return strings.Join(drift, "\n")
}
