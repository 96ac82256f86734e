package catalog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
)

// Segments (issue 30) on KAI v0.17's own docs examples (docs/topology/segments.md) planned by the
// catalog's definitions of those kinds: every expected sub-group is what KAI's native plugin writes
// for the same manifest, read from its code (cited per case), so a definition gives the same
// segments KAI's PyTorchJob and LeaderWorkerSet plugins give.

// sgWant is one expected sub-group: name, parent ("" for none), minMember and minSubGroup (-1 for
// unset), and the topology constraint as "<topology>/<required>/<preferred>" ("" for none).
type sgWant struct {
	name, parent       string
	minMember, minSubG int32
	topology           string
}

func subGroupsOf(pg *gang.PodGroup) []sgWant {
	var out []sgWant
	for _, sg := range pg.SubGroups {
		w := sgWant{name: sg.Name, minMember: -1, minSubG: -1}
		if sg.Parent != nil {
			w.parent = *sg.Parent
		}
		if sg.MinMember != nil {
			w.minMember = *sg.MinMember
		}
		if sg.MinSubGroup != nil {
			w.minSubG = *sg.MinSubGroup
		}
		if t := sg.Topology; t != nil {
			w.topology = t.TopologyName + "/" + t.RequiredTopologyLevel + "/" + t.PreferredTopologyLevel
		}
		out = append(out, w)
	}
	return out
}

// planManifest plans a manifest given as YAML with the catalog.
func planManifest(t *testing.T, manifest string) (*gang.Plan, *unstructured.Unstructured) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(manifest), &obj.Object))
	obj.SetNamespace("default")
	c := catalogRegistry(t).Lookup(obj.GroupVersionKind())
	require.NotNil(t, c, obj.GroupVersionKind().String())
	p, err := gang.Build(context.Background(), c, obj)
	require.NoError(t, err)
	return p, obj
}

// subGroupOfPod is the sub-group name (the kai.scheduler/subgroup-name label) of a pod with the
// given labels and annotations in the plan of obj.
func subGroupOfPod(t *testing.T, p *gang.Plan, obj *unstructured.Unstructured, labels, annotations map[string]string) string {
	t.Helper()
	c := catalogRegistry(t).Lookup(obj.GroupVersionKind())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "default", Labels: labels, Annotations: annotations}}
	podMap, err := expr.FromObject(pod)
	require.NoError(t, err)
	pl, err := c.PlacePod(context.Background(), podMap)
	require.NoError(t, err)
	a, err := p.Assign(pl)
	require.NoError(t, err, "%v", labels)
	require.NotNil(t, a.SubGroup, "%v", labels)
	return a.SubGroup.Name
}

const kaiDocsPyTorchRack = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: pytorch-tp4
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: pytorch/pytorch:latest
    Worker:
      replicas: 16
      template:
        metadata:
          annotations:
            kai.scheduler/topology: "cluster-topology"
            kai.scheduler/segment-size: "4"
            kai.scheduler/segment-topology-required-placement: "cloud.provider.com/topology-rack"
        spec:
          containers:
            - name: pytorch
              image: pytorch/pytorch:latest
`

const kaiDocsPyTorchZoned = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: pytorch-tp4-zoned
  annotations:
    kai.scheduler/topology: "cluster-topology"
    kai.scheduler/topology-required-placement: "topology.kubernetes.io/zone"
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: pytorch/pytorch:latest
    Worker:
      replicas: 16
      template:
        metadata:
          annotations:
            kai.scheduler/segment-size: "4"
            kai.scheduler/segment-topology-required-placement: "cloud.provider.com/topology-rack"
        spec:
          containers:
            - name: pytorch
              image: pytorch/pytorch:latest
`

