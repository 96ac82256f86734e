//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/runtime/crdlint"
	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
)

// The findings' grace periods of the shared grouper (main_test.go): short, so that the e2e
// sees MoreThanPlanned and GangUnsatisfiable in seconds.
var findingsConfig = findings.Config{MoreThanPlannedGrace: 3 * time.Second, GangUnsatisfiableGrace: 5 * time.Second, ResendInterval: time.Minute}

const findingsGroup = "findings.example.com"

// findingsKind installs a CRD findings.example.com/v1 kind shaped like the CustomJob (its spec
// kept as is) and a cluster Karta for it: testdata/customjob-karta.yaml (coordinator and worker,
// told apart by the pod label e2e.example.com/role) changed by edit. It returns the Karta.
func findingsKind(t *testing.T, ctx context.Context, kind string, edit func(k *unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	return findingsKindSchema(t, ctx, kind, apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}, edit)
}

// findingsKindSchema is findingsKind with the CRD's schema of spec.
func findingsKindSchema(t *testing.T, ctx context.Context, kind string, spec apiextensionsv1.JSONSchemaProps, edit func(k *unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	plural := strings.ToLower(kind) + "s"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + findingsGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: findingsGroup, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": spec,
						// The definitions read .status: an operator's CRD declares it (the API
						// server prunes fields a structural schema does not declare, and the
						// grouper's CRD lint refuses a path the schema says cannot exist).
						"status": {Type: "object", XPreserveUnknownFields: ptrTo(true)},
					}}}}},
		},
	}
	// The test client's scheme has no apiextensions types: the CRD goes as unstructured.
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	require.NoError(t, cp.Client.Create(ctx, u))
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(u.GroupVersionKind())
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if c, _ := c.(map[string]any); c["type"] == string(apiextensionsv1.Established) && c["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	}))
	k, err := framework.KartaFor("testdata/customjob-karta.yaml", strings.ToLower(kind), findingsGroup, kind)
	require.NoError(t, err)
	if edit != nil {
		edit(k)
	}
	require.NoError(t, cp.Client.Create(ctx, k))
	return k
}

// findingsJob creates the CustomJob of testdata/customjob.yaml (1 coordinator, 2 workers) as a
// findings.example.com/v1 kind in ns.
func findingsJob(t *testing.T, ctx context.Context, ns, kind string) *unstructured.Unstructured {
	t.Helper()
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	job, err := framework.ReadObject("testdata/customjob.yaml")
	require.NoError(t, err)
	job.SetAPIVersion(findingsGroup + "/v1")
	job.SetKind(kind)
	job.SetNamespace(ns)
	// The Karta must be active before the first pod comes (the registry learns it by a watch).
	require.NoError(t, framework.WaitFor(ctx, timeout, func(context.Context) (bool, error) {
		return grouper.Registry.Lookup(job.GroupVersionKind()) != nil, nil
	}))
	require.NoError(t, cp.Client.Create(ctx, job))
	return job
}

// component returns the Karta's child component named name.
func component(t *testing.T, k *unstructured.Unstructured, name string) map[string]any {
	t.Helper()
	cs, _, err := unstructured.NestedSlice(k.Object, "spec", "structureDefinition", "childComponents")
	require.NoError(t, err)
	for _, c := range cs {
		if m := c.(map[string]any); m["name"] == name {
			return m
		}
	}
	t.Fatalf("no component %s", name)
	return nil
}

// setComponents replaces the Karta's child components by cs.
func setComponents(t *testing.T, k *unstructured.Unstructured, cs ...map[string]any) {
	t.Helper()
	items := make([]any, len(cs))
	for i, c := range cs {
		items[i] = c
	}
	require.NoError(t, unstructured.SetNestedSlice(k.Object, items, "spec", "structureDefinition", "childComponents"))
}

