//go:build e2e_kai

package inkai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/e2e/realkai"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// bedLabel marks a test's fake nodes; its pods select them (pin).
const bedLabel = "e2e.gangmap.io/inkai-bed"

// stockLabel marks the namespaces of TestInKAINativeAndUndefinedAsStockKAI.
const stockLabel = "e2e.gangmap.io/inkai-stock"

// newBed creates namespace ns and nodes fake nodes of gpus GPUs, named <ns>-<i> from first.
func newBed(t *testing.T, ns string, nodes, gpus int) {
	t.Helper()
	require.NoError(t, kai.CreateNamespace(context.Background(), ns))
	addNodes(t, ns, 0, nodes, gpus)
}

func addNodes(t *testing.T, ns string, first, n, gpus int) {
	t.Helper()
	var names []string
	for i := first; i < first+n; i++ {
		names = append(names, fmt.Sprintf("%s-%d", ns, i))
	}
	require.NoError(t, kai.CreateGPUNodes(context.Background(), realkai.NodeSpec{Names: names, GPUs: gpus, Labels: map[string]string{bedLabel: ns}}))
}

// pin puts obj in namespace ns and the test queue, and makes every pod spec in it select the
// bed's nodes.
func pin(obj *unstructured.Unstructured, ns string) *unstructured.Unstructured {
	obj.SetNamespace(ns)
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[kaikeys.DefaultQueueLabel] = queue
	obj.SetLabels(l)
	pinSpecs(obj.Object, ns)
	return obj
}

func pinSpecs(v any, ns string) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["containers"].([]any); ok {
			x["nodeSelector"] = map[string]any{bedLabel: ns}
		}
		for _, e := range x {
			pinSpecs(e, ns)
		}
	case []any:
		for _, e := range x {
			pinSpecs(e, ns)
		}
	}
}

func read(t *testing.T, path, ns string) *unstructured.Unstructured {
	t.Helper()
	obj, err := framework.ReadObject(path)
	require.NoError(t, err)
	return pin(obj, ns)
}

// podGroupsOf waits until every pod names its PodGroup and returns those PodGroups by name.
func podGroupsOf(t *testing.T, ctx context.Context, ns string, pods []*corev1.Pod) map[string]*v2alpha2.PodGroup {
	t.Helper()
	pgs, err := kai.WaitGrouped(ctx, pods, admitTimeout)
	require.NoError(t, err, kai.Report(ctx, ns))
	return pgs
}

// gang is a PodGroup's gang in one line.
func gang(pg *v2alpha2.PodGroup) string {
	b, _ := json.Marshal(map[string]any{"minMember": pg.Spec.MinMember, "minSubGroup": pg.Spec.MinSubGroup, "subGroups": pg.Spec.SubGroups, "queue": pg.Spec.Queue})
	return string(b)
}

// TestInKAICustomJobAllOrNothing: with gangmap-kai-podgrouper as KAI's only pod-grouper, a
// CustomJob (a kind no KAI release knows, defined by the cluster Karta
// e2e/testdata/customjob-karta.yaml: 1 coordinator of 1 GPU, 2 workers of 2 GPUs, one gang of 5
// GPUs) gets one PodGroup with a sub-group per role (minSubGroup 2; coordinator 1, worker 2) and is
// admitted all-or-nothing by the real KAI scheduler: on 4 GPUs none of its 3 pods is bound for 10
// scheduling cycles (KAI commits a job's allocation only when its gang is placed:
// pkg/scheduler/actions/allocate/allocate.go), on 6 GPUs all 3 are.
func TestInKAICustomJobAllOrNothing(t *testing.T) {
	ctx := context.Background()
	ns := "inkai-customjob"
	newBed(t, ns, 2, 2)
	job := read(t, "../../testdata/customjob.yaml", ns)
	require.NoError(t, kai.Client.Create(ctx, job))
	pods, err := kai.RunRoles(ctx, job, 3, "coordinator", "worker")
	require.NoError(t, err)
	pgs := podGroupsOf(t, ctx, ns, pods)
	require.Len(t, pgs, 1, "one PodGroup for the CustomJob's 3 pods")
	for name, pg := range pgs {
		assert.Equal(t, fmt.Sprintf("pg-%s-customjob", job.GetUID()), name)
		assert.Equal(t, `{"minMember":null,"minSubGroup":2,"queue":"gangmap-e2e","subGroups":[{"name":"coordinator","minMember":1},{"name":"worker","minMember":2}]}`, gang(pg))
		assert.Equal(t, "e2e-example-com-v1-customjob (cluster)", pg.Annotations[kaikeys.Definition])
	}
	p, err := kai.AssertNoneBound(ctx, ns, labels.Everything(), holdPeriod)
	require.NoError(t, err, "4 GPUs for a 5-GPU gang: KAI binds none of its pods")
	assert.Len(t, p.Pending, 3)
	addNodes(t, ns, 2, 1, 2)
	p, err = kai.WaitAllBound(ctx, ns, labels.Everything(), 3, admitTimeout)
	require.NoError(t, err, "6 GPUs: KAI binds the whole gang\n%s", kai.Report(ctx, ns))
	assert.Len(t, p.Bound, 3)
}

