//go:build e2e

package hostile

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/manifest"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// TestIssue28HostileWorkloadsAtOnce: on the real API server, 24 AppWrappers whose pod set path
// is 1.4 MB of dots (the catalog definition's split(".") made 1.4 M strings: 24 of them took
// the grouper's heap from 48 MB to 1,384 MB) and 24 NIMServices on KServe whose min-scale
// annotation has 1.4 M digits (tonumber: 3.8 s of CPU per plan), each with a pod, are created
// at once beside 20 ordinary CustomJobs of 3 pods. Then: the process's peak resident set (the
// in-process grouper, the test's own 70 MB of hostile objects and their encodings included)
// stays under the chart's memory limit; every ordinary pod is grouped within 10 s of its
// creation; each hostile workload gets a Warning Event naming the definition field and the
// bound that refused it.
func TestIssue28HostileWorkloadsAtOnce(t *testing.T) {
	ctx := context.Background()
	limit := chartMemoryLimit(t)
	resetPeakRSS(t)
	ns := "budget"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	ensureCustomJobKarta(ctx, t)

	var hostile []*unstructured.Unstructured
	for i := range 24 {
		hostile = append(hostile, appWrapperWithPath(ns, fmt.Sprint("aw-", i), strings.Repeat(".", 1_400_000)))
		hostile = append(hostile, nimServiceWithMinScale(ns, fmt.Sprint("nim-", i), strings.Repeat("9", 1_400_000)))
	}
	var ordinary []*unstructured.Unstructured
	for i := range 20 {
		ordinary = append(ordinary, customJob(t, ns, fmt.Sprint("cj-", i)))
	}
	start := time.Now()
	all := append(append([]*unstructured.Unstructured{}, hostile...), ordinary...)
	parallel(t, len(all), func(i int) error { return cp.Client.Create(ctx, all[i]) })

	// The pods, all at once: one per hostile workload, three per CustomJob.
	var pods []*corev1.Pod
	for _, w := range hostile {
		pods = append(pods, hostilePod(ctx, t, w))
	}
	var ordinaryPods []*corev1.Pod
	for _, w := range ordinary {
		for _, role := range []struct {
			name string
			n    int
		}{{"coordinator", 1}, {"worker", 2}} {
			for j := range role.n {
				p, err := framework.RolePod(w, role.name, j)
				require.NoError(t, err)
				ordinaryPods = append(ordinaryPods, p)
			}
		}
	}
	pods = append(pods, ordinaryPods...)
	created := make([]time.Time, len(pods))
	parallel(t, len(pods), func(i int) error {
		created[i] = time.Now()
		return cp.Client.Create(ctx, pods[i])
	})
	t.Logf("created %d workloads and %d pods in %v", len(all), len(pods), time.Since(start).Round(time.Millisecond))

	// Every ordinary pod is grouped within 10 s of its creation.
	offset := len(pods) - len(ordinaryPods)
	var slowest time.Duration
	for i, p := range ordinaryPods {
		got, err := cp.WaitForPodAnnotation(ctx, ns, p.Name, kaikeys.PodGroupName, 10*time.Second)
		require.NoError(t, err, "ordinary pod %s not grouped within 10 s", p.Name)
		require.NotEmpty(t, got.Annotations[kaikeys.PodGroupName])
		slowest = max(slowest, time.Since(created[offset+i]))
	}
	assert.Less(t, slowest, 10*time.Second)
	t.Logf("all %d ordinary pods grouped; the last %v after its creation", len(ordinaryPods), slowest.Round(time.Millisecond))

	// Each hostile workload gets a Warning Event naming the field and the bound.
	require.NoError(t, framework.WaitFor(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		return len(missingEvents(ctx, t, ns, hostile)) == 0, nil
	}), "hostile workloads without a Warning Event naming the field: %v", missingEvents(ctx, t, ns, hostile))

	peak := peakRSS(t)
	t.Logf("peak resident set %d MiB (chart limit %d MiB)", peak>>20, limit>>20)
	assert.Less(t, peak, limit, "the peak resident set stays under the chart's memory limit")
}

