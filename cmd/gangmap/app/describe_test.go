package app

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/podgrouper/core/owners"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
)

// describeJSON mirrors the parts of the -o json output of "gangmap describe" the tests check.
type describeJSON struct {
	Workloads []struct {
		Workload   struct{ Kind, Name, Namespace string }
		UID        string
		Definition struct{ Name, Source string }
		Status     []string
		Tree       *treeJSON
		Roles      []struct {
			Name                 string
			Replicas, Pods       int64
			GPUsPerPod, GPUs     float64
			GangPods, MinReplica int64
		}
		TotalGPUs float64
		Pods      struct{ Total, Ready int }
		PodGPUs   float64
		PodGroups []struct {
			Name        string
			Verdict     string
			Writer      string
			Differences []string
			Planned     *shapeJSON
			Existing    *shapeJSON
		}
		UnclaimedPods []struct{ Name, Phase, Reason string }
		Notes         []string
		Error         string
	}
}

type treeJSON struct {
	Name      string
	Kind      string
	Instances []struct {
		ID, Role string
		Replicas int64
		Pods     []struct{ Name, Phase, Node, PodGroup, SubGroup string }
	}
	Children []*treeJSON
}

type shapeJSON struct {
	MinMember, MinSubGroup *int32
	SubGroups              []struct {
		Name      string
		MinMember *int32
	}
}

const seedCopy = "testdata/describe/jobset-seed-live-copy.yaml"

