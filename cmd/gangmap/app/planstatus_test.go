package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// statusCorpus is the catalog's corpus of real status objects (definitions/catalog/tests/status:
// one case per snapshot, each expect.yaml giving the word the operator's semantics give).
const statusCorpus = catalogTests + "/status"

// TestPlanShowsTheStatusWordsDescribeShows: for every snapshot of the status corpus, "gangmap
// plan -o json" carries the status words ("status"), the same words as "describe -f -o json" and
// as expect.yaml; the plan table prints them on a Status line, as describe does.
func TestPlanShowsTheStatusWordsDescribeShows(t *testing.T) {
	cases, err := findTestCases(statusCorpus)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(cases), 20)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want struct {
				Status []string `json:"status"`
			}
			raw, err := os.ReadFile(filepath.Join(c.dir, testExpectFile))
			require.NoError(t, err)
			require.NoError(t, yaml.Unmarshal(raw, &want))
			file := filepath.Join(c.dir, testManifestFile)

			r := gangmap(t, "plan", "-f", file, "-o", "json")
			require.Equal(t, ExitOK, r.code, r.stderr)
			var plan struct {
				Plans []struct {
					Status      []string `json:"status"`
					StatusError string   `json:"statusError"`
				} `json:"plans"`
			}
			decodeOne(t, r.stdout, &plan)
			require.Len(t, plan.Plans, 1)
			assert.Equal(t, want.Status, plan.Plans[0].Status, "plan -o json")
			assert.Empty(t, plan.Plans[0].StatusError)

			d := gangmap(t, "describe", "-f", file, "-o", "json")
			require.Equal(t, ExitOK, d.code, d.stderr)
			var view struct {
				Workloads []struct {
					Status []string `json:"status"`
				} `json:"workloads"`
			}
			decodeOne(t, d.stdout, &view)
			require.Len(t, view.Workloads, 1)
			assert.Equal(t, plan.Plans[0].Status, view.Workloads[0].Status, "describe -o json shows the same words")

			table := gangmap(t, "plan", "-f", file)
			require.Equal(t, ExitOK, table.code, table.stderr)
			assert.Contains(t, table.stdout, "\nStatus: "+strings.Join(want.Status, ",")+"\nTOTAL GPUs: ")
			dt := gangmap(t, "describe", "-f", file)
			assert.Contains(t, dt.stdout, "Status: "+strings.Join(want.Status, ",")+"\n")
		})
	}
}

// TestPlanStatusErrorIsShown: a status expression that fails to evaluate gives no words; plan
// -o json says why in "statusError" (the definition field) and the table prints it.
func TestPlanStatusErrorIsShown(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/def.yaml", `apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: brokenstatus}
spec:
  structureDefinition:
    rootComponent:
      name: job
      kind: {group: e2e.example.com, version: v1, kind: BrokenStatus}
      statusDefinition:
        statusMappings:
          running:
            - byExpression: {expression: 'object.status.n / 0 > 1'}
      specDefinition: {podTemplateSpecPath: .spec.template}
`)
	writeFile(t, dir+"/w.yaml", "apiVersion: e2e.example.com/v1\nkind: BrokenStatus\nmetadata: {name: w, namespace: default}\nspec:\n  template: {spec: {containers: [{name: c, image: i}]}}\nstatus: {n: 1}\n")
	r := gangmap(t, "plan", "-f", dir+"/w.yaml", "--definitions", dir+"/def.yaml", "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var plan struct {
		Plans []struct {
			Status      []string `json:"status"`
			StatusError string   `json:"statusError"`
		} `json:"plans"`
	}
	decodeOne(t, r.stdout, &plan)
	require.Len(t, plan.Plans, 1)
	assert.Nil(t, plan.Plans[0].Status)
	assert.Contains(t, plan.Plans[0].StatusError, "statusDefinition.statusMappings.running")
	table := gangmap(t, "plan", "-f", dir+"/w.yaml", "--definitions", dir+"/def.yaml")
	assert.Contains(t, table.stdout, "\nStatus: - (statusDefinition.statusMappings.running")
}