// llmSpec is a vLLM pod spec of gpus GPUs.
func llmSpec(gpus int64) map[string]any {
	res := map[string]any{"nvidia.com/gpu": gpus}
	return map[string]any{"containers": []any{map[string]any{"name": "main", "image": "registry.example/vllm:1",
		"resources": map[string]any{"limits": res, "requests": res}}}}
}

// TestInKAILLMInferenceServiceAllOrNothing: a multi-node LLMInferenceService (v1alpha2,
// parallelism data 3 / dataLocal 1: a leader and 2 workers, 2 GPUs each; the catalog definition:
// one PodGroup, a sub-group per role requiring all its pods) whose LeaderWorkerSet is the one
// KServe writes (kserve pkg/controller/v1alpha2/llmisvc/workload_multi_node.go
// expectedMainMultiNodeLWS: owned by the LLMInferenceService, LeaderCreated, the leader and
// worker labels) and whose pods the LWS controller creates (framework.StepLeaderWorkerSet): KAI's
// pod-grouper walks pod -> StatefulSet -> (leader pod -> StatefulSet ->) LeaderWorkerSet ->
// LLMInferenceService, a kind without a native plugin, so gangmap groups it; on 4 GPUs KAI binds
// none of the 3 pods, on 6 all.
func TestInKAILLMInferenceServiceAllOrNothing(t *testing.T) {
	ctx := context.Background()
	ns := "inkai-llmisvc"
	newBed(t, ns, 2, 2)
	svc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService",
		"spec": map[string]any{"model": map[string]any{"uri": "hf://meta-llama/Llama-3.1-70B", "name": "llama"}, "replicas": int64(1),
			"parallelism": map[string]any{"data": int64(3), "dataLocal": int64(1), "tensor": int64(2)},
			"template":    llmSpec(2), "worker": llmSpec(2)}}}
	svc.SetName("llama")
	pin(svc, ns)
	require.NoError(t, kai.Client.Create(ctx, svc))
	part := map[string]any{"app.kubernetes.io/name": "llama", "app.kubernetes.io/part-of": "llminferenceservice"}
	role := func(component string, extra ...string) map[string]any {
		l := map[string]any{"app.kubernetes.io/component": component}
		for k, v := range part {
			l[k] = v
		}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	lws := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"spec": map[string]any{"replicas": int64(1), "startupPolicy": "LeaderCreated", "leaderWorkerTemplate": map[string]any{"size": int64(3),
			"leaderTemplate": map[string]any{"metadata": map[string]any{"labels": role("llminferenceservice-workload-leader",
				"kserve.io/component", "workload", "llm-d.ai/role", "decode")}, "spec": llmSpec(2)},
			"workerTemplate": map[string]any{"metadata": map[string]any{"labels": role("llminferenceservice-workload-worker")}, "spec": llmSpec(2)},
		}}}}
	lws.SetName("llama-kserve-mn")
	lws.SetOwnerReferences([]metav1.OwnerReference{framework.UnstructuredOwnerRef(svc)})
	pin(lws, ns)
	require.NoError(t, kai.Client.Create(ctx, lws))
	pods, err := kai.StepLeaderWorkerSet(ctx, ns, lws.GetName())
	require.NoError(t, err)
	sel := labels.SelectorFromSet(labels.Set{"app.kubernetes.io/part-of": "llminferenceservice"})
	all, err := kai.Place(ctx, ns, sel)
	require.NoError(t, err)
	require.Len(t, all.Pending, 3, "the LWS controller created the leader and 2 workers (pods %d)", len(pods))
	var created []*corev1.Pod
	for i := range all.Pending {
		created = append(created, &all.Pending[i])
	}
	pgs := podGroupsOf(t, ctx, ns, created)
	require.Len(t, pgs, 1, "one PodGroup for the 3 pods")
	for _, pg := range pgs {
		assert.Equal(t, "LLMInferenceService", pg.OwnerReferences[0].Kind, "grouped by the top owner")
		assert.Contains(t, pg.Annotations[kaikeys.Definition], "serving-kserve-io-llminferenceservice-v1alpha2 (catalog)")
		t.Logf("PodGroup %s: %s", pg.Name, gang(pg))
	}
	_, err = kai.AssertNoneBound(ctx, ns, sel, holdPeriod)
	require.NoError(t, err, "4 GPUs for a 6-GPU gang: KAI binds none of its pods")
	addNodes(t, ns, 2, 1, 2)
	_, err = kai.WaitAllBound(ctx, ns, sel, 3, admitTimeout)
	require.NoError(t, err, "6 GPUs: KAI binds the whole gang\n%s", kai.Report(ctx, ns))
}