// waitEvent waits for an Event in ns ("" for all) on the named object with the reason and a
// message containing text, and returns it.
func waitEvent(t *testing.T, ctx context.Context, ns, name, reason, text string, within time.Duration) *corev1.Event {
	t.Helper()
	var found *corev1.Event
	err := framework.WaitFor(ctx, within, func(ctx context.Context) (bool, error) {
		evs, err := cp.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i, e := range evs.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason && strings.Contains(e.Message, text) {
				found = &evs.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "event %s on %s mentioning %q within %v", reason, name, text, within)
	return found
}

// findingsEvents returns the findings Warning Events on the named object.
func findingsEvents(t *testing.T, ctx context.Context, ns, name string) []string {
	t.Helper()
	evs, err := cp.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var out []string
	for _, e := range evs.Items {
		for _, r := range findings.Reasons {
			if e.InvolvedObject.Name == name && e.Reason == string(r) {
				out = append(out, e.Reason+": "+e.Message)
			}
		}
	}
	return out
}

// gauge reads gangmap_gang_findings{kind,definition,reason} from the grouper's metrics registry.
func gauge(t *testing.T, kind, definition string, reason findings.Reason) float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "gangmap_gang_findings" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["kind"] == kind && l["definition"] == definition && l["reason"] == string(reason) {
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// health reads the gangmap.io/health annotation of the PodGroup (nil when absent).
func health(t *testing.T, ctx context.Context, ns, name string) *findings.Health {
	t.Helper()
	pg := &v2alpha2.PodGroup{}
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg))
	v, ok := pg.Annotations[findings.HealthAnnotation]
	if !ok {
		return nil
	}
	h, err := findings.ParseHealth(v)
	require.NoError(t, err)
	return h
}

func ptrTo[T any](v T) *T { return &v }

// TestFindingUnclaimedPods: the definition's worker selector asks for the label value
// "workers", while the operator labels worker pods "worker" (the CustomJob's template). The two
// worker pods match no component: UnclaimedPods on the workload and the Karta, and the metric,
// within seconds of the pods' creation.
func TestFindingUnclaimedPods(t *testing.T) {
	ctx := context.Background()
	kind := "UnclaimedJob"
	k := findingsKind(t, ctx, kind, func(k *unstructured.Unstructured) {
		w := component(t, k, "worker")
		w["podSelector"] = map[string]any{"componentTypeSelector": map[string]any{"keyPath": `.metadata.labels["e2e.example.com/role"]`, "value": "workers"}}
		setComponents(t, k, component(t, k, "coordinator"), w)
	})
	job := findingsJob(t, ctx, "find-unclaimed", kind)
	start := time.Now()
	for _, p := range []*corev1.Pod{customJobPod(t, job, "coordinator", "c-0"), customJobPod(t, job, "worker", "w-0"), customJobPod(t, job, "worker", "w-1")} {
		require.NoError(t, cp.Client.Create(ctx, p))
	}
	ev := waitEvent(t, ctx, job.GetNamespace(), job.GetName(), string(findings.UnclaimedPods), "2 pod(s) of the workload match no component's podSelector", 15*time.Second)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	waitEvent(t, ctx, "", k.GetName(), string(findings.UnclaimedPods), kind+" find-unclaimed/train", 5*time.Second)
	t.Logf("UnclaimedPods on the workload and the Karta %v after the pods' creation", time.Since(start).Round(100*time.Millisecond))
	assert.Equal(t, 1.0, gauge(t, kind, k.GetName(), findings.UnclaimedPods))
	pg := fmt.Sprintf("pg-%s-customjob", job.GetUID())
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		h := health(t, ctx, job.GetNamespace(), pg)
		return h != nil && !h.Healthy && len(h.Findings) > 0 && h.Findings[0].Reason == findings.UnclaimedPods, nil
	}), "the PodGroup's %s says UnclaimedPods", findings.HealthAnnotation)

	// The CLI: get's FINDINGS column, describe's section, and definitions --cluster per definition.
	stdout, stderr, code := runCLI(t, "get", strings.ToLower(kind)+"."+findingsGroup, "-n", job.GetNamespace())
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "FINDINGS")
	assert.Contains(t, stdout, "UnclaimedPods")
	stdout, stderr, code = runCLI(t, "describe", strings.ToLower(kind)+"."+findingsGroup+"/train", "-n", job.GetNamespace())
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "Findings (")
	assert.Contains(t, stdout, "  UnclaimedPods: 2 pod(s) of the workload match no component's podSelector")
	stdout, stderr, code = runCLI(t, "definitions", "--cluster")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, k.GetName()+" (cluster:"+k.GetName()+"): findings: UnclaimedPods on 1 workload(s), e.g. "+kind+" find-unclaimed/train")
}