// TestSegmentsKAIDocsPyTorchJob: KAI's pytorch_grouper.go buildSubGroups writes master (minMember
// = master replicas) and, for a segmented Worker (buildWorkerSubGroups), a parent "worker" with
// minSubGroup = the number of segments and leaves worker-<i> (parent worker, minMember = segment
// size, the segment constraint from getSegmentTopologyConstraints: the topology from the pod, the
// Worker template, then the job's annotation; the levels from the pod and the Worker template);
// a worker pod of replica-index i joins worker-<i/4> (getPodSegmentIndex). The zoned example's
// PodGroup constraint is the job's annotations (default_grouper.go GetPodGroupMetadata).
func TestSegmentsKAIDocsPyTorchJob(t *testing.T) {
	rack := "cluster-topology/cloud.provider.com/topology-rack/"
	want := []sgWant{{name: "master", minMember: 1, minSubG: -1}, {name: "worker", minMember: -1, minSubG: 4}}
	for i := range 4 {
		want = append(want, sgWant{name: fmt.Sprintf("worker-%d", i), parent: "worker", minMember: 4, minSubG: -1, topology: rack})
	}
	for name, manifest := range map[string]string{"rack": kaiDocsPyTorchRack, "zoned": kaiDocsPyTorchZoned} {
		t.Run(name, func(t *testing.T) {
			p, obj := planManifest(t, manifest)
			require.Len(t, p.PodGroups, 1)
			pg := p.PodGroups[0]
			assert.Equal(t, want, subGroupsOf(pg))
			assert.Empty(t, p.TopologyIssues)
			require.NotNil(t, pg.MinSubGroup)
			assert.Equal(t, int32(2), *pg.MinSubGroup, "master and worker, as KAI's minMember 17 requires every pod")
			if name == "zoned" {
				require.NotNil(t, pg.Topology)
				assert.Equal(t, "cluster-topology", pg.Topology.TopologyName)
				assert.Equal(t, "topology.kubernetes.io/zone", pg.Topology.RequiredTopologyLevel)
			} else {
				assert.Nil(t, pg.Topology)
			}
			for _, c := range []struct {
				typ, index, want string
			}{{"master", "0", "master"}, {"worker", "0", "worker-0"}, {"worker", "3", "worker-0"}, {"worker", "4", "worker-1"}, {"worker", "15", "worker-3"}} {
				got := subGroupOfPod(t, p, obj, map[string]string{"training.kubeflow.org/replica-type": c.typ, "training.kubeflow.org/replica-index": c.index}, nil)
				assert.Equal(t, c.want, got, "%s %s", c.typ, c.index)
			}
		})
	}
}

// TestSegmentsPyTorchElasticAndPartial: KAI's buildWorkerSubGroups makes the segments past the
// workers' minimum elastic (minMember 0) and the last one partial; 20 workers, minimum 12, size 4
// is the docs' Elasticity example (segments 0-2 minMember 4, 3-4 minMember 0); 18 workers of size
// 4 end with a segment of 2.
func TestSegmentsPyTorchElasticAndPartial(t *testing.T) {
	elastic := strings.Replace(strings.Replace(kaiDocsPyTorchRack, "replicas: 16", "replicas: 20", 1),
		"  pytorchReplicaSpecs:", "  runPolicy:\n    schedulingPolicy:\n      minAvailable: 13\n  pytorchReplicaSpecs:", 1)
	p, _ := planManifest(t, elastic)
	require.Len(t, p.PodGroups, 1)
	var mins []int32
	for _, sg := range subGroupsOf(p.PodGroups[0])[2:] {
		mins = append(mins, sg.minMember)
	}
	assert.Equal(t, []int32{4, 4, 4, 0, 0}, mins, "minAvailable 13: master 1, workers 12")
	assert.Equal(t, int32(5), *p.PodGroups[0].SubGroups[1].MinSubGroup, "KAI: minSubGroup = every segment, the elastic ones are satisfied with no pod")

	partial := strings.Replace(kaiDocsPyTorchRack, "replicas: 16", "replicas: 18", 1)
	p, _ = planManifest(t, partial)
	mins = nil
	for _, sg := range subGroupsOf(p.PodGroups[0])[2:] {
		mins = append(mins, sg.minMember)
	}
	assert.Equal(t, []int32{4, 4, 4, 4, 2}, mins)
}

