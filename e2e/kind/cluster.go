// Helpers of the kind e2e (kind_test.go, build tag kind). They are in a file without the tag so
// that `go vet ./...` and `go build ./...` (make test) compile them on every machine, Docker or not.

package kind

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

const (
	testNamespace = "gangmap-e2e"
	parentQueue   = "gangmap-e2e-parent"
	queue         = "gangmap-e2e"
	gpu           = corev1.ResourceName("nvidia.com/gpu")
	roleLabel     = "e2e.example.com/role"
	fieldOwner    = client.FieldOwner("gangmap-e2e-kind")
	// pauseImage is preloaded on kind's node images (the pod sandbox image).
	pauseImage = "registry.k8s.io/pause:3.10"
)

var (
	schedulerName  = envOr("KAI_SCHEDULER_NAME", "kai-scheduler")
	gangmapNS      = envOr("GANGMAP_NAMESPACE", "gangmap-system")
	metricsService = envOr("GANGMAP_METRICS_SERVICE", "gangmap-metrics")
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// env is the cluster the test talks to.
type env struct {
	c    client.Client
	cs   kubernetes.Interface
	node string // the GPU node
}

func connect(t *testing.T) *env {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatalf("KUBECONFIG: %v", err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, v2alpha2.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &env{c: c, cs: kubernetes.NewForConfigOrDie(cfg)}
}

func poll(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) (bool, error)) error {
	return wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, cond)
}

// applyFile server-side applies every object of a YAML file.
func (e *env) applyFile(t *testing.T, ctx context.Context, path, namespace string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(b), "\n---") {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if namespace != "" && u.GetNamespace() == "" && u.GetKind() != "CustomResourceDefinition" && u.GetKind() != "Karta" {
			u.SetNamespace(namespace)
		}
		e.apply(t, ctx, u)
		out = append(out, u)
	}
	return out
}

func (e *env) apply(t *testing.T, ctx context.Context, u *unstructured.Unstructured) {
	t.Helper()
	u.SetManagedFields(nil)
	u.SetResourceVersion("")
	if err := e.c.Patch(ctx, u, client.Apply, fieldOwner, client.ForceOwnership); err != nil {
		t.Fatalf("applying %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

func (e *env) waitCRD(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	err := poll(ctx, 3*time.Minute, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := e.c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("CRD %s not established: %v", name, err)
	}
}

// setup applies the CustomJob CRD and its Karta, a parent and a leaf KAI queue, the priority class
// KAI's default metadata names, and waits until gangmap has the Karta active.
func (e *env) setup(t *testing.T, ctx context.Context) {
	t.Helper()
	e.waitCRD(t, ctx, "kartas.run.ai") // installed by gangmap's chart
	e.applyFile(t, ctx, "../testdata/crds/e2e.example.com_customjobs.yaml", "")
	e.waitCRD(t, ctx, "customjobs.e2e.example.com")
	e.applyFile(t, ctx, "../testdata/customjob-karta.yaml", "")

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}
	if err := e.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	unlimited := map[string]any{"quota": int64(-1), "limit": int64(-1), "overQuotaWeight": int64(1)}
	for _, q := range []struct{ name, parent string }{{parentQueue, ""}, {queue, parentQueue}} {
		spec := map[string]any{"resources": map[string]any{"cpu": unlimited, "gpu": unlimited, "memory": unlimited}}
		if q.parent != "" {
			spec["parentQueue"] = q.parent
		}
		e.apply(t, ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": map[string]any{"name": q.name}, "spec": spec,
		}})
	}
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: kaikeys.DefaultPriorityClass}, Value: 50,
		Description: "KAI's train priority (created by gangmap's kind e2e when absent)"}
	if err := e.c.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	// The GPU node: the one worker (or $GPU_NODE), labelled as fake-gpu-operator labels its nodes.
	e.node = os.Getenv("GPU_NODE")
	if e.node == "" {
		nodes := &corev1.NodeList{}
		if err := e.c.List(ctx, nodes); err != nil {
			t.Fatal(err)
		}
		var workers []string
		for _, n := range nodes.Items {
			if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; !cp {
				workers = append(workers, n.Name)
			}
		}
		if len(workers) != 1 {
			t.Fatalf("want exactly one worker node to hold the fake GPUs, found %v (set GPU_NODE)", workers)
		}
		e.node = workers[0]
	}
	patch := []byte(`{"metadata":{"labels":{"nvidia.com/gpu.present":"true","nvidia.com/gpu.product":"Fake-GPU","nvidia.com/gpu.memory":"81920","nvidia.com/gpu.count":"8"}}}`)
	if err := e.c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: e.node}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}

	// gangmap loads Kartas from the cluster (it polls for the CRD every 30s until it is served).
	err := poll(ctx, 3*time.Minute, func(ctx context.Context) (bool, error) {
		return clusterDefinitionsActive(ctx, e.cs) >= 1, nil
	})
	if err != nil {
		t.Fatalf("gangmap never reported the CustomJob Karta active (gangmap_definitions{source=\"cluster\",state=\"active\"} via Service %s/%s): %v", gangmapNS, metricsService, err)
	}
}