// TestFindingMoreThanPlanned: the definition counts one pod per worker replica, the operator
// (as a framework running two processes per replica would) creates two per replica: 4 live
// worker pods for a plan of 2. MoreThanPlanned is reported once the grace period has passed,
// never before.
func TestFindingMoreThanPlanned(t *testing.T) {
	ctx := context.Background()
	kind := "OvercountJob"
	k := findingsKind(t, ctx, kind, nil)
	job := findingsJob(t, ctx, "find-overcount", kind)
	start := time.Now()
	pods := []*corev1.Pod{customJobPod(t, job, "coordinator", "c-0")}
	for r := 0; r < 2; r++ {
		for p := 0; p < 2; p++ {
			pods = append(pods, customJobPod(t, job, "worker", fmt.Sprintf("w-%d-%d", r, p)))
		}
	}
	for _, p := range pods {
		require.NoError(t, cp.Client.Create(ctx, p))
	}
	ev := waitEvent(t, ctx, job.GetNamespace(), job.GetName(), string(findings.MoreThanPlanned), "4 live pods", 20*time.Second)
	assert.Contains(t, ev.Message, "role worker: 4 live pods for")
	assert.Contains(t, ev.Message, "the plan counts 2")
	elapsed := ev.FirstTimestamp.Time.Sub(start.Truncate(time.Second))
	assert.GreaterOrEqual(t, elapsed, findingsConfig.MoreThanPlannedGrace-time.Second, "reported only after the grace period")
	waitEvent(t, ctx, "", k.GetName(), string(findings.MoreThanPlanned), "role worker", 5*time.Second)
	assert.Equal(t, 1.0, gauge(t, kind, k.GetName(), findings.MoreThanPlanned))
	assert.Len(t, findingsEvents(t, ctx, job.GetNamespace(), job.GetName()), 1, "one finding only")
}