// normalized is a PodGroup without what differs between two copies of one workload: the
// namespace, the workload's name and UID (in the PodGroup's name and annotations), and what KAI
// and the API server write later.
func normalized(pg *v2alpha2.PodGroup, workload client.Object) string {
	b, _ := json.Marshal(map[string]any{"name": pg.Name, "labels": pg.Labels, "annotations": pg.Annotations,
		"owner": pg.OwnerReferences, "spec": pg.Spec})
	s := strings.ReplaceAll(string(b), string(workload.GetUID()), "UID")
	return strings.ReplaceAll(s, pg.Namespace, "NS")
}

// nativeAndUndefined creates, in ns, a JobSet (native in KAI v0.17: KAI's jobset plugin) and a
// TypoJob (no definition: KAI's default grouper) with their pods, waits until they are grouped,
// and returns their PodGroups normalized.
func nativeAndUndefined(t *testing.T, ctx context.Context, ns string) (jobSet, typoJob []string) {
	t.Helper()
	require.NoError(t, kai.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{stockLabel: ns}}}))
	js := read(t, "../../testdata/jobset-leader-workers.yaml", ns)
	require.NoError(t, kai.Client.Create(ctx, js))
	jsPods, err := kai.RunJobSet(ctx, js)
	require.NoError(t, err)
	for _, pg := range podGroupsOf(t, ctx, ns, jsPods) {
		jobSet = append(jobSet, normalized(pg, js))
	}
	typo := read(t, "../../testdata/customjob.yaml", ns)
	typo.SetKind("TypoJob")
	typo.SetName("typo")
	require.NoError(t, kai.Client.Create(ctx, typo))
	typoPods, err := kai.RunRoles(ctx, typo, 3, "coordinator", "worker")
	require.NoError(t, err)
	for _, pg := range podGroupsOf(t, ctx, ns, typoPods) {
		typoJob = append(typoJob, normalized(pg, typo))
	}
	return jobSet, typoJob
}

