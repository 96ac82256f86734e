//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDefinitionsReportsDrift: `gangmap definitions` against the real control plane tries each
// active definition on the live workloads of its kind. A JobSet definition with a misspelt path
// (.spec.replicatedJob) resolves nothing there, and the listing says so, naming the path.
func TestDefinitionsReportsDrift(t *testing.T) {
	ctx := context.Background()
	ns := "drift"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	_, err := cp.ApplyFile(ctx, "testdata/jobset-leader-workers.yaml", ns)
	require.NoError(t, err)

	stdout, stderr, code := runCLI(t, "definitions", "--definitions", "testdata/jobset-typo-karta.yaml", "-o", "json")
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
	joined := strings.Join(drift, "\n")
	assert.Contains(t, joined, "drift: spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath (.spec.replicatedJob[]? | (.replicas // 1)) resolved to nothing on")
	assert.Contains(t, joined, "JobSet workloads")
}