// TestFindingGangUnsatisfiable: the definition adds a role "evaluator" the gang requires
// (1 replica) that this operator never creates. With the coordinator and workers running, the
// gang waits for the evaluator forever: GangUnsatisfiable after the grace period. Fixing the
// definition (the evaluator removed) clears the finding, with a Normal Event saying so.
func TestFindingGangUnsatisfiable(t *testing.T) {
	ctx := context.Background()
	kind := "UnsatJob"
	k := findingsKind(t, ctx, kind, func(k *unstructured.Unstructured) {
		ev := map[string]any{"name": "evaluator", "ownerRef": "customjob",
			"specDefinition":  map[string]any{"podTemplateSpecPath": ".spec.worker.template"},
			"scaleDefinition": map[string]any{"replicasPath": ".spec.coordinator.replicas"},
			"podSelector":     map[string]any{"componentTypeSelector": map[string]any{"keyPath": `.metadata.labels["e2e.example.com/role"]`, "value": "evaluator"}}}
		setComponents(t, k, component(t, k, "coordinator"), component(t, k, "worker"), ev)
		sgs := []any{map[string]any{"componentName": "coordinator"}, map[string]any{"componentName": "worker"}, map[string]any{"componentName": "evaluator"}}
		require.NoError(t, unstructured.SetNestedSlice(k.Object, sgs, "spec", "optimizationInstructions", "gangScheduling", "podGroup", "subGroups"))
	})
	job := findingsJob(t, ctx, "find-unsat", kind)
	start := time.Now()
	for _, p := range []*corev1.Pod{customJobPod(t, job, "coordinator", "c-0"), customJobPod(t, job, "worker", "w-0"), customJobPod(t, job, "worker", "w-1")} {
		require.NoError(t, cp.Client.Create(ctx, p))
	}
	pgName := fmt.Sprintf("pg-%s-customjob", job.GetUID())
	pg, err := cp.WaitForPodGroup(ctx, job.GetNamespace(), pgName, timeout)
	require.NoError(t, err)
	require.Equal(t, ptrTo[int32](3), pg.Spec.MinSubGroup, "the gang requires the evaluator")
	ev := waitEvent(t, ctx, job.GetNamespace(), job.GetName(), string(findings.GangUnsatisfiable), "role evaluator: the gang requires 1 pods of the role, 0 exist", 25*time.Second)
	assert.GreaterOrEqual(t, ev.FirstTimestamp.Time.Sub(start.Truncate(time.Second)), findingsConfig.GangUnsatisfiableGrace-time.Second, "reported only after the grace period")
	waitEvent(t, ctx, "", k.GetName(), string(findings.GangUnsatisfiable), "role evaluator", 5*time.Second)
	assert.Equal(t, 1.0, gauge(t, kind, k.GetName(), findings.GangUnsatisfiable))
	h := health(t, ctx, job.GetNamespace(), pgName)
	require.NotNil(t, h)
	assert.False(t, h.Healthy)

	// Fix the definition: no evaluator.
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(k.GroupVersionKind())
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(k), got))
	setComponents(t, got, component(t, got, "coordinator"), component(t, got, "worker"))
	sgs := []any{map[string]any{"componentName": "coordinator"}, map[string]any{"componentName": "worker"}}
	require.NoError(t, unstructured.SetNestedSlice(got.Object, sgs, "spec", "optimizationInstructions", "gangScheduling", "podGroup", "subGroups"))
	require.NoError(t, cp.Client.Update(ctx, got))
	waitEvent(t, ctx, job.GetNamespace(), job.GetName(), findings.ReasonCleared, "GangUnsatisfiable (role evaluator) cleared", 20*time.Second)
	waitEvent(t, ctx, "", k.GetName(), findings.ReasonCleared, "GangUnsatisfiable (role evaluator) cleared on "+kind, 5*time.Second)
	assert.Equal(t, 0.0, gauge(t, kind, k.GetName(), findings.GangUnsatisfiable))
	require.NoError(t, framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		h := health(t, ctx, job.GetNamespace(), pgName)
		return h != nil && h.Healthy && len(h.Findings) == 0, nil
	}), "the PodGroup's health annotation says healthy again")
}

// copyPod is old as a new pod named name (server-set fields and gangmap's marks cleared), with
// labels overriding old's, owned by owner.
func copyPod(old *corev1.Pod, name string, labels map[string]string, owner metav1.OwnerReference) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: old.Namespace, Labels: map[string]string{}, Annotations: map[string]string{}}, Spec: *old.Spec.DeepCopy()}
	for k, v := range old.Labels {
		if k != "kai.scheduler/subgroup-name" {
			p.Labels[k] = v
		}
	}
	for k, v := range labels {
		p.Labels[k] = v
	}
	p.OwnerReferences = []metav1.OwnerReference{owner}
	p.Spec.NodeName = ""
	return p
}

// assertNoFinding waits a little over both grace periods, then checks that the workload has no
// findings Warning Event and its PodGroups no unhealthy health annotation.
func assertNoFinding(t *testing.T, ctx context.Context, w *unstructured.Unstructured, step string) {
	t.Helper()
	time.Sleep(findingsConfig.GangUnsatisfiableGrace + 3*time.Second)
	assert.Empty(t, findingsEvents(t, ctx, w.GetNamespace(), w.GetName()), "%s: no finding on %s", step, w.GetName())
	pgs, err := cp.PodGroups(ctx, w.GetNamespace())
	require.NoError(t, err)
	for _, pg := range pgs {
		if v, ok := pg.Annotations[findings.HealthAnnotation]; ok {
			h, err := findings.ParseHealth(v)
			require.NoError(t, err)
			assert.True(t, h.Healthy, "%s: PodGroup %s: %s", step, pg.Name, v)
		}
	}
}

