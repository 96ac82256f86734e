package app

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/gangmap/gangmap/podgrouper/runtime/kaitopology"
)

// placementJSON mirrors describe's -o json placement.
type placementJSON struct {
	Workloads []struct {
		Placement []*placementPodGroup `json:"placement"`
	} `json:"workloads"`
}

// describe's Placement (issue 30) on the segmented Volcano Job: the tree role → segment → pods,
// worker (minSubGroup 4) over worker-0…3 (minMember 4, the rack constraint), each pod under the
// segment of its task-index (KAI's getPodSegmentIndex: index / size: 0 → worker-0, 5 → worker-1,
// 15 → worker-3), with its node; offline there are no node labels.
func TestDescribeShowsThePlacementTree(t *testing.T) {
	const file = "testdata/describe/volcanojob-segments.yaml"
	r := gangmap(t, "describe", "-f", file, "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var doc placementJSON
	decodeOne(t, r.stdout, &doc)
	require.Len(t, doc.Workloads, 1)
	pl := doc.Workloads[0].Placement
	require.Len(t, pl, 1)
	assert.Equal(t, "pg-5e6e0000-0000-4000-8000-000000000030-job", pl[0].PodGroup)
	assert.Nil(t, pl[0].Topology)
	require.Len(t, pl[0].SubGroups, 1)
	role := pl[0].SubGroups[0]
	assert.Equal(t, "worker", role.Name)
	assert.Equal(t, int32(4), *role.MinSubGroup)
	require.Len(t, role.Children, 4)
	pods := map[string][]string{}
	for i, seg := range role.Children {
		assert.Equal(t, int32(i), *seg.Segment)
		assert.Equal(t, int32(4), *seg.MinMember)
		require.NotNil(t, seg.Topology)
		assert.Equal(t, "cluster-topology", seg.Topology.TopologyName)
		assert.Equal(t, "cloud.provider.com/topology-rack", seg.Topology.RequiredTopologyLevel)
		for _, p := range seg.Pods {
			pods[seg.Name] = append(pods[seg.Name], p.Name+"@"+p.Node)
			assert.Empty(t, p.NodeTopology, "offline: no node read")
		}
	}
	assert.Equal(t, map[string][]string{"worker-0": {"segmented-worker-0@node-0"}, "worker-1": {"segmented-worker-5@node-5"},
		"worker-3": {"segmented-worker-15@node-15"}}, pods)

	r = gangmap(t, "describe", "-f", file)
	require.Equal(t, ExitOK, r.code, r.stderr)
	// The table's columns, one space apart.
	var lines []string
	for _, l := range strings.Split(r.stdout, "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	assert.Subset(t, lines, []string{
		"Placement (topology constraints, the sub-groups and their pods):",
		"PodGroup pg-5e6e0000-0000-4000-8000-000000000030-job: -",
		"`-- worker - sub-groups 4 pods 0",
		"|-- worker-0 (segment 0) topology cluster-topology, required cloud.provider.com/topology-rack min 4 pods 1",
		"| `-- segmented-worker-0 Running node node-0",
		"|-- worker-2 (segment 2) topology cluster-topology, required cloud.provider.com/topology-rack min 4 pods 0",
		"`-- worker-3 (segment 3) topology cluster-topology, required cloud.provider.com/topology-rack min 4 pods 1",
		"`-- segmented-worker-15 Running node node-15",
	})
}

// fakeCluster is a kubeClients over fake clients holding topologies (name → levels' node labels,
// an "alias:label" level with its alias) and nodes (name → labels); reads counts the GETs of
// each resource.
func fakeCluster(topologies map[string][]string, nodes map[string]map[string]string) (*kubeClients, func(resource string) int) {
	var objs []runtime.Object
	for name, levels := range topologies {
		var ls []any
		for _, l := range levels {
			alias, label, ok := strings.Cut(l, ":")
			if !ok {
				alias, label = "", l
			}
			ls = append(ls, map[string]any{"nodeLabel": label, "alias": alias})
		}
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"levels": ls}}})
	}
	var nodeObjs []runtime.Object
	for name, labels := range nodes {
		nodeObjs = append(nodeObjs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{kaitopology.GroupVersionResource: "TopologyList"}, objs...)
	kube := kubefake.NewSimpleClientset(nodeObjs...)
	reads := func(resource string) int {
		n := 0
		for _, a := range append(dyn.Actions(), kube.Actions()...) {
			if a.GetVerb() == "get" && a.GetResource().Resource == resource {
				n++
			}
		}
		return n
	}
	return &kubeClients{dynamic: dyn, kube: kube}, reads
}

// Live, each placed pod gets its node's labels of the named Topology's levels (not the node's
// other labels), each Topology and node read once; a Topology that does not exist, or a level it
// lacks, is a note (as the grouper's TopologyNotFound finding).
func TestDescribeNodeTopology(t *testing.T) {
	placed := func() *workloadView {
		r := gangmap(t, "describe", "-f", "testdata/describe/volcanojob-segments.yaml", "-o", "json")
		require.Equal(t, ExitOK, r.code, r.stderr)
		var doc placementJSON
		decodeOne(t, r.stdout, &doc)
		return &workloadView{Placement: doc.Workloads[0].Placement}
	}
	v := placed()
	rack := "cloud.provider.com/topology-rack"
	c, reads := fakeCluster(map[string][]string{"cluster-topology": {"topology.kubernetes.io/zone", rack}}, map[string]map[string]string{
		"node-0": {"topology.kubernetes.io/zone": "z1", rack: "r1", "kubernetes.io/os": "linux"},
		"node-5": {"topology.kubernetes.io/zone": "z1", rack: "r2"},
	})
	v.addNodeTopology(context.Background(), c)
	assert.Equal(t, 1, reads("topologies"), "one read of the Topology for 4 segments")
	assert.Equal(t, 3, reads("nodes"))
	segs := v.Placement[0].SubGroups[0].Children
	assert.Equal(t, map[string]string{"topology.kubernetes.io/zone": "z1", rack: "r1"}, segs[0].Pods[0].NodeTopology)
	assert.Equal(t, map[string]string{"topology.kubernetes.io/zone": "z1", rack: "r2"}, segs[1].Pods[0].NodeTopology)
	assert.Empty(t, segs[3].Pods[0].NodeTopology)
	assert.Equal(t, []string{`topology: reading node node-15: nodes "node-15" not found`}, v.Notes)

	v = placed()
	c, _ = fakeCluster(nil, nil)
	v.addNodeTopology(context.Background(), c)
	assert.Equal(t, []string{`topology: sub-group worker-0 (and 3 more with the same constraint) names KAI Topology "cluster-topology", which does not exist: KAI leaves it unscheduled`}, v.Notes)

	v = placed()
	c, _ = fakeCluster(map[string][]string{"cluster-topology": {"z:zone"}}, nil)
	v.addNodeTopology(context.Background(), c)
	require.NotEmpty(t, v.Notes)
	assert.Equal(t, `topology: sub-group worker-0 (and 3 more with the same constraint) asks for level "cloud.provider.com/topology-rack", not a level of Topology "cluster-topology" (zone (alias z))`, v.Notes[0])
	assert.Len(t, v.Notes, 4, "the level once, and the 3 nodes this reader has not")
}
