//go:build e2e_kai

package realkai_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/e2e/realkai"
)

// segmentedJobSet is a JobSet of one replicated job: one Indexed Job of 16 pods of 1 GPU, whose
// pod template asks KAI's way for segments of 4 pods each placed in one rack
// (docs/topology/segments.md annotations). KAI v0.17's own JobSet plugin reads no segment key;
// gangmap's catalog JobSet definition places each pod by its completion index.
const segmentedJobSet = `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: segmented
spec:
  replicatedJobs:
  - name: workers
    replicas: 1
    template:
      spec:
        parallelism: 16
        completions: 16
        template:
          metadata:
            annotations:
              kai.scheduler/topology: ` + realkai.TopologyName + `
              kai.scheduler/segment-size: "4"
              kai.scheduler/segment-topology-required-placement: ` + realkai.RackLabel + `
          spec:
            containers:
            - name: main
              resources:
                limits: {nvidia.com/gpu: 1}
`

// TestSegmentsLandEachInOneRack (issue 30): a 16-pod gang in segments of 4 with a required rack
// level, on the real KAI scheduler with a KAI Topology (zone, rack) over kwok nodes labelled by
// zone and rack.
//   - Before the Topology exists: the grouper's TopologyNotFound Warning Event on the JobSet
//     (podgrouper/runtime/kaitopology's informer), cleared (GangFindingCleared) once it is created.
//   - 8 racks of one 2-GPU node (16 free GPUs, 2 zones): no rack has room for a segment of 4, so
//     KAI binds none of the 16 pods for 10 scheduling cycles. KAI's topology plugin places each
//     segment sub-group (a PodSet with a required level) within one domain of that level
//     (pkg/scheduler/plugins/topology: the job's sub-groups' constraints,
//     subgroup_info/factory.go createSubGroupInfos gives each its TopologyConstraintInfo), and the
//     gang's statement is committed only whole (actions/common/allocate.go).
//   - 4 more racks of two 2-GPU nodes (4 GPUs a rack): KAI binds all 16, and the 4 pods of each
//     segment (kai.scheduler/subgroup-name workers-<i>) share one rack, each a new one.
//   - Control: the same JobSet without the segment annotations, on its own 8 racks of one 2-GPU
//     node, is admitted whole: the hold above is the rack constraint's, not the cluster's.
//
// findingTimeout bounds the wait for a finding's Event: the grouper's reporter evaluates every
// 2 s (findings.Reporter.Interval) and the topology findings are reported at once.
const findingTimeout = 30 * time.Second

func TestSegmentsLandEachInOneRack(t *testing.T) {
	ctx := context.Background()
	segmentsTest(t, ctx, "topology-control", false)
	segmentsTest(t, ctx, "topology", true)
}

func segmentsTest(t *testing.T, ctx context.Context, ns string, segmented bool) {
	require.NoError(t, kai.CreateNamespace(ctx, ns))
	b := &bed{ns: ns}
	addRacks := func(first, racks, nodesPerRack int) {
		spec := realkai.Racks{Prefix: ns, First: first, Count: racks, NodesPerRack: nodesPerRack, GPUs: 2, Labels: map[string]string{benchLabel: ns}}.NodeSpec()
		require.NoError(t, kai.CreateGPUNodes(ctx, spec))
	}
	addRacks(0, 8, 1)

	js := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(segmentedJobSet), &js.Object))
	b.pin(js)
	if !segmented {
		rjs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
		unstructured.RemoveNestedField(rjs[0].(map[string]any), "template", "spec", "template", "metadata")
		require.NoError(t, unstructured.SetNestedSlice(js.Object, rjs, "spec", "replicatedJobs"))
		require.NoError(t, kai.Client.Create(ctx, js))
		_, err := kai.RunJobSet(ctx, js)
		require.NoError(t, err)
		p, err := kai.WaitAllBound(ctx, ns, labels.Everything(), 16, admitTimeout)
		require.NoError(t, err, "control: 16 pods of 1 GPU on 8 nodes of 2 GPUs, no rack constraint\n%s", kai.Report(ctx, ns))
		t.Logf("control without segments: %d pods bound on 8 racks of 2 GPUs", len(p.Bound))
		return
	}
	require.NoError(t, kai.Client.Create(ctx, js))
	pods, err := kai.RunJobSet(ctx, js)
	require.NoError(t, err)
	require.Len(t, pods, 16)
	pgs := waitGrouped(t, ctx, pods)
	require.Len(t, pgs, 1, "the JobSet's 16 pods are in one PodGroup")
	for _, pg := range pgs {
		t.Logf("PodGroup %s: %s", pg.Name, describe(pg))
		assert.Empty(t, realkai.RackSegmentsProblems(pg, "workers", 4, 4), "PodGroup %s: workers over 4 segments of 4 pods, each with the required rack", pg.Name)
	}

	// No KAI Topology of the name yet: the grouper's TopologyNotFound finding (a Warning Event on
	// the JobSet naming the segments' field), cleared once the Topology is created.
	msg, err := kai.WaitEvent(ctx, ns, js.GetName(), "TopologyNotFound", findingTimeout)
	require.NoError(t, err, "a TopologyNotFound Event on the JobSet\n%s", kai.Report(ctx, ns))
	assert.Contains(t, msg, "spec.subGroups[workers-0].topologyConstraint (and 3 more sub-group(s) with the same constraint).topology names Topology \""+realkai.TopologyName+"\", but no KAI Topology of that name exists")
	t.Logf("TopologyNotFound: %s", msg)
	require.NoError(t, kai.CreateTopology(ctx, realkai.TopologyName, realkai.ZoneLabel, realkai.RackLabel))
	msg, err = kai.WaitEvent(ctx, ns, js.GetName(), "GangFindingCleared", findingTimeout)
	require.NoError(t, err, "the finding clears once the Topology exists\n%s", kai.Report(ctx, ns))
	t.Logf("cleared: %s", msg)

	p, err := kai.AssertNoneBound(ctx, ns, labels.Everything(), holdPeriod)
	require.NoError(t, err, "16 free GPUs, 2 a rack: no rack holds a segment of 4, KAI binds none")
	assert.Len(t, p.Pending, 16)
	t.Logf("KAI scheduler while no rack has room: %v", kai.Scheduler.Grep(3, ns))

	addRacks(8, 4, 2)
	p, err = kai.WaitAllBound(ctx, ns, labels.Everything(), 16, admitTimeout)
	require.NoError(t, err, "4 racks of 4 GPUs: KAI binds the gang, a segment a rack\n%s", kai.Report(ctx, ns))
	placed, err := kai.SegmentsEachInOwnRack(ctx, p.Bound, client.MatchingLabels{benchLabel: ns}, 4)
	require.NoError(t, err, "four segments, each in one rack of its own (a rack holds 4 GPUs)")
	t.Logf("%v", placed)
}