// TestDescribeOfflineSeed describes the seed JobSet as stored with its pods and PodGroups
// (testdata/describe/jobset-seed-live-copy.yaml; every expected number comes from that file).
func TestDescribeOfflineSeed(t *testing.T) {
	r := gangmap(t, "describe", "-f", seedCopy, "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var doc describeJSON
	decodeOne(t, r.stdout, &doc)
	require.Len(t, doc.Workloads, 1, "the Jobs have owner references: only the JobSet is a workload")
	v := doc.Workloads[0]
	assert.Equal(t, "JobSet", v.Workload.Kind)
	assert.Equal(t, "train-llm", v.Workload.Name)
	assert.Equal(t, "jobset-x-k8s-io-jobset-v1alpha2", v.Definition.Name)
	// status.replicatedJobsStatus has active pods and no failed ones: the catalog's "running".
	assert.Equal(t, []string{"running"}, v.Status)

	// Tree: jobset → replicatedjob with instances leader (1 replica) and workers (2 replicas).
	require.NotNil(t, v.Tree)
	assert.Equal(t, "jobset", v.Tree.Name)
	require.Len(t, v.Tree.Children, 1)
	rj := v.Tree.Children[0]
	assert.Equal(t, "replicatedjob", rj.Name)
	assert.Equal(t, "Job", rj.Kind)
	require.Len(t, rj.Instances, 2)
	assert.Equal(t, "leader", rj.Instances[0].Role)
	assert.EqualValues(t, 1, rj.Instances[0].Replicas)
	assert.Equal(t, "workers", rj.Instances[1].Role)
	assert.EqualValues(t, 2, rj.Instances[1].Replicas)
	pg := "pg-0b5e2a4c-1111-4c1e-9d7a-000000000001-jobset" // pg-<uid>-<podGroup.name "jobset">
	require.Len(t, rj.Instances[0].Pods, 1)
	leader := rj.Instances[0].Pods[0]
	assert.Equal(t, "train-llm-leader-0-0", leader.Name)
	assert.Equal(t, "Running", leader.Phase)
	assert.Equal(t, "node-a", leader.Node)
	assert.Equal(t, pg, leader.PodGroup)
	assert.Equal(t, "leader", leader.SubGroup)
	// train-llm-workers-1-0's Job is not in the manifest: it still belongs to the only workload.
	require.Len(t, rj.Instances[1].Pods, 2)
	assert.Equal(t, "Pending (Unschedulable)", rj.Instances[1].Pods[1].Phase)

	// Roles and GPUs: 4 GPUs a pod in limits; leader 1 pod, workers 2 pods: 12 planned, and the
	// three trainer pods request 12 (the helper pod none).
	require.Len(t, v.Roles, 2)
	assert.Equal(t, "leader", v.Roles[0].Name)
	assert.EqualValues(t, 4, v.Roles[0].GPUsPerPod)
	assert.Equal(t, "workers", v.Roles[1].Name)
	assert.EqualValues(t, 2, v.Roles[1].Pods)
	assert.Equal(t, 12.0, v.TotalGPUs)
	assert.Equal(t, 12.0, v.PodGPUs)
	assert.Equal(t, 4, v.Pods.Total)
	assert.Equal(t, 2, v.Pods.Ready, "two pods have Ready=True")

	// PodGroups: gangmap's exists but is out of date; KAI's default one is foreign; pg-other
	// belongs to another workload and is not listed.
	require.Len(t, v.PodGroups, 2)
	assert.Equal(t, pg, v.PodGroups[0].Name)
	assert.Equal(t, "differs", v.PodGroups[0].Verdict)
	assert.Equal(t, []string{"minSubGroup: planned 2, existing 1", "sub-group workers: planned minMember 2, existing minMember 1"}, v.PodGroups[0].Differences)
	assert.Equal(t, ptr.To[int32](2), v.PodGroups[0].Planned.MinSubGroup)
	kai := v.PodGroups[1]
	assert.Equal(t, "pg-train-llm-0b5e2a4c-1111-4c1e-9d7a-000000000001", kai.Name)
	assert.Equal(t, "foreign", kai.Verdict)
	assert.Equal(t, "KAI's JobSet plugin (pg-<name>-<uid>)", kai.Writer, "JobSet is in KAI v0.17's native table")
	assert.Equal(t, ptr.To[int32](1), kai.Existing.MinMember)
	assert.Contains(t, kai.Differences, "minMember: planned -, existing 1 (vs gangmap's "+pg+")")

	// The helper pod has no replicated-job label: listed as unclaimed, with the reason.
	require.Len(t, v.UnclaimedPods, 1)
	assert.Equal(t, "train-llm-sidecar", v.UnclaimedPods[0].Name)
	assert.Contains(t, v.UnclaimedPods[0].Reason, "podSelector.componentInstanceSelector.idPath")

	table := gangmap(t, "describe", "-f", seedCopy)
	require.Equal(t, ExitOK, table.code, table.stderr)
	for _, want := range []string{
		"JobSet/train-llm   namespace: team-a   definition: jobset-x-k8s-io-jobset-v1alpha2 (catalog)\n",
		"Status: running\n",
		"TOTAL GPUs: 12 (plan); the 4 pods request 12\n",
		// JobSet is in KAI v0.17's native table: pg-<name>-<uid> is its JobSet plugin's PodGroup.
		"exists, not gangmap's: KAI's JobSet plugin (pg-<name>-<uid>)",
		"note: KAI groups JobSet (jobset.x-k8s.io/v1alpha2) natively: in a cluster, gangmap leaves its pods and PodGroups to KAI's plugin\n",
		"Unclaimed pods (1, no component of the definition claims them):",
		"`-- train-llm-leader-0-0",
	} {
		assert.Contains(t, table.stdout, want)
	}
}

func TestDescribeOfflineWithoutPodsPlansOnly(t *testing.T) {
	r := gangmap(t, "describe", "-f", "../../../examples/jobset-leader-workers.yaml", "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var doc describeJSON
	decodeOne(t, r.stdout, &doc)
	v := doc.Workloads[0]
	// No status in the manifest: no replicated job has started, the catalog's "initializing".
	assert.Equal(t, []string{"initializing"}, v.Status)
	require.Len(t, v.PodGroups, 1)
	// KAI v0.17 groups JobSet natively: the planned PodGroup is one gangmap would not create.
	assert.Equal(t, "native", v.PodGroups[0].Verdict)
	assert.Equal(t, "pg-train-llm-jobset", v.PodGroups[0].Name, "offline the name stands in for the UID")
	assert.Equal(t, 12.0, v.TotalGPUs)
	assert.Empty(t, v.UnclaimedPods)

	// Milvus is not native: offline with no PodGroup documents there is nothing to compare.
	r = gangmap(t, "describe", "-f", "testdata/manifests/milvus-deployment-groups.yaml", "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	doc = describeJSON{}
	decodeOne(t, r.stdout, &doc)
	require.Len(t, doc.Workloads, 1)
	require.NotEmpty(t, doc.Workloads[0].PodGroups)
	for _, pg := range doc.Workloads[0].PodGroups {
		assert.Equal(t, "planned", pg.Verdict, pg.Name)
	}
}

func TestDescribeUnknownKindExit1(t *testing.T) {
	path := t.TempDir() + "/x.yaml"
	writeFile(t, path, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n")
	r := gangmap(t, "describe", "-f", path, "-o", "json")
	assert.Equal(t, ExitProblems, r.code)
	var doc describeJSON
	decodeOne(t, r.stdout, &doc)
	assert.Contains(t, doc.Workloads[0].Error, "no usable Workload Map definition for kind Widget.example.com/v1")
	require.Len(t, doc.Workloads[0].UnclaimedPods, 1, "pods are listed, never hidden")
	assert.Equal(t, "no definition for the workload's kind", doc.Workloads[0].UnclaimedPods[0].Reason)
}

func TestDescribeUsageErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"nothing":      {"describe"},
		"no name":      {"describe", "jobset/"},
		"both":         {"describe", "jobset/x", "-f", seedCopy},
		"bad output":   {"describe", "-f", seedCopy, "-o", "xml"},
		"missing file": {"describe", "-f", "nope.yaml"},
	} {
		r := gangmap(t, args...)
		assert.Equal(t, ExitUnusable, r.code, name)
		assert.Contains(t, r.stderr, "error: ", name)
	}
}

// countingGraph is an ownerGraph over fixed owners that counts reads.
type countingGraph struct {
	owners map[types.UID][]metav1.OwnerReference
	reads  map[types.UID]int
}

func (g *countingGraph) owner(_ context.Context, _ string, ref metav1.OwnerReference) []metav1.OwnerReference {
	g.reads[ref.UID]++
	return g.owners[ref.UID]
}

// TestAttributeWalksOwnersBoundedAndFollowsControllers: pods reach their workload through
// owners; a cycle and a chain deeper than owners.MaxDepth end the walk.
func TestAttributeWalksOwnersBoundedAndFollowsControllers(t *testing.T) {
	root := &unstructured.Unstructured{}
	root.SetAPIVersion("example.com/v1")
	root.SetKind("Root")
	root.SetName("r")
	root.SetUID("root")
	ref := func(uid string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "X", Name: uid, UID: types.UID(uid), Controller: ptr.To(controller)}
	}
	g := &countingGraph{owners: map[types.UID][]metav1.OwnerReference{
		"job":    {ref("root", true)},
		"cycleA": {ref("cycleB", true)},
		"cycleB": {ref("cycleA", true)},
	}, reads: map[types.UID]int{}}
	// A chain of owners.MaxDepth+1 owners above the pod before the root: too deep.
	for i := 0; i < owners.MaxDepth; i++ {
		g.owners[types.UID("deep"+string(rune('a'+i)))] = []metav1.OwnerReference{ref("deep"+string(rune('a'+i+1)), true)}
	}
	g.owners[types.UID("deep"+string(rune('a'+owners.MaxDepth)))] = []metav1.OwnerReference{ref("root", true)}
	pod := func(name string, refs ...metav1.OwnerReference) *podFixture {
		return &podFixture{name: name, refs: refs}
	}
	pods := toPods(
		pod("direct", ref("root", true)),
		pod("via-job", ref("job", true)),
		pod("via-job-2", ref("job", true)),
		pod("non-controller-first", ref("other", false), ref("job", true)),
		pod("cycle", ref("cycleA", true)),
		pod("deep", ref("deepa", true)),
		pod("orphan"),
	)
	got, _ := attribute(context.Background(), pods, newRootsIndex([]*unstructured.Unstructured{root}), g)
	var names []string
	for _, p := range got[0] {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"direct", "via-job", "via-job-2", "non-controller-first"}, names)
	// The graph here does not cache; kubeClients.owner does (see TestKubeOwnerCache).
	assert.Equal(t, 3, g.reads["job"], "read once per pod that goes through it")
	assert.Zero(t, g.reads["other"], "the controller reference is followed, not the first one")
}

