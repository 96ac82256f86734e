package kaiplugin

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gangmap/gangmap/internal/kaisamples"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/native"
)

// subGroupLines renders a PodGroup's sub-groups as "name parent=<p> min=<n> minSubGroup=<n>
// topology=<name>/<required>/<preferred>" (fields absent when unset), and its own constraint.
func subGroupLines(pg *v2alpha2.PodGroup) []string {
	var out []string
	if tc := pg.Spec.TopologyConstraint; tc.Topology != "" {
		out = append(out, fmt.Sprintf("PodGroup topology=%s/%s/%s", tc.Topology, tc.RequiredTopologyLevel, tc.PreferredTopologyLevel))
	}
	for _, sg := range pg.Spec.SubGroups {
		l := sg.Name
		if sg.Parent != nil {
			l += " parent=" + *sg.Parent
		}
		if sg.MinMember != nil {
			l += fmt.Sprintf(" min=%d", *sg.MinMember)
		}
		if sg.MinSubGroup != nil {
			l += fmt.Sprintf(" minSubGroup=%d", *sg.MinSubGroup)
		}
		if tc := sg.TopologyConstraint; tc != nil {
			l += fmt.Sprintf(" topology=%s/%s/%s", tc.Topology, tc.RequiredTopologyLevel, tc.PreferredTopologyLevel)
		}
		out = append(out, l)
	}
	return out
}

// TestSameSegmentsEitherWay (issue 30): the segment samples (internal/kaisamples/testdata/segments: KAI
// v0.17's docs/topology/segments.md examples, PyTorchJob twice and LeaderWorkerSet in both
// subGroupPolicy types, and a Volcano Job) give, pod after pod, the same PodGroup and sub-group
// label inside KAI's pod-grouper as in the standalone grouper (compareSample), and that PodGroup is
// KAI's own segmentation of the manifest:
//   - PyTorchJob (pytorch_grouper.go buildWorkerSubGroups, getPodSegmentIndex): worker
//     (minSubGroup 4) over worker-0…3 (min 4, the rack constraint); worker index 0, 4, 8, 12 in
//     worker-0…3; the zoned example adds the workload's zone as the PodGroup's constraint
//     (the default grouper's kai.scheduler/topology keys on the top owner).
//   - LeaderWorkerSet, size 5, subGroupSize 2 (lws_grouper.go buildSubGroupsWithSegmentation,
//     getSegmentIndex (i-1)/2): LeaderWorker (handleLeaderInFirstSegment) segment-0
//     (minSubGroup 2) over leader (1) and the first segment's workers (2), segment-1 (2); workers
//     1, 2 in segment-0's worker sub-group, 3, 4 in segment-1. LeaderExcluded
//     (addExcludedLeaderSegments): leader (1), segment-0 and segment-1 (2 each).
//   - Volcano Job, no KAI plugin: the PyTorchJob shape on its task "worker" (task-index).
//
// On KAI v0.17's native table PyTorchJob and LeaderWorkerSet are KAI's (both paths leave them);
// the Volcano Job is gangmap's either way.
func TestSameSegmentsEitherWay(t *testing.T) {
	reg := sampleRegistry(t)
	all, err := kaisamples.Load(context.Background(), "../../../internal/kaisamples/testdata/segments", "team-a", reg)
	require.NoError(t, err)
	require.Len(t, all, 5)
	rack := " topology=cluster-topology/cloud.provider.com/topology-rack/"
	workerSegments := []string{"worker minSubGroup=4", "worker-0 parent=worker min=4" + rack, "worker-1 parent=worker min=4" + rack,
		"worker-2 parent=worker min=4" + rack, "worker-3 parent=worker min=4" + rack}
	want := map[string]struct {
		subGroups []string
		pods      map[string]string
	}{
		"pytorchjob-kai-docs-rack-segments.yaml": {append([]string{"master min=1"}, workerSegments...), map[string]string{
			"pytorch-tp4-master-0-0": "master", "pytorch-tp4-worker-0-0": "worker-0", "pytorch-tp4-worker-0-1": "worker-1",
			"pytorch-tp4-worker-0-2": "worker-2", "pytorch-tp4-worker-0-3": "worker-3"}},
		"pytorchjob-kai-docs-zone-and-rack.yaml": {append([]string{"PodGroup topology=cluster-topology/topology.kubernetes.io/zone/", "master min=1"}, workerSegments...), map[string]string{
			"pytorch-tp4-zoned-master-0-0": "master", "pytorch-tp4-zoned-worker-0-0": "worker-0", "pytorch-tp4-zoned-worker-0-3": "worker-3"}},
		"lws-kai-docs-leaderworker-segments.yaml": {[]string{"segment-0 minSubGroup=2" + rack, "segment-1 min=2" + rack, "leader parent=segment-0 min=1", "worker parent=segment-0 min=2"}, map[string]string{
			"lws-segmented-leader-0-0": "leader", "lws-segmented-worker-0-0": "worker", "lws-segmented-worker-0-1": "worker",
			"lws-segmented-worker-0-2": "segment-1", "lws-segmented-worker-0-3": "segment-1"}},
		"lws-kai-docs-leaderexcluded-segments.yaml": {[]string{"leader min=1", "segment-0 min=2" + rack, "segment-1 min=2" + rack}, map[string]string{
			"lws-segmented-excluded-leader-0-0": "leader", "lws-segmented-excluded-worker-0-0": "segment-0", "lws-segmented-excluded-worker-0-1": "segment-0",
			"lws-segmented-excluded-worker-0-2": "segment-1", "lws-segmented-excluded-worker-0-3": "segment-1"}},
		"volcanojob-rack-segments.yaml": {workerSegments, map[string]string{
			"segmented-worker-0-0": "worker-0", "segmented-worker-0-1": "worker-1", "segmented-worker-0-2": "worker-2", "segmented-worker-0-3": "worker-3"}},
	}
	noNatives := native.DefaultTable()
	for _, e := range noNatives.Entries() {
		require.NoError(t, noNatives.Remove(e))
	}
	for _, s := range all {
		t.Run(s.Name, func(t *testing.T) {
			w, ok := want[s.Name]
			require.True(t, ok)
			var n tally
			subGroups, pgs := compareSample(t, reg, noNatives, s, &n)
			require.Len(t, pgs, 1, "one PodGroup")
			for _, pg := range pgs {
				assert.Equal(t, w.subGroups, subGroupLines(pg))
			}
			for pod, sg := range w.pods {
				assert.Equal(t, sg, subGroups[pod], pod)
			}
			n = tally{}
			compareSample(t, reg, native.DefaultTable(), s, &n)
			if s.Workload.GetKind() == "Job" {
				assert.Equal(t, len(s.Pods), n.gangPods, "the Volcano Job is gangmap's on KAI v0.17's table")
			} else {
				assert.Equal(t, len(s.Pods), n.native, "KAI's own plugin segments %s", s.Workload.GetKind())
			}
		})
	}
}