// TestInKAINativeAndUndefinedAsStockKAI: a JobSet (KAI v0.17 has a native plugin) is grouped by
// gangmap-kai-podgrouper exactly as by KAI's own pod-grouper binary (v0.17.0, with
// --generic-karta-fallback=false), and a TypoJob (a kind with neither a native plugin nor a
// definition) gets KAI's default PodGroup (pg-<name>-<uid>, minMember 1) from both: the same
// workload and pods in two namespaces, one grouped by each binary in turn (never both at once).
func TestInKAINativeAndUndefinedAsStockKAI(t *testing.T) {
	ctx := context.Background()
	gmJobSet, gmTypo := nativeAndUndefined(t, ctx, "inkai-native-gangmap")

	require.NoError(t, podGrouper.Stop())
	// KAI's own pod-grouper only on its namespace (--namespace-label-selector): it would give the
	// other tests' CustomJob and LLMInferenceService pods its default PodGroups.
	const stockNS = "inkai-native-stock"
	require.NoError(t, kai.StartPodGrouper(ctx, "--generic-karta-fallback=false", "--namespace-label-selector="+stockLabel+"="+stockNS))
	stockJobSet, stockTypo := nativeAndUndefined(t, ctx, stockNS)
	require.NoError(t, kai.StopPodGrouper())
	require.NoError(t, podGrouper.Start(ctx))

	require.NotEmpty(t, gmJobSet)
	assert.Equal(t, stockJobSet, gmJobSet, "the JobSet's PodGroups: KAI's jobset plugin either way")
	require.Len(t, gmTypo, 1)
	assert.Equal(t, stockTypo, gmTypo, "the TypoJob's PodGroup: KAI's default grouper either way")
	assert.Contains(t, gmTypo[0], `"name":"pg-typo-UID"`)
	assert.Contains(t, gmTypo[0], `"minMember":1`)
	t.Logf("JobSet: %v", gmJobSet)
	t.Logf("TypoJob: %v", gmTypo)
}

// TestInKAIRestartNeverPartial: a CustomJob (defined only by a cluster Karta) and its pods created
// while gangmap-kai-podgrouper is down are never admitted in part: while it is down, KAI binds no
// pod without a PodGroup; when it starts again, its hub answers Waiting (an error, retried) until
// the Karta is loaded, so no pod ever gets KAI's default minMember-1 PodGroup: the namespace only
// ever holds the gang's PodGroup, KAI binds none of the pods on 4 GPUs, and all on 6.
func TestInKAIRestartNeverPartial(t *testing.T) {
	ctx := context.Background()
	ns := "inkai-restart"
	newBed(t, ns, 2, 2)
	require.NoError(t, podGrouper.Kill())
	job := read(t, "../../testdata/customjob.yaml", ns)
	require.NoError(t, kai.Client.Create(ctx, job))
	pods, err := kai.RunRoles(ctx, job, 3, "coordinator", "worker")
	require.NoError(t, err)
	p, err := kai.AssertNoneBound(ctx, ns, labels.Everything(), holdPeriod/2)
	require.NoError(t, err, "no pod-grouper: no PodGroup, KAI binds nothing")
	assert.Len(t, p.Pending, 3)

	require.NoError(t, podGrouper.Start(ctx))
	pgs := podGroupsOf(t, ctx, ns, pods)
	require.Len(t, pgs, 1)
	p, err = kai.AssertNoneBound(ctx, ns, labels.Everything(), holdPeriod)
	require.NoError(t, err, "4 GPUs for a 5-GPU gang: none bound after the restart")
	all := &v2alpha2.PodGroupList{}
	require.NoError(t, kai.Client.List(ctx, all, client.InNamespace(ns)))
	require.Len(t, all.Items, 1, "only the gang's PodGroup was ever written: %s", kai.Report(ctx, ns))
	assert.Equal(t, fmt.Sprintf("pg-%s-customjob", job.GetUID()), all.Items[0].Name)
	lines := podGrouper.Grep(5, "still loading")
	t.Logf("pods retried while the definitions loaded: %d log lines (first: %v)", len(lines), lines)

	addNodes(t, ns, 2, 1, 2)
	_, err = kai.WaitAllBound(ctx, ns, labels.Everything(), 3, admitTimeout)
	require.NoError(t, err, "6 GPUs: KAI binds the whole gang\n%s", kai.Report(ctx, ns))
}
