package workloadmetrics

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
)

// segmentPlan plans a segment sample of kaisamples (KAI's docs/topology/segments.md examples)
// with the catalog, changed by edit when it is set.
func segmentPlan(t *testing.T, file string, edit func(*unstructured.Unstructured)) *gang.Plan {
	t.Helper()
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	r := definitions.NewRegistry(c)
	require.NoError(t, catalog.Register(r))
	objs, err := manifest.ReadFile("../../../internal/kaisamples/testdata/segments/" + file)
	require.NoError(t, err)
	obj := objs[0]
	if edit != nil {
		edit(obj)
	}
	obj.SetNamespace("team-a")
	p, err := gang.Build(context.Background(), r.Lookup(obj.GroupVersionKind()), obj)
	require.NoError(t, err)
	return p
}

// Segments in the metrics (issue 30): gangmap_workload_role_segments counts a segmented role's
// segment sub-groups: the Volcano Job's 16 workers in segments of 4 are 4 (worker-0…3, KAI
// pytorch_grouper.go buildWorkerSubGroups' shape), the LWS docs example's 4 workers of subGroupSize
// 2 with the leader are 2 (segment-0, segment-1: lws_grouper.go createSegmentSubgroups); roles not
// in segments have none. gangmap_workload_topology_unresolved counts the requests the plan could
// not honour (here the segment levels without kai.scheduler/topology), only when there are some.
func TestSegmentSeries(t *testing.T) {
	tr := &Tracker{MaxWorkloads: 10}
	require.True(t, tr.SetWorkload(FromPlan(segmentPlan(t, "volcanojob-rack-segments.yaml", nil), "u1", "Job.batch.volcano.sh")))
	lws := FromPlan(segmentPlan(t, "lws-kai-docs-leaderworker-segments.yaml", nil), "u2", "LeaderWorkerSet.leaderworkerset.x-k8s.io")
	require.True(t, tr.SetWorkload(lws))
	unnamed := segmentPlan(t, "volcanojob-rack-segments.yaml", func(u *unstructured.Unstructured) {
		u.SetName("unnamed")
		tasks, _, _ := unstructured.NestedSlice(u.Object, "spec", "tasks")
		unstructured.RemoveNestedField(tasks[0].(map[string]any), "template", "metadata", "annotations", "kai.scheduler/topology")
		require.NoError(t, unstructured.SetNestedSlice(u.Object, tasks, "spec", "tasks"))
	})
	require.Len(t, unnamed.TopologyIssues, 1)
	require.True(t, tr.SetWorkload(FromPlan(unnamed, "u3", "Job.batch.volcano.sh")))
	setPod(tr, "u1", types.NamespacedName{Namespace: "team-a", Name: "segmented-worker-0"}, "worker", "Running")

	want := `
# HELP gangmap_workload_role_segments Segment sub-groups gangmap writes for one role of the workload (kai.scheduler/segment-size: ceil(pods / size), each with the segment topology constraint); only roles in segments.
# TYPE gangmap_workload_role_segments gauge
gangmap_workload_role_segments{kind="Job.batch.volcano.sh",name="segmented",namespace="team-a",role="worker"} 4
gangmap_workload_role_segments{kind="LeaderWorkerSet.leaderworkerset.x-k8s.io",name="lws-segmented",namespace="team-a",role="worker"} 2
# HELP gangmap_workload_topology_unresolved Topology and segment requests of the workload its plan could not honour (each a TopologyUnresolved finding; the PodGroup is written without them); only workloads with some.
# TYPE gangmap_workload_topology_unresolved gauge
gangmap_workload_topology_unresolved{kind="Job.batch.volcano.sh",name="unnamed",namespace="team-a"} 1
`
	assert.NoError(t, testutil.CollectAndCompare(tr, strings.NewReader(want), "gangmap_workload_role_segments", "gangmap_workload_topology_unresolved"))
	for _, r := range lws.Roles {
		if r.Name == "leader" {
			assert.Zero(t, r.Segments, "the leader joins segment-0, it is not segmented itself")
		}
	}
}
