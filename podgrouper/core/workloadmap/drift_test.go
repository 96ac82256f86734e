package workloadmap

import (
	"context"
	"os"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
)

// The path the broken definitions below misspell: the JobSet catalog definition's pod template
// path with "replicatedJob" for "replicatedJobs".
const (
	templatePath    = "spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath"
	misspeltExpr    = ".spec.replicatedJob[]?.template.spec.template"
	catalogJobSet   = "../../../definitions/catalog/jobset-x-k8s-io-jobset-v1alpha2.yaml"
	brokenKartaName = "team-jobset"
)

// brokenKarta is the catalog JobSet definition renamed and with its podTemplateSpecPath
// misspelt, as a Karta object of the cluster (uid, resourceVersion).
func brokenKarta(t *testing.T, rv string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(catalogJobSet)
	require.NoError(t, err)
	s := strings.Replace(string(b), "name: jobset-x-k8s-io-jobset-v1alpha2", "name: "+brokenKartaName, 1)
	s = strings.Replace(s, "podTemplateSpecPath: .spec.replicatedJobs[]?.template.spec.template", "podTemplateSpecPath: "+misspeltExpr, 1)
	require.Contains(t, s, misspeltExpr)
	js, err := yaml.YAMLToJSON([]byte(s))
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(js))
	u.SetUID("karta-uid")
	u.SetResourceVersion(rv)
	return u
}

func brokenGrouper(t *testing.T, src definitions.Source) (*Grouper, *record.FakeRecorder) {
	t.Helper()
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	reg := definitions.NewRegistry(c)
	l, err := definitions.FromUnstructured(brokenKarta(t, "5"))
	require.NoError(t, err)
	l.Source = src
	reg.SetSource(src, []*definitions.Loaded{l})
	require.Empty(t, reg.Problems())
	rec := record.NewFakeRecorder(10)
	return &Grouper{Registry: reg, Recorder: rec}, rec
}

// TestNoTemplateNeverMakesAPodGroup: a definition whose pod template path resolves to nothing
// on the seed JobSet (gang/testdata/jobset-leader-workers.yaml: leader 1 pod, workers 2 pods)
// plans both roles at 0 pods, so no PodGroup at all, and the grouper gives no gang for the
// seed's pods (Seen.NotInPlan says why), never a PodGroup with a made-up size. The miss is counted
// once per plan build, not per pod, and reported once on the Karta.
func TestNoTemplateNeverMakesAPodGroup(t *testing.T) {
	g, rec := brokenGrouper(t, definitions.SourceCluster)
	js := workload(t, "jobset-leader-workers.yaml", nil)
	before := misses(t)

	plan, _, err := g.Plan(context.Background(), js)
	require.NoError(t, err)
	assert.Empty(t, plan.PodGroups, "no role has a pod template: nothing to group")
	for _, r := range plan.Roles {
		assert.Zero(t, r.Pods, "role %s: counted as 0 pods rather than guessed", r.Name)
		assert.Zero(t, r.GangPods, r.Name)
	}
	for _, name := range []string{"leader", "workers", "workers"} {
		md, seen, err := g.GroupPod(context.Background(), js, pod("p-"+name, map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": name}))
		require.NoError(t, err, "a pod outside the plan is not an error to retry")
		require.Error(t, seen.NotInPlan, "the pod is reported outside the plan")
		assert.Contains(t, seen.NotInPlan.Error(), "has 0 pods in the plan, but a pod of it exists")
		assert.Nil(t, md, "no gang: the workload is not marked, so KAI's pod-grouper groups the pod")
	}
	// One plan build (the three pods hit the cached plan): one increment.
	assert.Equal(t, before+1, misses(t))
	require.Len(t, rec.Events, 1)
	ev := <-rec.Events
	assert.Contains(t, ev, "Warning "+ReasonPathMiss+" "+templatePath+" ("+misspeltExpr+") resolved to nothing on JobSet bench/train-llm")

	// A new workload version rebuilds the plan: counted again, reported again for it (the
	// Event is once per definition version, workload and path: a different workload UID here).
	js2 := workload(t, "jobset-leader-workers.yaml", func(u *unstructured.Unstructured) { u.SetUID("other-uid") })
	_, _, err = g.Plan(context.Background(), js2)
	require.NoError(t, err)
	assert.Equal(t, before+2, misses(t))
	assert.Len(t, rec.Events, 1)
	// The same workload at a new resourceVersion: counted, but no repeated Event.
	<-rec.Events
	js3 := workload(t, "jobset-leader-workers.yaml", func(u *unstructured.Unstructured) { u.SetResourceVersion("2") })
	_, _, err = g.Plan(context.Background(), js3)
	require.NoError(t, err)
	assert.Equal(t, before+3, misses(t))
	assert.Empty(t, rec.Events)
}

// A definition file (not a cluster Karta) has no object to put an Event on: only the metric.
func TestPathMissOfAFileDefinitionIsCountedWithoutEvent(t *testing.T) {
	g, rec := brokenGrouper(t, definitions.SourceFile)
	before := misses(t)
	_, _, err := g.Plan(context.Background(), workload(t, "jobset-leader-workers.yaml", func(u *unstructured.Unstructured) { u.SetUID("file-uid") }))
	require.NoError(t, err)
	assert.Equal(t, before+1, misses(t))
	assert.Empty(t, rec.Events)
}

// TestPathMissesReadsGangNotes parses the notes gang.Build writes (so a change of their format
// breaks this test, not the metric silently), and a healthy catalog plan has none.
func TestPathMissesReadsGangNotes(t *testing.T) {
	g, _ := brokenGrouper(t, definitions.SourceFile)
	plan, _, err := g.Plan(context.Background(), workload(t, "jobset-leader-workers.yaml", func(u *unstructured.Unstructured) { u.SetUID("parse-uid") }))
	require.NoError(t, err)
	assert.Equal(t, []definitions.PathMiss{{Path: templatePath, Expression: misspeltExpr}}, plan.Misses)

	healthy, _, err := newGrouper(t).Plan(context.Background(), workload(t, "jobset-leader-workers.yaml", nil))
	require.NoError(t, err)
	assert.Empty(t, healthy.Misses)
	assert.Empty(t, (&gang.Plan{Notes: []string{"role x: no pod template resolved; counted as 0 pods rather than guessed"}}).Misses)
}

// misses is the current value of PathMissesTotal for the broken definition's template path.
func misses(t *testing.T) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, PathMissesTotal.WithLabelValues(brokenKartaName, templatePath).Write(&m))
	return m.GetCounter().GetValue()
}
