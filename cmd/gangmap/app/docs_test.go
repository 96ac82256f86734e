package app

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The complete example of docs/definitions.md is a definition a new admin can copy: it validates,
// and it plans the CustomJob of e2e/testdata/customjob.yaml (1 coordinator × 1 GPU, 2 workers × 2
// GPUs) as one gang of 3 pods and 5 GPUs with a sub-group per role, status initializing.
func TestDocsCompleteExample(t *testing.T) {
	b, err := os.ReadFile("../../../docs/definitions.md")
	require.NoError(t, err)
	doc := string(b)
	i := strings.Index(doc, "## A complete example")
	require.GreaterOrEqual(t, i, 0)
	start := strings.Index(doc[i:], "```yaml\n")
	require.GreaterOrEqual(t, start, 0)
	body := doc[i+start+len("```yaml\n"):]
	body = body[:strings.Index(body, "```")]
	dir := t.TempDir()
	writeFile(t, dir+"/customjob-karta.yaml", body)

	r := gangmap(t, "validate", dir+"/customjob-karta.yaml")
	require.Equal(t, ExitOK, r.code, r.stdout+r.stderr)

	r = gangmap(t, "plan", "-f", "../../../e2e/testdata/customjob.yaml", "--definitions", dir+"/customjob-karta.yaml", "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var out struct {
		Plans []struct {
			PodGroups []struct {
				MinSubGroup int `json:"minSubGroup"`
				Pods        int `json:"pods"`
				GPUs        int `json:"gpus"`
				SubGroups   []struct {
					Name      string `json:"name"`
					MinMember int    `json:"minMember"`
				} `json:"subGroups"`
			} `json:"podGroups"`
		} `json:"plans"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	require.Len(t, out.Plans, 1)
	require.Len(t, out.Plans[0].PodGroups, 1)
	pg := out.Plans[0].PodGroups[0]
	assert.Equal(t, 2, pg.MinSubGroup)
	assert.Equal(t, 3, pg.Pods)
	assert.Equal(t, 5, pg.GPUs)
	require.Len(t, pg.SubGroups, 2)
	assert.Equal(t, "coordinator", pg.SubGroups[0].Name)
	assert.Equal(t, 2, pg.SubGroups[1].MinMember)

	r = gangmap(t, "describe", "-f", "../../../e2e/testdata/customjob.yaml", "--definitions", dir+"/customjob-karta.yaml")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Status: initializing")
}