// clusterDefinitionsActive reads gangmap_definitions{source="cluster",state="active"} from the
// grouper's metrics through the API server's service proxy.
func clusterDefinitionsActive(ctx context.Context, cs kubernetes.Interface) int {
	raw, err := cs.CoreV1().Services(gangmapNS).ProxyGet("http", metricsService, "metrics", "/metrics", nil).DoRaw(ctx)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, `gangmap_definitions{source="cluster",state="active"} `) {
			v, _ := strconv.ParseFloat(strings.Fields(line)[1], 64)
			return int(v)
		}
	}
	return 0
}

// setGPUs sets the GPU node's nvidia.com/gpu capacity and allocatable (the kubelet keeps an
// extended resource no device plugin owns, and derives allocatable from capacity).
func (e *env) setGPUs(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"status":{"capacity":{%[1]q:"%[2]d"},"allocatable":{%[1]q:"%[2]d"}}}`, gpu, n))
	if _, err := e.cs.CoreV1().Nodes().Patch(ctx, e.node, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("setting %d GPUs on %s: %v", n, e.node, err)
	}
	err := poll(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		node, err := e.cs.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		q := node.Status.Allocatable[gpu]
		return q.Value() == int64(n), nil
	})
	if err != nil {
		t.Fatalf("node %s never showed %d allocatable GPUs: %v", e.node, n, err)
	}
	t.Logf("node %s: %d GPUs", e.node, n)
}

// gang is a CustomJob (1 coordinator with 1 GPU, 2 workers with 2 GPUs each: 3 pods, 5 GPUs) and
// the pods its operator would create (the test plays the operator).
type gang struct {
	job  *unstructured.Unstructured
	pods []*corev1.Pod
}

func podTemplate(role string, gpus int) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"labels": map[string]any{roleLabel: role}},
		"spec": map[string]any{
			"schedulerName": schedulerName,
			"containers": []any{map[string]any{"name": "main", "image": pauseImage,
				"resources": map[string]any{"limits": map[string]any{string(gpu): int64(gpus)}}}},
		},
	}
}

func (e *env) createGang(t *testing.T, ctx context.Context, name string) *gang {
	t.Helper()
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.example.com/v1", "kind": "CustomJob",
		"metadata": map[string]any{"name": name, "namespace": testNamespace, "labels": map[string]any{kaikeys.DefaultQueueLabel: queue}},
		"spec": map[string]any{
			"coordinator": map[string]any{"replicas": int64(1), "template": podTemplate("coordinator", 1)},
			"worker":      map[string]any{"replicas": int64(2), "template": podTemplate("worker", 2)},
		},
	}}
	if err := e.c.Create(ctx, job); err != nil {
		t.Fatalf("creating CustomJob %s: %v", name, err)
	}
	g := &gang{job: job}
	owner := metav1.OwnerReference{APIVersion: "e2e.example.com/v1", Kind: "CustomJob", Name: name, UID: job.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	for _, p := range []struct {
		role string
		i    int
		gpus int64
	}{{"coordinator", 0, 1}, {"worker", 0, 2}, {"worker", 1, 2}} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", name, p.role, p.i), Namespace: testNamespace,
				Labels:          map[string]string{roleLabel: p.role, kaikeys.DefaultQueueLabel: queue},
				OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: corev1.PodSpec{
				SchedulerName:                 schedulerName,
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers: []corev1.Container{{Name: "main", Image: pauseImage, ImagePullPolicy: corev1.PullIfNotPresent,
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{gpu: *resource.NewQuantity(p.gpus, resource.DecimalSI)}}}},
			},
		}
		if err := e.c.Create(ctx, pod); err != nil {
			t.Fatalf("creating pod %s: %v", pod.Name, err)
		}
		// The create response carries the admission webhook's mutation: gangmap gave the pod its
		// PodGroup and KAI's skip annotation before KAI's pod-grouper could see it.
		if pod.Annotations[kaikeys.SkipPodGrouper] != "true" || pod.Annotations[kaikeys.PodGroupName] == "" {
			t.Errorf("pod %s was created without gangmap's webhook mutation (annotations %v)", pod.Name, pod.Annotations)
		}
		g.pods = append(g.pods, pod)
	}
	return g
}

func (e *env) current(ctx context.Context, g *gang) ([]corev1.Pod, error) {
	var out []corev1.Pod
	for _, p := range g.pods {
		cur := &corev1.Pod{}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return nil, err
		}
		out = append(out, *cur)
	}
	return out, nil
}

func (e *env) waitAllScheduled(t *testing.T, ctx context.Context, g *gang, timeout time.Duration) {
	t.Helper()
	var unbound []string
	err := poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		pods, err := e.current(ctx, g)
		if err != nil {
			return false, err
		}
		unbound = nil
		for _, p := range pods {
			if p.Spec.NodeName == "" {
				unbound = append(unbound, p.Name)
			}
		}
		return len(unbound) == 0, nil
	})
	if err != nil {
		t.Fatalf("the gang was not scheduled within %v: unbound %v (%v)", timeout, unbound, err)
	}
}

// assertNoneBound checks, for the whole period, that no pod of the gang is bound to a node.
func (e *env) assertNoneBound(t *testing.T, ctx context.Context, g *gang, period time.Duration) {
	t.Helper()
	deadline := time.Now().Add(period)
	for time.Now().Before(deadline) {
		pods, err := e.current(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				t.Fatalf("pod %s was bound to %s while the gang cannot fit whole: the gang was not admitted all-or-nothing", p.Name, p.Spec.NodeName)
			}
		}
		time.Sleep(2 * time.Second)
	}
}

// assertOnePodGroup checks that the gang has exactly gangmap's PodGroup: pg-<job UID>-customjob,
// owned by the CustomJob, sub-groups coordinator (1) and worker (2), every pod in it with its
// sub-group label, and no other PodGroup in the namespace (KAI's pod-grouper would have made one
// per pod, owned by the pod).
func (e *env) assertOnePodGroup(t *testing.T, ctx context.Context, g *gang) {
	t.Helper()
	want := fmt.Sprintf("pg-%s-customjob", g.job.GetUID())
	var pg *v2alpha2.PodGroup
	err := poll(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		pg = &v2alpha2.PodGroup{}
		return e.c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: want}, pg) == nil, nil
	})
	if err != nil {
		t.Fatalf("PodGroup %s never appeared: %v", want, err)
	}
	if len(pg.OwnerReferences) != 1 || pg.OwnerReferences[0].UID != g.job.GetUID() {
		t.Errorf("PodGroup %s owners %+v, want the CustomJob", want, pg.OwnerReferences)
	}
	if pg.Spec.MinSubGroup == nil || *pg.Spec.MinSubGroup != 2 || pg.Spec.Queue != queue {
		t.Errorf("PodGroup %s: minSubGroup %v queue %q, want 2 and %q", want, pg.Spec.MinSubGroup, pg.Spec.Queue, queue)
	}
	subs := map[string]int32{}
	for _, sg := range pg.Spec.SubGroups {
		subs[sg.Name] = ptr.Deref(sg.MinMember, -1)
	}
	if len(subs) != 2 || subs["coordinator"] != 1 || subs["worker"] != 2 {
		t.Errorf("PodGroup %s sub-groups %v, want coordinator:1 worker:2", want, subs)
	}
	pods, err := e.current(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Annotations[kaikeys.PodGroupName] != want || p.Labels[kaikeys.SubGroupName] != p.Labels[roleLabel] || p.Annotations[kaikeys.SkipPodGrouper] != "true" {
			t.Errorf("pod %s: pod-group-name %q sub-group %q skip %q; want %s, %s, true", p.Name,
				p.Annotations[kaikeys.PodGroupName], p.Labels[kaikeys.SubGroupName], p.Annotations[kaikeys.SkipPodGrouper], want, p.Labels[roleLabel])
		}
	}
	all := &v2alpha2.PodGroupList{}
	if err := e.c.List(ctx, all, client.InNamespace(testNamespace)); err != nil {
		t.Fatal(err)
	}
	var others []string
	for _, o := range all.Items {
		if o.Name != want {
			others = append(others, fmt.Sprintf("%s (owners %v)", o.Name, ownerKinds(o.OwnerReferences)))
		}
	}
	if len(others) > 0 {
		t.Errorf("PodGroups besides gangmap's %s: %v (KAI's pod-grouper grouped the pods too)", want, others)
	}
}

func ownerKinds(refs []metav1.OwnerReference) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.Kind+"/"+r.Name)
	}
	return out
}

// deleteGang deletes the pods and the CustomJob and waits until the pods and the PodGroup
// (garbage collected with the CustomJob) are gone, so their GPUs are free.
func (e *env) deleteGang(t *testing.T, ctx context.Context, g *gang) {
	t.Helper()
	for _, p := range g.pods {
		if err := e.c.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	if err := e.c.Delete(ctx, g.job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	err := poll(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		pgs := &v2alpha2.PodGroupList{}
		if err := e.c.List(ctx, pods, client.InNamespace(testNamespace)); err != nil {
			return false, err
		}
		if err := e.c.List(ctx, pgs, client.InNamespace(testNamespace)); err != nil {
			return false, err
		}
		return len(pods.Items) == 0 && len(pgs.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("gang %s not gone: %v", g.job.GetName(), err)
	}
}

// dump logs what a failed run needs: pods, PodGroups and Events of the test namespace, and the
// grouper's log.
func (e *env) dump(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pods := &corev1.PodList{}
	_ = e.c.List(ctx, pods, client.InNamespace(testNamespace))
	for _, p := range pods.Items {
		t.Logf("pod %s: node %q phase %s annotations %v labels %v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Annotations, p.Labels)
	}
	pgs := &v2alpha2.PodGroupList{}
	_ = e.c.List(ctx, pgs, client.InNamespace(testNamespace))
	for _, pg := range pgs.Items {
		b, _ := yaml.Marshal(pg)
		t.Logf("PodGroup:\n%s", b)
	}
	events := &corev1.EventList{}
	_ = e.c.List(ctx, events, client.InNamespace(testNamespace))
	sort.Slice(events.Items, func(i, j int) bool { return events.Items[i].LastTimestamp.Before(&events.Items[j].LastTimestamp) })
	for _, ev := range events.Items {
		t.Logf("event %s %s/%s %s: %s", ev.Type, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, ev.Message)
	}
	gm := &corev1.PodList{}
	_ = e.c.List(ctx, gm, client.InNamespace(gangmapNS))
	for _, p := range gm.Items {
		raw, err := e.cs.CoreV1().Pods(gangmapNS).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: ptr.To[int64](200)}).DoRaw(ctx)
		if err != nil {
			raw = []byte(err.Error())
		}
		t.Logf("log of %s/%s (last 200 lines):\n%s", gangmapNS, p.Name, bytes.TrimSpace(raw))
	}
}
