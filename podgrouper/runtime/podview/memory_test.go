package podview

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/internal/heapmeasure"
)

// runningPodJSON is the JobSet worker pod of the webhook's benchmark as the informer sees it once
// running: with the kubelet's status (conditions, container status, IPs) and a second managed
// fields entry (the kubelet's status updates).
func runningPodJSON(tb testing.TB) []byte {
	tb.Helper()
	raw, err := os.ReadFile("../webhook/testdata/jobset-worker-pod.json")
	if err != nil {
		tb.Fatal(err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(raw, &pod); err != nil {
		tb.Fatal(err)
	}
	now := metav1.Unix(1764590000, 0)
	pod.Spec.NodeName = "gpu-node-0017"
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, HostIP: "10.0.3.17", PodIP: "10.244.17.23", StartTime: &now, QOSClass: corev1.PodQOSBestEffort,
		HostIPs: []corev1.HostIP{{IP: "10.0.3.17"}}, PodIPs: []corev1.PodIP{{IP: "10.244.17.23"}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "trainer", Ready: true, Started: new(bool), Image: "registry.example/trainer:1.0",
			ImageID:     "registry.example/trainer@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			ContainerID: "containerd://4b227777d4dd1fc61c6f884f48641d02b4d121d3fd328cb08b5531fcacdabf8a",
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
	}
	for _, t := range []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	pod.ManagedFields = append(pod.ManagedFields, metav1.ManagedFieldsEntry{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: "v1", Time: &now, FieldsType: "FieldsV1", Subresource: "status",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"PodReadyToStartContainers\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.244.17.23\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`)}})
	out, err := json.Marshal(&pod)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// heapPerObject stores n objects made by mk in an informer's store (client-go's thread-safe
// indexer with the namespace index, as controller-runtime's cache has) and returns the live heap
// the store holds per object, from runtime.MemStats after a GC.
func heapPerObject(tb testing.TB, n int, mk func(i int) any) float64 {
	tb.Helper()
	store := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	before := heapmeasure.Live()
	for i := 0; i < n; i++ {
		if err := store.Add(mk(i)); err != nil {
			tb.Fatal(err)
		}
	}
	after := heapmeasure.Live()
	runtime.KeepAlive(store)
	return float64(after-before) / float64(n)
}

// decodedPod decodes the pod JSON with a distinct name and UID, as each pod of an informer is
// decoded from its own bytes (no strings shared between pods).
func decodedPod(tb testing.TB, raw []byte, i int) *corev1.Pod {
	var pod corev1.Pod
	if err := json.Unmarshal(raw, &pod); err != nil {
		tb.Fatal(err)
	}
	pod.Name = fmt.Sprintf("train-llm-workers-1-0-%06d", i)
	pod.UID = types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
	// Each pod its own Job, as a JobSet's pods with parallelism 1: the Job's name and UID (labels
	// and owner reference) and the Job's index differ from pod to pod, so no two pods have equal
	// labels, annotations or owner references (the worst case for podview's sharing of those).
	job, jobUID := fmt.Sprintf("train-llm-workers-%d", i), fmt.Sprintf("6c1f0d2e-9a4b-4f7e-8a51-%012d", i)
	for _, k := range []string{"batch.kubernetes.io/job-name", "job-name"} {
		pod.Labels[k] = job
	}
	for _, k := range []string{"batch.kubernetes.io/controller-uid", "controller-uid"} {
		pod.Labels[k] = jobUID
	}
	for _, m := range []map[string]string{pod.Labels, pod.Annotations} {
		m["jobset.sigs.k8s.io/job-index"], m["jobset.sigs.k8s.io/job-global-index"] = fmt.Sprint(i), fmt.Sprint(i+1)
	}
	pod.OwnerReferences[0].Name, pod.OwnerReferences[0].UID = job, types.UID(jobUID)
	return &pod
}

// BenchmarkCachedPodBytes reports the live heap one cached pod costs, as the grouper's informer
// holds it: the whole pod (no transform), the view TransformPod keeps (a typed pod), and the
// Record ToRecord makes (the grouper's pod cache, podcache). Goal (issue 19): the grouper
// within 256 MiB resident with 100,000 cached pods and 10,000 workloads.
func BenchmarkCachedPodBytes(b *testing.B) {
	raw := runningPodJSON(b)
	const n = 20000
	for _, tc := range []struct {
		name      string
		transform func(any) (any, error)
	}{{"whole-pod", nil}, {"view", TransformPod}, {"record", func(o any) (any, error) { return ToRecord(o.(*corev1.Pod)), nil }}} {
		b.Run(tc.name, func(b *testing.B) {
			var per float64
			for i := 0; i < b.N; i++ {
				per = heapPerObject(b, n, func(i int) any {
					var obj any = decodedPod(b, raw, i)
					if tc.transform != nil {
						obj, _ = tc.transform(obj)
					}
					return obj
				})
			}
			b.ReportMetric(per, "bytes/pod")
			b.ReportMetric(per*100000/(1<<20), "MiB/100k-pods")
		})
	}
}

// BenchmarkCachedWorkloadBytes reports the live heap one cached workload costs, read
// unstructured as the grouper's cache does, with and without TransformWorkload: the seed JobSet
// with a controller's managed fields, and the scale benchmark's CustomJob (e2e/scale: 670 bytes
// of JSON, one managed-fields entry), whose cost is almost all Go maps (about 330 B each, 21 of
// them), not content. "interned" is the grouper's transform (Interner): n workloads of one
// template, each decoded from its own JSON with its own name and UID, share their equal subtrees.
func BenchmarkCachedWorkloadBytes(b *testing.B) {
	const n = 10000
	ownImage := func(u *unstructured.Unstructured, i int) {
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "worker", "template", "spec", "containers")
		cs[0].(map[string]any)["image"] = fmt.Sprintf("registry.example/worker:%d", i)
		_ = unstructured.SetNestedSlice(u.Object, cs, "spec", "worker", "template", "spec", "containers")
	}
	// As the API server serves the scale run's CustomJob once gangmap marked it: a
	// resourceVersion, generation, creation time (workloads created 60 ms apart) and KAI's and
	// gangmap's skip annotations, so its metadata map holds 8 entries.
	stored := func(u *unstructured.Unstructured, i int) {
		u.SetResourceVersion(fmt.Sprint(100000 + 13*i))
		u.SetGeneration(1)
		u.SetCreationTimestamp(metav1.Unix(1764639600+int64(i)*60/1000, 0))
		u.SetAnnotations(map[string]string{"kai.scheduler/skip-podgrouper": "true", "gangmap.io/skip-podgrouper": "set"})
	}
	for _, w := range []struct {
		name, file string
		mf         []metav1.ManagedFieldsEntry
		mutate     func(*unstructured.Unstructured, int)
	}{
		{"jobset", "../../../gang/testdata/jobset-leader-workers.yaml", jobSetManagedFields, nil},
		{"customjob", "../../../e2e/testdata/customjob.yaml", jobSetManagedFields[:1], nil},
		{"customjob-stored", "../../../e2e/testdata/customjob.yaml", jobSetManagedFields, stored},
		// Each CustomJob with its own worker image: the worker's template is its own, the
		// coordinator's is shared.
		{"customjob-own-image", "../../../e2e/testdata/customjob.yaml", jobSetManagedFields[:1], ownImage},
	} {
		raw, err := os.ReadFile(w.file)
		if err != nil {
			b.Fatal(err)
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			b.Fatal(err)
		}
		for _, tc := range []struct {
			name      string
			transform func(any) (any, error)
		}{{"whole-workload", nil}, {"transformed", TransformWorkload}, {"interned", nil}} {
			b.Run(w.name+"/"+tc.name, func(b *testing.B) {
				if tc.name == "interned" {
					// The grouper's transform: one Interner for every workload (its table counted).
					tc.transform = NewInterner(WorkloadInternerSize).Transform
				}
				var per float64
				for i := 0; i < b.N; i++ {
					per = heapPerObject(b, n, func(i int) any {
						u := &unstructured.Unstructured{}
						if err := u.UnmarshalJSON(js); err != nil {
							b.Fatal(err)
						}
						u.SetNamespace("bench")
						u.SetName(fmt.Sprintf("train-llm-%06d", i))
						u.SetUID(types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)))
						u.SetManagedFields(w.mf)
						if w.mutate != nil {
							w.mutate(u, i)
						}
						var obj any = u
						if tc.transform != nil {
							obj, _ = tc.transform(obj)
						}
						return obj
					})
				}
				b.ReportMetric(per, "bytes/workload")
				b.ReportMetric(per*10000/(1<<20), "MiB/10k-workloads")
			})
		}
	}
}

// jobSetManagedFields is what kubectl apply and the JobSet controller's status updates leave.
var jobSetManagedFields = []metav1.ManagedFieldsEntry{
	{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "jobset.x-k8s.io/v1alpha2", FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:spec":{".":{},"f:replicatedJobs":{},"f:network":{".":{},"f:enableDNSHostnames":{},"f:publishNotReadyAddresses":{}},"f:startupPolicy":{".":{},"f:startupPolicyOrder":{}},"f:successPolicy":{".":{},"f:operator":{}},"f:suspend":{}}}`)}},
	{Manager: "jobset-controller", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "jobset.x-k8s.io/v1alpha2", FieldsType: "FieldsV1", Subresource: "status",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{".":{},"f:replicatedJobsStatus":{".":{},"k:{\"name\":\"leader\"}":{".":{},"f:active":{},"f:failed":{},"f:name":{},"f:ready":{},"f:succeeded":{},"f:suspended":{}},"k:{\"name\":\"workers\"}":{".":{},"f:active":{},"f:failed":{},"f:name":{},"f:ready":{},"f:succeeded":{},"f:suspended":{}}},"f:restarts":{},"f:terminalState":{}}}`)}},
}

// BenchmarkWorkloadTransform measures the grouper's workload transform (Interner, warm: the
// template's subtrees are known) against TransformWorkload alone, per workload decoded from the
// watch: the CPU the sharing costs on each add or update of a workload.
func BenchmarkWorkloadTransform(b *testing.B) {
	raw, err := os.ReadFile("../../../gang/testdata/jobset-leader-workers.yaml")
	if err != nil {
		b.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		b.Fatal(err)
	}
	in := NewInterner(WorkloadInternerSize)
	for _, tc := range []struct {
		name      string
		transform func(any) (any, error)
	}{{"transform-workload", TransformWorkload}, {"interner", in.Transform}} {
		b.Run(tc.name, func(b *testing.B) {
			objs := make([]*unstructured.Unstructured, b.N)
			for i := range objs {
				objs[i] = &unstructured.Unstructured{}
				if err := objs[i].UnmarshalJSON(js); err != nil {
					b.Fatal(err)
				}
				objs[i].SetName(fmt.Sprintf("train-llm-%06d", i))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range objs {
				_, _ = tc.transform(objs[i])
			}
		})
	}
}
