package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileManifest writes one workload per hostile kind (definitions/testdata/hostile), each with
// a 300 KB .spec.text of "a." written by its author, and returns the file.
func hostileManifest(t *testing.T) string {
	t.Helper()
	text := strings.Repeat("a.", 150_000)
	var docs []string
	for _, kind := range []string{"Regex", "Repeat", "Explode", "ErrorText", "CelGrowth"} {
		docs = append(docs, "apiVersion: hostile.gangmap.io/v1\nkind: "+kind+"\nmetadata: {name: w-"+strings.ToLower(kind)+
			", namespace: team-a}\nspec:\n  text: \""+text+"\"\n  template: {spec: {containers: [{name: c, image: x}]}}\n")
	}
	f := filepath.Join(t.TempDir(), "hostile.yaml")
	require.NoError(t, os.WriteFile(f, []byte(strings.Join(docs, "---\n")), 0o600))
	return f
}

// TestPlanHostileDefinitionsBounded: `gangmap plan` of a workload per builtin class (regex,
// repetition, explode/indices, error text, CEL string growth), each with 300 KB of its author's
// text, reports each plan's failure by the class's bound (limit exceeded, not the timeout) in a
// short message, and exits with the plan-failure code.
func TestPlanHostileDefinitionsBounded(t *testing.T) {
	doc, r := planJSON(t, ExitProblems, "-f", hostileManifest(t), "--definitions", "../../../definitions/testdata/hostile/definitions.yaml")
	require.Len(t, doc.Plans, 5, "stderr: %s", r.stderr)
	for _, p := range doc.Plans {
		t.Run(p.Workload.Kind, func(t *testing.T) {
			assert.Less(t, len(p.Error), 2048, "a short message: %.300s", p.Error)
			assert.NotContains(t, p.Error, "deadline exceeded")
			if p.Workload.Kind == "ErrorText" {
				assert.Contains(t, p.Error, "error: a.a.a.")
				return
			}
			assert.Contains(t, p.Error, "limit exceeded")
			assert.Contains(t, p.Error, "refused")
		})
	}
}