// TestNoFindingOnCorrectDefinitions: the catalog's JobSet and LWS definitions on workloads run as
// their operators run them give no finding: the seed JobSet scaled from 2 to 4 workers (two more
// Jobs of one pod each, as the JobSet controller creates them), suspended (pods deleted) and
// resumed (pods created again); an LWS scaled from 2 to 4 groups (a leader pod per group from the
// leader StatefulSet, and a worker StatefulSet per group owned by its leader pod).
func TestNoFindingOnCorrectDefinitions(t *testing.T) {
	ctx := context.Background()
	t.Run("JobSet", func(t *testing.T) {
		ns := "find-jobset"
		js, pods := runSeedJobSet(t, ctx, ns)
		_, err := cp.WaitForPodGroup(ctx, ns, fmt.Sprintf("pg-%s-jobset", js.GetUID()), timeout)
		require.NoError(t, err)
		assertNoFinding(t, ctx, js, "created")

		// Scale workers 2 → 4: the JobSet controller creates Jobs workers-2 and workers-3.
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(js), js))
		rjs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
		rjs[1].(map[string]any)["replicas"] = int64(4)
		require.NoError(t, unstructured.SetNestedSlice(js.Object, rjs, "spec", "replicatedJobs"))
		require.NoError(t, cp.Client.Update(ctx, js))
		worker := pods[1]
		require.Equal(t, "workers", worker.Labels[framework.LabelReplicatedJobName])
		for j := 2; j < 4; j++ {
			job := &batchv1.Job{}
			require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: js.GetName() + "-workers-0"}, job))
			nj := job.DeepCopy()
			nj.ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("%s-workers-%d", js.GetName(), j), Namespace: ns, Labels: nj.Labels, OwnerReferences: nj.OwnerReferences}
			nj.Labels[framework.LabelJobIndex] = fmt.Sprint(j)
			nj.Spec.Selector, nj.Spec.Template.Labels = nil, nil
			nj.Spec.ManualSelector = nil
			require.NoError(t, cp.Client.Create(ctx, nj))
			p := copyPod(worker, fmt.Sprintf("%s-0", nj.Name), map[string]string{framework.LabelJobIndex: fmt.Sprint(j)}, framework.OwnerRef(nj, "batch/v1", "Job"))
			require.NoError(t, cp.Client.Create(ctx, p))
			pods = append(pods, p)
		}
		assertNoFinding(t, ctx, js, "scaled to 4 workers")

		// Suspend: the operator deletes every pod. Resume: it creates them again.
		require.NoError(t, cp.Client.Patch(ctx, js, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"suspend":true}}`))))
		for _, p := range pods {
			require.NoError(t, cp.Client.Delete(ctx, p, client.GracePeriodSeconds(0)))
		}
		assertNoFinding(t, ctx, js, "suspended")
		require.NoError(t, cp.Client.Patch(ctx, js, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"suspend":false}}`))))
		for _, old := range pods {
			p := copyPod(old, old.Name+"-r", nil, old.OwnerReferences[0])
			require.NoError(t, cp.Client.Create(ctx, p))
		}
		assertNoFinding(t, ctx, js, "resumed")
	})
	t.Run("LeaderWorkerSet", func(t *testing.T) {
		ns := "find-lws"
		require.NoError(t, cp.CreateNamespace(ctx, ns))
		objs, err := cp.ApplyFile(ctx, "testdata/lws-replicas2-size4-8gpu-limits.yaml", ns)
		require.NoError(t, err)
		lws := objs[0]
		pods, err := cp.RunLeaderWorkerSet(ctx, lws)
		require.NoError(t, err)
		require.Len(t, pods, 8)
		assertNoFinding(t, ctx, lws, "created")

		// Scale 2 → 4 groups: the leader StatefulSet gets replicas 4 (leader pods 2 and 3), and
		// each new leader pod owns its group's worker StatefulSet and workers.
		require.NoError(t, cp.Client.Patch(ctx, lws, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":4}}`))))
		leader, worker := pods[0], pods[1]
		require.Equal(t, "0", leader.Labels[framework.LabelWorkerIndex])
		sts0 := &appsv1.StatefulSet{}
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: lws.GetName() + "-0"}, sts0))
		for g := 2; g < 4; g++ {
			lp := copyPod(leader, fmt.Sprintf("%s-%d", lws.GetName(), g), map[string]string{framework.LabelGroupIndex: fmt.Sprint(g)}, leader.OwnerReferences[0])
			require.NoError(t, cp.Client.Create(ctx, lp))
			ws := sts0.DeepCopy()
			ws.ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", lws.GetName(), g), Namespace: ns, OwnerReferences: []metav1.OwnerReference{framework.OwnerRef(lp, "v1", "Pod")}}
			require.NoError(t, cp.Client.Create(ctx, ws))
			for w := 1; w < 4; w++ {
				wp := copyPod(worker, fmt.Sprintf("%s-%d-%d", lws.GetName(), g, w), map[string]string{framework.LabelGroupIndex: fmt.Sprint(g), framework.LabelWorkerIndex: fmt.Sprint(w)}, framework.OwnerRef(ws, "apps/v1", "StatefulSet"))
				require.NoError(t, cp.Client.Create(ctx, wp))
			}
		}
		for g := 2; g < 4; g++ {
			_, err := cp.WaitForPodGroup(ctx, ns, fmt.Sprintf("pg-%s-group-%d", lws.GetUID(), g), timeout)
			require.NoError(t, err)
		}
		assertNoFinding(t, ctx, lws, "scaled to 4 groups")
	})
}

