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

// segmentAnnotations are the docs' rack segment annotations, as the body of a pod template's
// metadata indented by indent spaces.
func segmentAnnotations(indent int) string {
	pad := strings.Repeat(" ", indent)
	return "\n" + pad + "annotations:\n" + pad + "  kai.scheduler/topology: cluster-topology\n" +
		pad + "  kai.scheduler/segment-size: \"4\"\n" + pad + "  kai.scheduler/segment-topology-required-placement: cloud.provider.com/topology-rack"
}

var segmentedJobSet = `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: train
spec:
  replicatedJobs:
  - name: launcher
    replicas: 1
    template:
      spec:
        template:
          spec:
            containers: [{name: main, image: x}]
  - name: workers
    replicas: REPLICAS
    template:
      spec:
        parallelism: PARALLELISM
        completions: PARALLELISM
        template:
          metadata:` + segmentAnnotations(12) + `
          spec:
            containers: [{name: main, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
`

// TestSegmentsJobSet: a JobSet has no native segments in KAI (its jobset plugin reads no segment
// key); the catalog places a JobSet pod by its Job's completion index (the Job controller's
// batch.kubernetes.io/job-completion-index; JobSet defaults completionMode to Indexed, jobset
// api jobset_webhook.go Default) offset by jobset.sigs.k8s.io/job-index × parallelism. 16 pods
// as 1 Job of 16 or 16 Jobs of 1 give the role sub-group "workers" (minSubGroup 4) over
// workers-0 … workers-3 of 4 pods each with the rack constraint; 4 Jobs of 4 are already one
// sub-group per Job (workers-<job-index>), which then carry the constraint.
func TestSegmentsJobSet(t *testing.T) {
	rack := "cluster-topology/cloud.provider.com/topology-rack/"
	segs := []sgWant{{name: "launcher", minMember: 1, minSubG: -1}, {name: "workers", minMember: -1, minSubG: 4}}
	for i := range 4 {
		segs = append(segs, sgWant{name: fmt.Sprintf("workers-%d", i), parent: "workers", minMember: 4, minSubG: -1, topology: rack})
	}
	cases := []struct {
		name, replicas, parallelism string
		pods                        [][3]string // job-index, completion index, sub-group
	}{
		{"one Job of 16", "1", "16", [][3]string{{"0", "0", "workers-0"}, {"0", "7", "workers-1"}, {"0", "15", "workers-3"}}},
		{"16 Jobs of 1", "16", "1", [][3]string{{"0", "0", "workers-0"}, {"9", "0", "workers-2"}, {"15", "0", "workers-3"}}},
		{"4 Jobs of 4", "4", "4", [][3]string{{"0", "3", "workers-0"}, {"2", "1", "workers-2"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := strings.ReplaceAll(strings.ReplaceAll(segmentedJobSet, "REPLICAS", c.replicas), "PARALLELISM", c.parallelism)
			p, obj := planManifest(t, m)
			require.Len(t, p.PodGroups, 1)
			assert.Empty(t, p.TopologyIssues)
			want := segs
			if c.name == "4 Jobs of 4" {
				want = []sgWant{{name: "launcher", minMember: 1, minSubG: -1}, {name: "workers", minMember: -1, minSubG: 4}}
				for i := range 4 {
					want = append(want, sgWant{name: fmt.Sprintf("workers-%d", i), parent: "workers", minMember: 4, minSubG: -1, topology: rack})
				}
			}
			assert.Equal(t, want, subGroupsOf(p.PodGroups[0]))
			for _, pod := range c.pods {
				got := subGroupOfPod(t, p, obj, map[string]string{
					"jobset.sigs.k8s.io/replicatedjob-name": "workers", "jobset.sigs.k8s.io/job-index": pod[0],
					"batch.kubernetes.io/job-completion-index": pod[1]}, nil)
				assert.Equal(t, pod[2], got, "job %s index %s", pod[0], pod[1])
			}
		})
	}
}

// TestSegmentsVolcanoJob: a Volcano Job's definition gives a flat PodGroup; segment annotations
// on a task's template make it one sub-group per task (master, worker) with the worker's
// segments under it, placed by volcano.sh/task-index (volcano job_controller_util.go
// createJobPod writes it as an annotation).
func TestSegmentsVolcanoJob(t *testing.T) {
	m := `
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: mpi
spec:
  tasks:
  - name: master
    replicas: 1
    template:
      spec:
        containers: [{name: main, image: x}]
  - name: worker
    replicas: 8
    template:
      metadata:` + segmentAnnotations(8) + `
      spec:
        containers: [{name: main, image: x}]
`
	p, obj := planManifest(t, m)
	require.Len(t, p.PodGroups, 1)
	assert.Empty(t, p.TopologyIssues)
	rack := "cluster-topology/cloud.provider.com/topology-rack/"
	assert.Equal(t, []sgWant{
		{name: "master", minMember: 1, minSubG: -1},
		{name: "worker", minMember: -1, minSubG: 2},
		{name: "worker-0", parent: "worker", minMember: 4, minSubG: -1, topology: rack},
		{name: "worker-1", parent: "worker", minMember: 4, minSubG: -1, topology: rack},
	}, subGroupsOf(p.PodGroups[0]))
	require.NotNil(t, p.PodGroups[0].MinSubGroup)
	assert.Equal(t, int32(2), *p.PodGroups[0].MinSubGroup)
	for idx, want := range map[string]string{"0": "worker-0", "3": "worker-0", "4": "worker-1", "7": "worker-1"} {
		got := subGroupOfPod(t, p, obj, map[string]string{"volcano.sh/task-spec": "worker"}, map[string]string{"volcano.sh/task-index": idx})
		assert.Equal(t, want, got, "task-index %s", idx)
	}
	assert.Equal(t, "master", subGroupOfPod(t, p, obj, map[string]string{"volcano.sh/task-spec": "master"}, map[string]string{"volcano.sh/task-index": "0"}))
}

// TestSegmentsDynamoMultiNode: a multi-node Dynamo component (v1beta1) runs replicas × nodeCount
// pods, as Grove PodCliqueScalingGroup replicas; the catalog places a pod by its replica
// (grove.io/podcliquescalinggroup-replica-index) × nodeCount + its index in the replica
// (grove.io/podcliquescalinggroup-pod-index). 2 replicas of 4 nodes with segment-size 4 give
// decode-0 and decode-1 of 4 pods each, one per replica; the gang requires minAvailable replicas
// (default 1, the definition's minReplicasPath), so decode-1 is elastic (minMember 0), as KAI
// makes the segments past a role's minimum.
func TestSegmentsDynamoMultiNode(t *testing.T) {
	m := `
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: disagg
spec:
  components:
  - name: Frontend
    replicas: 1
    podTemplate:
      spec:
        containers: [{name: main, image: x}]
  - name: decode
    replicas: 2
    multinode:
      nodeCount: 4
    podTemplate:
      metadata:` + segmentAnnotations(8) + `
      spec:
        containers: [{name: main, image: x, resources: {limits: {nvidia.com/gpu: "4"}}}]
`
	p, obj := planManifest(t, m)
	require.Len(t, p.PodGroups, 1)
	assert.Empty(t, p.TopologyIssues)
	rack := "cluster-topology/cloud.provider.com/topology-rack/"
	assert.Equal(t, []sgWant{
		{name: "frontend", minMember: 1, minSubG: -1},
		{name: "decode", minMember: -1, minSubG: 2},
		{name: "decode-0", parent: "decode", minMember: 4, minSubG: -1, topology: rack},
		{name: "decode-1", parent: "decode", minMember: 0, minSubG: -1, topology: rack},
	}, subGroupsOf(p.PodGroups[0]))
	for _, c := range [][3]string{{"0", "0", "decode-0"}, {"0", "3", "decode-0"}, {"1", "0", "decode-1"}, {"1", "3", "decode-1"}} {
		got := subGroupOfPod(t, p, obj, map[string]string{"nvidia.com/dynamo-component": "decode",
			"grove.io/podcliquescalinggroup-replica-index": c[0], "grove.io/podcliquescalinggroup-pod-index": c[1]}, nil)
		assert.Equal(t, c[2], got, "replica %s pod %s", c[0], c[1])
	}
}

// TestJobSetReplicatedJobPoliciesSaysWhyNot: a JobSet with spec.scheduling.replicatedJobPolicies
// keeps one PodGroup (as KAI's native JobSet plugin, which reads no spec.scheduling) and the plan
// says so; without the field, no such note.
func TestJobSetReplicatedJobPoliciesSaysWhyNot(t *testing.T) {
	m := strings.ReplaceAll(strings.ReplaceAll(segmentedJobSet, "REPLICAS", "1"), "PARALLELISM", "4")
	p, _ := planManifest(t, m)
	for _, n := range p.Notes {
		assert.NotContains(t, n, "replicatedJobPolicies")
	}
	m = strings.Replace(m, "spec:\n  replicatedJobs:", "spec:\n  scheduling:\n    replicatedJobPolicies:\n    - targetReplicatedJob: launcher\n      policy: {basic: {}}\n  replicatedJobs:", 1)
	p, _ = planManifest(t, m)
	require.Len(t, p.PodGroups, 1)
	var found bool
	for _, n := range p.Notes {
		found = found || strings.Contains(n, "spec.scheduling.replicatedJobPolicies asks JobSet's controller for an independent gang")
	}
	assert.True(t, found, "%v", p.Notes)
}

// TestSegmentsOffWritesThePodGroupTopologyOnly: under gang.WithoutRolePlacement (a KAI release
// without minSubGroup, or --topology-segments=off) the zoned docs example keeps its PodGroup zone
// constraint and gets plain master and worker sub-groups, and the plan says why.
func TestSegmentsOffWritesThePodGroupTopologyOnly(t *testing.T) {
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(kaiDocsPyTorchZoned), &obj.Object))
	obj.SetNamespace("default")
	c := catalogRegistry(t).Lookup(obj.GroupVersionKind())
	p, err := gang.Build(gang.WithoutRolePlacement(context.Background(), "off for the test"), c, obj)
	require.NoError(t, err)
	require.Len(t, p.PodGroups, 1)
	assert.Equal(t, []sgWant{{name: "master", minMember: 1, minSubG: -1}, {name: "worker", minMember: 16, minSubG: -1}}, subGroupsOf(p.PodGroups[0]))
	require.NotNil(t, p.PodGroups[0].Topology)
	assert.Equal(t, "topology.kubernetes.io/zone", p.PodGroups[0].Topology.RequiredTopologyLevel)
	assert.Contains(t, p.Notes, "roles worker ask for segments or a topology of their own; not written: off for the test")
}

