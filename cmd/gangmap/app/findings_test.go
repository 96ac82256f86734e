package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
)

// describeWithHealth describes the seed copy's workload as get and describe do, its PodGroups
// carrying h as the grouper's gangmap.io/health annotation; it returns the view and describe's
// table output.
func describeWithHealth(t *testing.T, h findings.Health) (*workloadView, string) {
	t.Helper()
	objs, err := readManifests([]string{seedCopy})
	require.NoError(t, err)
	in, err := splitManifest(objs, io.Discard)
	require.NoError(t, err)
	reg, err := newOfflineRegistry(nil, definitions.DecodeOptions{})
	require.NoError(t, err)
	b, err := json.Marshal(h)
	require.NoError(t, err)
	annotated := 0
	for _, pg := range in.podGroups {
		if len(pg.OwnerReferences) > 0 && pg.OwnerReferences[0].UID == in.workloads[0].GetUID() {
			pg.Annotations = map[string]string{findings.HealthAnnotation: string(b)}
			annotated++
		}
	}
	require.NotZero(t, annotated, "a PodGroup of the workload carries the annotation")
	views := describeAll(context.Background(), in.graph, reg, in.workloads, in.pods, in.podGroups, true)
	require.Len(t, views, 1)
	var out strings.Builder
	printDescribe(&out, &workloadsDocument{Workloads: views})
	return views[0], out.String()
}

// findingsSection is describe's Findings section: from its title to the blank line after it.
func findingsSection(t *testing.T, out string) string {
	t.Helper()
	i := strings.Index(out, "\nFindings (")
	require.GreaterOrEqual(t, i, 0, "describe prints a Findings section:\n%s", out)
	s := out[i+1:]
	if j := strings.Index(s, "\n\n"); j >= 0 {
		s = s[:j+1]
	}
	return s
}

// unsatisfiable is the GangUnsatisfiable finding of role role-NN.
func unsatisfiable(i int) findings.Finding {
	return findings.Finding{Reason: findings.GangUnsatisfiable, Role: fmt.Sprintf("role-%02d", i), Message: "the gang requires 1 pods of the role, 0 exist"}
}

// TestDescribeFindingsOmitted: the grouper's annotation lists a workload's first 16 findings and
// counts the rest ("omitted": 884 of 900): describe says there are 900, that 884 more are not
// listed and why, that Events name at most 16 (GangFindingsMore counts the others), and points to
// the ROLE table; get's FINDINGS column ends in "+884 more"; -o json has findingsOmitted.
func TestDescribeFindingsOmitted(t *testing.T) {
	h := findings.Health{Omitted: 884, LastTransitionTime: "2026-12-01T12:00:00Z"}
	want := "Findings (900, the first 16 listed; the grouper's pods against the plan; docs/findings.md says what each means and how to fix it):\n"
	column := ""
	for i := range findings.MaxHealthFindings {
		h.Findings = append(h.Findings, unsatisfiable(i))
		want += fmt.Sprintf("  GangUnsatisfiable(role-%02d): the gang requires 1 pods of the role, 0 exist\n", i)
		column += fmt.Sprintf("GangUnsatisfiable(role-%02d), ", i)
	}
	want += "  ... and 884 more, not listed: the grouper's gangmap.io/health annotation lists a workload's first 16 findings and counts the rest;\n" +
		"  the grouper's Events name at most 16 at a time (the workload's GangFindingsMore Event counts the others);\n" +
		"  the ROLE table above shows every role's live pods (READY: ready/live) against its PODS and GANG-PODS\n"

	v, out := describeWithHealth(t, h)
	assert.Equal(t, h.Findings, v.Findings)
	assert.Equal(t, 884, v.FindingsOmitted)
	assert.Equal(t, want, findingsSection(t, out))
	assert.Contains(t, out, "\nROLE ", "the table the section points to is there")
	assert.Equal(t, column+"+884 more", v.findingsColumn())
	b, err := json.Marshal(v)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"findingsOmitted":884`)
}

// TestDescribeFindingsNoneOmitted: with "omitted" 0 (absent) the section is the findings alone,
// as before the grouper counted omitted findings, and get's column has no "more".
func TestDescribeFindingsNoneOmitted(t *testing.T) {
	h := findings.Health{Findings: []findings.Finding{unsatisfiable(0), unsatisfiable(1)}, LastTransitionTime: "2026-12-01T12:00:00Z"}
	v, out := describeWithHealth(t, h)
	assert.Zero(t, v.FindingsOmitted)
	assert.Equal(t, "Findings (2, the grouper's pods against the plan; docs/findings.md says what each means and how to fix it):\n"+
		"  GangUnsatisfiable(role-00): the gang requires 1 pods of the role, 0 exist\n"+
		"  GangUnsatisfiable(role-01): the gang requires 1 pods of the role, 0 exist\n", findingsSection(t, out))
	assert.NotContains(t, out, "not listed")
	assert.Equal(t, "GangUnsatisfiable(role-00), GangUnsatisfiable(role-01)", v.findingsColumn())
	b, err := json.Marshal(v)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "findingsOmitted")
}

// TestDescribeFindingsOmittedOdd: an annotation not as the grouper writes it (edited by hand, or
// another writer) never prints a negative count, and one that only counts still says so.
func TestDescribeFindingsOmittedOdd(t *testing.T) {
	v, out := describeWithHealth(t, findings.Health{Findings: []findings.Finding{unsatisfiable(0)}, Omitted: -3})
	assert.Zero(t, v.FindingsOmitted)
	assert.Equal(t, "Findings (1, the grouper's pods against the plan; docs/findings.md says what each means and how to fix it):\n"+
		"  GangUnsatisfiable(role-00): the gang requires 1 pods of the role, 0 exist\n", findingsSection(t, out))

	v, out = describeWithHealth(t, findings.Health{Omitted: 5})
	assert.Equal(t, "+5 more", v.findingsColumn())
	assert.Equal(t, "Findings (5, the first 0 listed; the grouper's pods against the plan; docs/findings.md says what each means and how to fix it):\n"+
		"  ... and 5 more, not listed: the grouper's gangmap.io/health annotation lists a workload's first 0 findings and counts the rest;\n"+
		"  the grouper's Events name at most 16 at a time (the workload's GangFindingsMore Event counts the others);\n"+
		"  the ROLE table above shows every role's live pods (READY: ready/live) against its PODS and GANG-PODS\n", findingsSection(t, out))
}