type podFixture struct {
	name string
	refs []metav1.OwnerReference
}

func toPods(fs ...*podFixture) []*corev1.Pod {
	out := make([]*corev1.Pod, len(fs))
	for i, f := range fs {
		out[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: f.name, Namespace: "ns", OwnerReferences: f.refs}}
	}
	return out
}

// TestKubeOwnerCache: each owner is read from the API once per command, hits and misses alike.
func TestKubeOwnerCache(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	job := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ns", UID: "job-uid", OwnerReferences: []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "js", UID: "js-uid"}}}}
	client := metadatafake.NewSimpleMetadataClient(scheme, job)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, meta.RESTScopeNamespace)
	c := &kubeClients{metadata: client, mapper: mapper, owners: map[types.UID][]metav1.OwnerReference{}}
	ref := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "job", UID: "job-uid"}
	gone := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "gone", UID: "gone-uid"}
	for i := 0; i < 3; i++ {
		refs := c.owner(context.Background(), "ns", ref)
		require.Len(t, refs, 1)
		assert.Equal(t, types.UID("js-uid"), refs[0].UID)
		assert.Nil(t, c.owner(context.Background(), "ns", gone))
	}
	gets := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" {
			gets++
		}
	}
	assert.Equal(t, 2, gets, "one get for the Job, one for the missing one, whatever the number of pods")
}

