//go:build e2e_kai

package inkai_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/e2e/realkai"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestInKAISegmentsLandEachInOneRack (issue 30, e2e/realkai TestSegmentsLandEachInOneRack's
// set-up inside KAI): with gangmap-kai-podgrouper as KAI's only pod-grouper, a Volcano Job (no
// native plugin in KAI v0.17) of one task of 16 workers of 1 GPU whose pod template asks KAI's way
// for segments of 4 with a required rack (kai.scheduler/segment-size, …/segment-topology-required-
// placement, kai.scheduler/topology of a KAI Topology zone, rack) gets one PodGroup, worker
// (minSubGroup 4) over worker-0…3 (minMember 4, the rack constraint), each pod by its task-index
// (the pods as Volcano's job controller makes them); on the real KAI scheduler:
//   - before the KAI Topology exists: a TopologyNotFound Warning Event on the Job naming the
//     segments' field (the findings inside KAI, kaitopology's informer), cleared
//     (GangFindingCleared) once the Topology is created;
//   - 8 racks of one 2-GPU node (16 free GPUs): no rack holds a segment of 4 (KAI's topology
//     plugin places each segment sub-group within one rack: plugins/topology, the sub-group's
//     constraint from subgroup_info/factory.go createSubGroupInfos), so none of the 16 is bound
//     for 10 scheduling cycles;
//   - 4 more racks of two 2-GPU nodes: all 16 bound, each segment's 4 pods in one rack, 4 racks.
func TestInKAISegmentsLandEachInOneRack(t *testing.T) {
	ctx := context.Background()
	ns := "inkai-segments"
	require.NoError(t, kai.CreateNamespace(ctx, ns))
	racks := realkai.Racks{Prefix: ns, First: 0, Count: 8, NodesPerRack: 1, GPUs: 2, Labels: map[string]string{bedLabel: ns}}
	require.NoError(t, kai.CreateGPUNodes(ctx, racks.NodeSpec()))

	job := read(t, "../../../internal/kaisamples/testdata/segments/volcanojob-rack-segments.yaml", ns)
	tasks, _, _ := unstructured.NestedSlice(job.Object, "spec", "tasks")
	require.NoError(t, unstructured.SetNestedStringMap(tasks[0].(map[string]any), map[string]string{
		"kai.scheduler/topology": realkai.TopologyName, "kai.scheduler/segment-size": "4",
		"kai.scheduler/segment-topology-required-placement": realkai.RackLabel}, "template", "metadata", "annotations"))
	require.NoError(t, unstructured.SetNestedSlice(job.Object, tasks, "spec", "tasks"))
	require.NoError(t, kai.Client.Create(ctx, job))
	// The pods Volcano's job controller creates (framework.StepVolcanoJob: createJobPod's labels,
	// volcano.sh/task-index among them).
	pods, err := kai.StepVolcanoJob(ctx, ns, job.GetName())
	require.NoError(t, err)
	require.Len(t, pods, 16)

	pgs := podGroupsOf(t, ctx, ns, pods)
	require.Len(t, pgs, 1, "the Job's 16 pods are in one PodGroup")
	for name, pg := range pgs {
		assert.Equal(t, fmt.Sprintf("pg-%s-job", job.GetUID()), name)
		assert.Equal(t, "batch-volcano-sh-job-v1alpha1 (catalog)", pg.Annotations[kaikeys.Definition])
		t.Logf("PodGroup %s: %s", name, gang(pg))
		assert.Empty(t, realkai.RackSegmentsProblems(pg, "worker", 4, 4), "PodGroup %s: worker over 4 segments of 4 pods, each with the required rack", name)
	}
	for i := range pods {
		got := &corev1.Pod{}
		require.NoError(t, kai.Client.Get(ctx, client.ObjectKeyFromObject(pods[i]), got))
		assert.Equal(t, fmt.Sprintf("worker-%d", i/4), got.Labels[kaikeys.SubGroupName], "task-index %s", got.Labels[framework.LabelVolcanoTaskIndex])
	}

	// No KAI Topology of the name yet: gangmap's TopologyNotFound finding names the field (the
	// segments' constraint, once for the 4 of them) at once; KAI leaves the segments unscheduled
	// ("Requested topology … does not exist", plugins/topology job_filtering.go subSetNodesFn).
	msg := waitEvent(t, ctx, ns, job.GetName(), "TopologyNotFound", findingTimeout)
	assert.Contains(t, msg, "spec.subGroups[worker-0].topologyConstraint (and 3 more sub-group(s) with the same constraint).topology names Topology \""+realkai.TopologyName+"\", but no KAI Topology of that name exists")
	t.Logf("TopologyNotFound: %s", msg)
	require.NoError(t, kai.CreateTopology(ctx, realkai.TopologyName, realkai.ZoneLabel, realkai.RackLabel))
	msg = waitEvent(t, ctx, ns, job.GetName(), "GangFindingCleared", findingTimeout)
	t.Logf("cleared once the Topology exists: %s", msg)

	p, err := kai.AssertNoneBound(ctx, ns, labels.Everything(), holdPeriod)
	require.NoError(t, err, "16 free GPUs, 2 a rack: no rack holds a segment of 4, KAI binds none")
	assert.Len(t, p.Pending, 16)

	more := racks
	more.First, more.Count, more.NodesPerRack = 8, 4, 2
	require.NoError(t, kai.CreateGPUNodes(ctx, more.NodeSpec()))
	p, err = kai.WaitAllBound(ctx, ns, labels.Everything(), 16, admitTimeout)
	require.NoError(t, err, "4 racks of 4 GPUs: KAI binds the gang, a segment a rack\n%s", kai.Report(ctx, ns))
	placed, err := kai.SegmentsEachInOwnRack(ctx, p.Bound, client.MatchingLabels{bedLabel: ns}, 4)
	require.NoError(t, err, "four segments, each in one rack of its own (a rack holds 4 GPUs)")
	t.Logf("%v", placed)
}