const kaiDocsLWS = `
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: lws-segmented
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 5
    subGroupPolicy:
      subGroupSize: 2
      subGroupPolicyType: LeaderWorker
    leaderTemplate:
      spec:
        containers:
          - name: leader
            image: my/image:latest
    workerTemplate:
      metadata:
        annotations:
          kai.scheduler/topology: "cluster-topology"
          kai.scheduler/segment-topology-required-placement: "cloud.provider.com/topology-rack"
      spec:
        containers:
          - name: worker
            image: my/image:latest
`

// TestSegmentsKAIDocsLeaderWorkerSet: KAI's lws_grouper.go buildSubGroupsWithSegmentation on the
// docs example (size 5, subGroupSize 2): (5-1) divides by 2, so the leader is an extra pod of the
// first segment (getSegmentIndex: worker i is in (i-1)/2); createSegmentSubgroups writes segment-0
// and segment-1 with the constraint; LeaderWorker (handleLeaderInFirstSegment) makes segment-0 the
// parent (minSubGroup 2) of leader (minMember 1) and the segment's workers (minMember 3-1 = 2);
// LeaderExcluded (addExcludedLeaderSegments) puts leader first, on its own. KAI names the workers
// of segment-0 "workers"; gangmap names a role's sub-group after the definition's component,
// "worker" (the one difference). A size of 4 (3 workers: not divisible) keeps the leader as index 0
// of segment-0 (worker i in i/2: segment-0 = leader + worker 1, segment-1 = workers 2-3), as KAI's
// TestBuildSubGroups_Segmentation_NotDivisible_LeaderPod.
func TestSegmentsKAIDocsLeaderWorkerSet(t *testing.T) {
	rack := "cluster-topology/cloud.provider.com/topology-rack/"
	cases := []struct {
		name, manifest string
		want           []sgWant
		pods           map[string]string // worker-index → sub-group
	}{
		{"LeaderWorker", kaiDocsLWS, []sgWant{
			{name: "segment-0", minMember: -1, minSubG: 2, topology: rack},
			{name: "segment-1", minMember: 2, minSubG: -1, topology: rack},
			{name: "leader", parent: "segment-0", minMember: 1, minSubG: -1},
			{name: "worker", parent: "segment-0", minMember: 2, minSubG: -1},
		}, map[string]string{"0": "leader", "1": "worker", "2": "worker", "3": "segment-1", "4": "segment-1"}},
		{"LeaderExcluded", strings.Replace(kaiDocsLWS, "subGroupPolicyType: LeaderWorker", "subGroupPolicyType: LeaderExcluded", 1), []sgWant{
			{name: "leader", minMember: 1, minSubG: -1},
			{name: "segment-0", minMember: 2, minSubG: -1, topology: rack},
			{name: "segment-1", minMember: 2, minSubG: -1, topology: rack},
		}, map[string]string{"0": "leader", "1": "segment-0", "2": "segment-0", "3": "segment-1", "4": "segment-1"}},
		{"NotDivisible", strings.Replace(kaiDocsLWS, "size: 5", "size: 4", 1), []sgWant{
			{name: "segment-0", minMember: -1, minSubG: 2, topology: rack},
			{name: "segment-1", minMember: 2, minSubG: -1, topology: rack},
			{name: "leader", parent: "segment-0", minMember: 1, minSubG: -1},
			{name: "worker", parent: "segment-0", minMember: 1, minSubG: -1},
		}, map[string]string{"0": "leader", "1": "worker", "2": "segment-1", "3": "segment-1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, obj := planManifest(t, c.manifest)
			require.Len(t, p.PodGroups, 1)
			assert.Equal(t, c.want, subGroupsOf(p.PodGroups[0]))
			assert.Empty(t, p.TopologyIssues)
			for idx, want := range c.pods {
				got := subGroupOfPod(t, p, obj, map[string]string{
					"leaderworkerset.sigs.k8s.io/group-index": "0", "leaderworkerset.sigs.k8s.io/worker-index": idx}, nil)
				assert.Equal(t, want, got, "worker-index %s", idx)
			}
		})
	}
}