// TestGetRows lists the seed copy's workload as "get" does: one row with the matched status,
// ready/total pods, the plan's GPUs and the PodGroups that exist for it.
func TestGetRows(t *testing.T) {
	objs, err := readManifests([]string{seedCopy})
	require.NoError(t, err)
	in, err := splitManifest(objs, io.Discard)
	require.NoError(t, err)
	reg, err := newOfflineRegistry(nil, definitions.DecodeOptions{})
	require.NoError(t, err)
	views := describeAll(context.Background(), in.graph, reg, in.workloads, in.pods, in.podGroups, true)
	var out strings.Builder
	printGetTable(&out, workloadsDocument{Workloads: views}, "team-a")
	// Pods: the two with Ready=True of the four attributed through the Jobs in the file and the
	// JobSet's own reference (train-llm-workers-1-0's Job is not in the file: not attributed
	// here, unlike describe -f, which gives such pods to the only workload).
	assert.Equal(t, "NAME        NAMESPACE   STATUS    READY/TOTAL   GPUS   PODGROUP(S)                                                                                        FINDINGS\n"+
		"train-llm   team-a      running   2/3           12     pg-0b5e2a4c-1111-4c1e-9d7a-000000000001-jobset,pg-train-llm-0b5e2a4c-1111-4c1e-9d7a-000000000001   None\n"+
		"note: KAI groups JobSet (jobset.x-k8s.io/v1alpha2) natively: in a cluster, gangmap leaves its pods and PodGroups to KAI's plugin\n", out.String())

	// The grouper's gangmap.io/health on a PodGroup of the workload: the FINDINGS column and
	// describe's section show it.
	h := findings.Health{Findings: []findings.Finding{{Reason: findings.MoreThanPlanned, Role: "workers", Message: "4 live pods for 2m0s, the plan counts 2"}}, LastTransitionTime: "2026-12-01T12:00:00Z"}
	b, err := json.Marshal(h)
	require.NoError(t, err)
	pgs := in.podGroups
	require.NotEmpty(t, pgs)
	for _, pg := range pgs {
		if len(pg.OwnerReferences) > 0 && pg.OwnerReferences[0].UID == in.workloads[0].GetUID() {
			pg.Annotations = map[string]string{findings.HealthAnnotation: string(b)}
		}
	}
	views = describeAll(context.Background(), in.graph, reg, in.workloads, in.pods, pgs, true)
	require.Len(t, views, 1)
	assert.Equal(t, h.Findings, views[0].Findings)
	assert.Equal(t, "MoreThanPlanned(workers)", views[0].findingsColumn())
	out.Reset()
	printDescribe(&out, &workloadsDocument{Workloads: views})
	assert.Contains(t, out.String(), "Findings (1, the grouper's pods against the plan; docs/findings.md says what each means and how to fix it):\n  MoreThanPlanned(workers): 4 live pods for 2m0s, the plan counts 2\n")
}