// missingEvents lists the hostile workloads without a Warning Event whose message names the
// definition field and the budget's refusal of its builtin.
func missingEvents(ctx context.Context, t *testing.T, ns string, hostile []*unstructured.Unstructured) []string {
	events := &corev1.EventList{}
	require.NoError(t, cp.Client.List(ctx, events, client.InNamespace(ns)))
	ok := map[string]bool{}
	for _, e := range events.Items {
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		switch {
		case e.InvolvedObject.Kind == "AppWrapper" && strings.Contains(e.Message, "instanceIdPath") && strings.Contains(e.Message, "split/1 refused"),
			e.InvolvedObject.Kind == "NIMService" && strings.Contains(e.Message, "minReplicasPath") && strings.Contains(e.Message, "tonumber/0 refused"):
			ok[e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name] = true
		}
	}
	var missing []string
	for _, w := range hostile {
		if !ok[w.GetKind()+"/"+w.GetName()] {
			missing = append(missing, w.GetKind()+"/"+w.GetName())
		}
	}
	return missing
}

// parallel runs f(0..n-1) with 16 in flight and fails the test on the first error.
func parallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "item %d", i)
	}
}

// hostilePod is the pod of a hostile workload: for an AppWrapper, its wrapped Job's pod (podOf);
// for a NIMService, a pod it owns, for KAI's scheduler.
func hostilePod(ctx context.Context, t *testing.T, w *unstructured.Unstructured) *corev1.Pod {
	if w.GetKind() == "AppWrapper" {
		return podOf(ctx, t, w)
	}
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{SchedulerName: "kai-scheduler", RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "nim", Image: "nvcr.io/nim/meta/llama3:1.0"}}}}
	return framework.PodFromTemplate(tmpl, w.GetNamespace(), w.GetName()+"-0", map[string]string{"app": w.GetName()}, framework.UnstructuredOwnerRef(w))
}

// appWrapperWithPath is an AppWrapper of one wrapped Job whose pod set path is path.
func appWrapperWithPath(ns, name, path string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"components": []any{map[string]any{"template": jobTemplate(),
			"podSets": []any{map[string]any{"path": path, "replicas": int64(1)}}}}},
	}}
}

// nimServiceWithMinScale is a NIMService on KServe (the NIM operator's inferencePlatform
// "kserve") whose Knative min-scale annotation is minScale.
func nimServiceWithMinScale(ns, name, minScale string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.nvidia.com/v1alpha1", "kind": "NIMService",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"inferencePlatform": "kserve", "replicas": int64(1),
			"image":       map[string]any{"repository": "nvcr.io/nim/meta/llama3", "tag": "1.0"},
			"annotations": map[string]any{"autoscaling.knative.dev/min-scale": minScale},
		},
	}}
}

// customJob is ../testdata/customjob.yaml (1 coordinator, 2 workers) as name in ns.
func customJob(t *testing.T, ns, name string) *unstructured.Unstructured {
	objs, err := manifest.ReadFile("../testdata/customjob.yaml")
	require.NoError(t, err)
	job := objs[0]
	job.SetName(name)
	job.SetNamespace(ns)
	return job
}

// ensureCustomJobKarta applies the CustomJob Karta and waits until the grouper uses it.
func ensureCustomJobKarta(ctx context.Context, t *testing.T) {
	_, err := cp.ApplyFile(ctx, "../testdata/customjob-karta.yaml", "")
	if err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	gvk := schema.GroupVersionKind{Group: "e2e.example.com", Version: "v1", Kind: "CustomJob"}
	require.NoError(t, framework.WaitFor(ctx, time.Minute, func(context.Context) (bool, error) {
		c := grouper.Registry.Lookup(gvk)
		return c != nil && c.Loaded.Source == definitions.SourceCluster, nil
	}), "the grouper loads the CustomJob definition")
}

// chartMemoryLimit is resources.limits.memory of the chart's values (deploy/helm/gangmap).
func chartMemoryLimit(t *testing.T) int64 {
	b, err := os.ReadFile("../../deploy/helm/gangmap/values.yaml")
	require.NoError(t, err)
	var v struct {
		Resources struct {
			Limits struct {
				Memory string `json:"memory"`
			} `json:"limits"`
		} `json:"resources"`
	}
	require.NoError(t, yaml.Unmarshal(b, &v))
	q, err := resource.ParseQuantity(v.Resources.Limits.Memory)
	require.NoError(t, err, "resources.limits.memory %q", v.Resources.Limits.Memory)
	return q.Value()
}

// resetPeakRSS resets the kernel's high-water mark of this process's resident set (VmHWM), so
// that peakRSS measures this test alone (Linux: clear_refs 5).
func resetPeakRSS(t *testing.T) {
	require.NoError(t, os.WriteFile("/proc/self/clear_refs", []byte("5"), 0), "resetting VmHWM")
}

// peakRSS is VmHWM of /proc/self/status, in bytes.
func peakRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