// TestSegmentsWhereGangmapDiffersFromKAI pins the two known differences from KAI v0.17's native
// segmenting and nothing else (docs/topology.md "Where gangmap differs from KAI's plugins"):
//
//   - Names: KAI's LWS plugin calls the workers' sub-group "workers" (lws_grouper.go
//     workersSubGroupName, in addLeaderAndWorkersSubgroupsForSegment and
//     buildSubGroupsWithoutSegmentation); gangmap names every role's sub-group after the
//     definition's component ("worker"), for every kind. KAI's tree for the docs example, written
//     from buildSubGroupsWithSegmentation (createSegmentSubgroups, handleLeaderInFirstSegment),
//     equals gangmap's once "worker" is read as "workers".
//   - An elastic minimum that is not a whole number of segments: KAI makes the first
//     ceil(min/size) segments mandatory, each whole (pytorch_grouper.go buildWorkerSubGroups
//     mandatorySegments), so 20 workers of minimum 10 in segments of 4 require 4+4+4 = 12;
//     gangmap requires exactly the framework's minimum, 4+4+2 = 10 (the plan's, the findings' and
//     the GPU totals' minimum), the third segment's other 2 pods placed later under the same
//     rack constraint. Where the minimum is all the pods or a multiple of the size (every other
//     sample, TestSegmentsPyTorchElasticAndPartial) both give the same.
func TestSegmentsWhereGangmapDiffersFromKAI(t *testing.T) {
	rack := "cluster-topology/cloud.provider.com/topology-rack/"
	kaiLWS := []sgWant{ // lws_grouper.go on size 5, subGroupSize 2, LeaderWorker
		{name: "segment-0", minMember: -1, minSubG: 2, topology: rack},
		{name: "segment-1", minMember: 2, minSubG: -1, topology: rack},
		{name: "leader", parent: "segment-0", minMember: 1, minSubG: -1},
		{name: "workers", parent: "segment-0", minMember: 2, minSubG: -1},
	}
	p, _ := planManifest(t, kaiDocsLWS)
	got := subGroupsOf(p.PodGroups[0])
	for i := range got {
		if got[i].name == "worker" {
			got[i].name = "workers"
		}
	}
	assert.Equal(t, kaiLWS, got, "the one difference is the workers' name")

	elastic := strings.Replace(strings.Replace(kaiDocsPyTorchRack, "replicas: 16", "replicas: 20", 1),
		"  pytorchReplicaSpecs:", "  runPolicy:\n    schedulingPolicy:\n      minAvailable: 11\n  pytorchReplicaSpecs:", 1)
	p, _ = planManifest(t, elastic)
	var mins []int32
	for _, sg := range subGroupsOf(p.PodGroups[0])[2:] {
		mins = append(mins, sg.minMember)
	}
	assert.Equal(t, []int32{4, 4, 2, 0, 0}, mins, "minAvailable 11: master 1, workers 10, required exactly")
	kaiMins := []int32{4, 4, 4, 0, 0} // mandatorySegments = (10+4-1)/4 = 3, each MinAvailable = segmentSize
	assert.NotEqual(t, kaiMins, mins)
	var sum, kaiSum int32
	for i := range mins {
		sum, kaiSum = sum+mins[i], kaiSum+kaiMins[i]
	}
	assert.Equal(t, int32(10), sum, "gangmap: the workers' minimum")
	assert.Equal(t, int32(12), kaiSum, "KAI: whole mandatory segments")
	assert.Contains(t, strings.Join(p.Notes, "\n"), "not a whole number of segments", "the plan says so")
}