// The native table follows the root's flags, as the grouper's do: with JobSet removed (a KAI
// without the JobSet plugin), pg-<name>-<uid> is KAI's default grouper's and no native note is
// given; an unknown --kai-version is refused.
func TestNativeTableFlags(t *testing.T) {
	r := gangmap(t, "describe", "-f", seedCopy, "-o", "json", "--native-kinds-remove", "jobset.x-k8s.io/v1alpha2/JobSet")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var doc describeJSON
	decodeOne(t, r.stdout, &doc)
	v := doc.Workloads[0]
	require.Len(t, v.PodGroups, 2)
	assert.Equal(t, "KAI's default grouper (pg-<name>-<uid>)", v.PodGroups[1].Writer)
	for _, n := range v.Notes {
		assert.NotContains(t, n, "natively")
	}

	// A workload gangmap marked (KAI's pod-grouper skips it): pg-<name>-<uid> is gangmap's own
	// PodGroup for pods no gang takes, not KAI's (issue 31 point 10).
	marked := strings.Replace(readFile(t, seedCopy), "kind: JobSet\nmetadata:\n", "kind: JobSet\nmetadata:\n  annotations: {gangmap.io/skip-podgrouper: set, kai.scheduler/skip-podgrouper: \"true\"}\n", 1)
	require.NotEqual(t, readFile(t, seedCopy), marked)
	markedFile := filepath.Join(t.TempDir(), "marked.yaml")
	writeFile(t, markedFile, marked)
	r = gangmap(t, "describe", "-f", markedFile, "-o", "json", "--native-kinds-remove", "jobset.x-k8s.io/v1alpha2/JobSet")
	require.Equal(t, ExitOK, r.code, r.stderr)
	doc = describeJSON{}
	decodeOne(t, r.stdout, &doc)
	require.Len(t, doc.Workloads[0].PodGroups, 2)
	assert.Equal(t, markedDefaultWriter, doc.Workloads[0].PodGroups[1].Writer)
	assert.Contains(t, markedDefaultWriter, "gangmap, for pods no gang of the plan takes")

	r = gangmap(t, "plan", "-f", seed, "--kai-version", "v9")
	assert.Equal(t, ExitUnusable, r.code)
	assert.Contains(t, r.stderr, `error: --kai-version: KAI release "v9": expected vMAJOR.MINOR`)
	assert.Contains(t, r.stderr, "Run 'gangmap plan --help' for usage.")
}