// TestCRDLintReportsPathOnKarta: a Karta whose worker replicasPath reads .spec.worker.replica
// (the CRD's schema has spec.worker.replicas) gets, within seconds of being applied and with no
// workload of its kind in the cluster, a Warning Event naming the definition field, the path
// and the nearest field the schema has, saying the definition is refused until it is fixed.
func TestCRDLintReportsPathOnKarta(t *testing.T) {
	ctx := context.Background()
	open := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}
	role := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"replicas": {Type: "integer"}, "template": open}}
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"coordinator": role, "worker": role}}
	start := time.Now()
	k := findingsKindSchema(t, ctx, "LintJob", spec, func(k *unstructured.Unstructured) {
		w := component(t, k, "worker")
		w["scaleDefinition"] = map[string]any{"replicasPath": ".spec.worker.replica"}
		setComponents(t, k, component(t, k, "coordinator"), w)
	})
	ev := waitEvent(t, ctx, "", k.GetName(), crdlint.ReasonPathCannotResolve, ".spec.worker.replica", 15*time.Second)
	t.Logf("Event %v after the CRD and Karta were applied: %s", time.Since(start).Round(100*time.Millisecond), ev.Message)
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	assert.Contains(t, ev.Message, "spec.structureDefinition.childComponents[1].scaleDefinition.replicasPath: .spec.worker.replica")
	assert.Contains(t, ev.Message, `did you mean "replicas"?`)
	assert.Contains(t, ev.Message, "the definition is refused until it is fixed", "a path the CRD cannot hold is an error: the grouper does not use the definition (podgrouper/runtime/crdlint)")
	var list unstructured.UnstructuredList
	list.SetAPIVersion(findingsGroup + "/v1")
	list.SetKind("LintJobList")
	require.NoError(t, cp.Client.List(ctx, &list))
	assert.Empty(t, list.Items, "no workload of the kind exists")
	assert.Empty(t, findingsEvents(t, ctx, "", k.GetName()), "the other paths are fine")

	// gangmap definitions --cluster lints as the grouper does: the Karta is listed not active,
	// with the grouper's problem (issue 31 point 8: it was ACTIVE yes).
	stdout, stderr, code := runCLI(t, "definitions", "--cluster", "-o", "json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	var doc struct {
		Definitions []struct {
			Name     string   `json:"name"`
			Active   bool     `json:"active"`
			Problems []string `json:"problems"`
		} `json:"definitions"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	seen := false
	for _, d := range doc.Definitions {
		if d.Name == k.GetName() {
			seen = true
			assert.False(t, d.Active, "a definition the grouper refuses is not listed active")
			assert.Contains(t, strings.Join(d.Problems, "\n"), "spec.structureDefinition.childComponents[1].scaleDefinition.replicasPath: .spec.worker.replica")
		}
	}
	assert.True(t, seen, "the Karta is listed")
}