// Every KAI release line is accepted (kai-releases.md): on v0.12, JobSet is not native (its plugin
// came in v0.13.0), and the PodGroup has no minSubGroup (v0.15.0), so the seed JobSet is planned
// as one flat gang of its 3 pods with no sub-groups, 12 GPUs, and the plan says what v0.12 costs
// (no skip annotation: gangmap yields pods KAI's pod-grouper regrouped). On v0.17 the same plan
// has minSubGroup 2. plan -o json says nativeInKAI.
func TestKAIReleasePlan(t *testing.T) {
	r := gangmap(t, "plan", "-f", seed, "--kai-version", "v0.12.23", "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	type planJSON struct {
		PodGroups []struct {
			Name        string `json:"name"`
			MinMember   *int32 `json:"minMember"`
			MinSubGroup *int32 `json:"minSubGroup"`
			SubGroups   []any  `json:"subGroups"`
			GPUs        int    `json:"gpus"`
		} `json:"podGroups"`
		Notes       []string `json:"notes"`
		NativeInKAI *bool    `json:"nativeInKAI"`
	}
	var doc struct{ Plans []planJSON }
	decodeOne(t, r.stdout, &doc)
	require.Len(t, doc.Plans, 1)
	p := doc.Plans[0]
	require.Len(t, p.PodGroups, 1)
	assert.Equal(t, ptr.To[int32](3), p.PodGroups[0].MinMember)
	assert.Nil(t, p.PodGroups[0].MinSubGroup)
	assert.Empty(t, p.PodGroups[0].SubGroups)
	assert.Equal(t, 12, p.PodGroups[0].GPUs)
	require.NotNil(t, p.NativeInKAI)
	assert.False(t, *p.NativeInKAI)
	notes := strings.Join(p.Notes, "\n")
	assert.Contains(t, notes, "KAI v0.12's PodGroup has no minSubGroup")
	assert.Contains(t, notes, "does not honour kai.scheduler/skip-podgrouper")
	assert.Contains(t, notes, "never takes back a pod")

	r = gangmap(t, "plan", "-f", seed, "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	doc.Plans = nil
	decodeOne(t, r.stdout, &doc)
	p = doc.Plans[0]
	assert.Equal(t, ptr.To[int32](2), p.PodGroups[0].MinSubGroup)
	require.NotNil(t, p.NativeInKAI)
	assert.True(t, *p.NativeInKAI, "JobSet is native in v0.17")
	assert.Empty(t, p.Notes)

	r = gangmap(t, "plan", "-f", seed, "--kai-version", "v0.21")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, `warning: --kai-version: KAI release "v0.21" is newer than the latest release gangmap knows (v0.17): treated as v0.17`)

	r = gangmap(t, "describe", "-f", seedCopy, "--kai-version", "v0.14")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "does not honour kai.scheduler/skip-podgrouper")
}

// describe -f: a pod with no owner in a manifest of two workloads belongs to neither, and a note
// says it is not shown; cluster flags are refused, since the manifest is all there is.
func TestDescribeManifestLoosePodAndClusterFlags(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/loose.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: loose, namespace: default}\nspec: {containers: [{name: c, image: x}]}\n")
	r := gangmap(t, "describe", "-f", seed, "-f", "testdata/manifests/lws-sglang-gpu-limits-only.yaml", "-f", dir+"/loose.yaml")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stderr, "note: Pod/loose is not shown: no owner of it is in the manifest, which has 2 workloads to give it to\n")

	r = gangmap(t, "describe", "-f", seed, "-n", "other")
	assert.Equal(t, ExitUnusable, r.code)
	assert.Contains(t, r.stderr, "-f reads only the manifest")
}

// get says when a row's plan read nothing at a definition path (a misspelt or drifted field):
// the numbers would otherwise look plausible. A misspelt count (replicasPath) is no note but the
// row's error, naming the field: the role's pod count, and so the gang, is unknown
// (definitions.UnknownCountError).
func TestGetNotesPathMisses(t *testing.T) {
	objs, err := readManifests([]string{seedCopy})
	require.NoError(t, err)
	in, err := splitManifest(objs, io.Discard)
	require.NoError(t, err)
	getTable := func(defPath string) string {
		reg, err := newOfflineRegistry([]string{defPath}, definitions.DecodeOptions{})
		require.NoError(t, err)
		views := describeAll(context.Background(), in.graph, reg, in.workloads, in.pods, in.podGroups, true)
		var out strings.Builder
		printGetTable(&out, workloadsDocument{Workloads: views}, "team-a")
		return out.String()
	}
	out := getTable("testdata/definitions/jobset-typo.yaml")
	assert.Contains(t, out, "<no plan>")
	assert.Contains(t, out, "error: JobSet/train-llm: ")
	assert.Contains(t, out, `spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath (instance "leader") (.spec.replicatedJob[]? | (.replicas // 1)) resolved to nothing on this workload: expected a whole number of pods`)

	// A misspelt template path (the count resolves) is a note on the row.
	b, err := os.ReadFile("testdata/definitions/jobset-typo.yaml")
	require.NoError(t, err)
	typo := strings.Replace(string(b), "replicasPath: .spec.replicatedJob[]?", "replicasPath: .spec.replicatedJobs[]?", 1)
	typo = strings.Replace(typo, "podTemplateSpecPath: .spec.replicatedJobs[]?.template.spec.template", "podTemplateSpecPath: .spec.replicatedJobs[]?.template.spec.templat", 1)
	require.NotEqual(t, string(b), typo)
	defPath := filepath.Join(t.TempDir(), "jobset-template-typo.yaml")
	require.NoError(t, os.WriteFile(defPath, []byte(typo), 0o600))
	out = getTable(defPath)
	assert.Contains(t, out, "note: JobSet/train-llm: spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath (")
	assert.Contains(t, out, ") resolved to nothing; 'describe' shows the plan\n")
}

// TestDescribeOfflineSkipsSupportingKinds: describe -f takes the same objects as workloads as
// plan -f: a bundle's runtime (Kubeflow Trainer's ClusterTrainingRuntime), ConfigMap and Service
// are not workloads. Before, each was described as a workload without a definition (exit 1), and
// the manifest's one real workload no longer received the pods without owner references.
func TestDescribeOfflineSkipsSupportingKinds(t *testing.T) {
	seedYAML, err := os.ReadFile("../../../examples/jobset-leader-workers.yaml")
	require.NoError(t, err)
	path := t.TempDir() + "/bundle.yaml"
	writeFile(t, path, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata: {name: torch}\nspec: {}\n---\n"+
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n---\n"+string(seedYAML))
	r := gangmap(t, "describe", "-f", path, "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var doc describeJSON
	decodeOne(t, r.stdout, &doc)
	require.Len(t, doc.Workloads, 1)
	assert.Empty(t, doc.Workloads[0].Error)
	assert.Equal(t, 12.0, doc.Workloads[0].TotalGPUs)
	assert.Contains(t, r.stderr, "note: skipping ClusterTrainingRuntime/torch: not a workload")
}

// TestDescribeSaysKAICannotAdmit: the dependsOn JobSet as the real KAI scheduler deadlocked it
// (testdata/describe/jobset-depends-on-deadlock-live-copy.yaml: an older gangmap's PodGroup keeps
// the finished aa-init with minMember 1, minSubGroup 1): describe no longer says only that the
// PodGroup exists; the admission model names aa-init as the sub-group that blocks it (KAI takes
// the first minSubGroup sub-groups by name, allocation_info.go collectTasksFromSubGroupSet), and
// the plan's gang (aa-init minimum 0, minSubGroup 2) is shown as the fix.
func TestDescribeSaysKAICannotAdmit(t *testing.T) {
	r := gangmap(t, "describe", "-f", "testdata/describe/jobset-depends-on-deadlock-live-copy.yaml", "-o", "json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var doc struct {
		Workloads []struct {
			PodGroups []struct {
				Name, Verdict string
				KAIAdmission  *struct {
					Admitted bool
					Blocking string
					Reason   string
				} `json:"kaiAdmission"`
				Planned shapeJSON
			}
		}
	}
	decodeOne(t, r.stdout, &doc)
	require.Len(t, doc.Workloads, 1)
	require.Len(t, doc.Workloads[0].PodGroups, 1)
	pg := doc.Workloads[0].PodGroups[0]
	assert.Equal(t, "differs", pg.Verdict)
	require.NotNil(t, pg.KAIAdmission)
	assert.False(t, pg.KAIAdmission.Admitted)
	assert.Equal(t, "aa-init", pg.KAIAdmission.Blocking)
	assert.Contains(t, pg.KAIAdmission.Reason, "1 succeeded of its minMember 1")
	require.NotNil(t, pg.Planned.MinSubGroup)
	assert.Equal(t, int32(2), *pg.Planned.MinSubGroup)

	r = gangmap(t, "describe", "-f", "testdata/describe/jobset-depends-on-deadlock-live-copy.yaml")
	require.Equal(t, ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "exists, differs from the plan; KAI cannot admit it (sub-group aa-init blocks it)")
}
