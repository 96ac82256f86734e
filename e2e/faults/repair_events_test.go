//go:build e2e

package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/runtime/controller"
)

// TestRepairEventsScaleWithWorkloads: 100 CustomJobs of 10 pods (1 coordinator, 9 workers), all
// created without gangmap's webhook (the grouper runs with --webhook-port 0), so the controller
// labels all 1,000 pods after creation. Every Event the grouper writes in the namespace is counted
// once the repairs are quiet: no pod has an Event, and each workload has at most a few, each
// once: PodGroupCreated (which also says the workload was marked with KAI's skip annotation when
// the same reconcile marked it; else one GangmapMarkedWorkload says so) and one
// GangmapRepairedPod for its 10 pods (before issue 33: one GangmapRepairedPod per pod, and 1,152
// GangmapMarkedWorkload for 1,000 workloads). gangmap_pods_repaired_total still counts every pod.
func TestRepairEventsScaleWithWorkloads(t *testing.T) {
	const workloads, perWorkload = 100, 10
	ctx := context.Background()
	ns := "repair-events"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	g := startGrouper(t, ctx)
	waitDefinitions(t, ctx, g, func(n float64) bool { return n >= 1 })
	before, err := g.Metrics(ctx)
	require.NoError(t, err)

	jobs := map[string]*unstructured.Unstructured{}
	var pods []*corev1.Pod
	for w := 0; w < workloads; w++ {
		job := customJob(t, ctx, ns, fmt.Sprintf("w%03d", w), perWorkload-1, "", "")
		jobs[job.GetName()] = job
		for _, role := range []string{"coordinator", "worker"} {
			n, _, _ := unstructured.NestedInt64(job.Object, "spec", role, "replicas")
			for i := 0; i < int(n); i++ {
				p, err := framework.RolePod(job, role, i)
				require.NoError(t, err)
				pods = append(pods, p)
			}
		}
	}
	require.NoError(t, cp.CreatePods(ctx, pods, 8))
	waitAllGrouped(t, ctx, ns, workloads*perWorkload, 5*time.Minute)

	// Wait until every workload has its repair Event (written once its pods are quiet).
	var evs *corev1.EventList
	require.NoError(t, framework.WaitFor(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		var err error
		if evs, err = cp.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err != nil {
			return false, nil
		}
		repaired := 0
		for _, e := range evs.Items {
			if e.Reason == controller.ReasonRepaired {
				repaired++
			}
		}
		return repaired >= workloads, nil
	}), "a %s Event for each workload", controller.ReasonRepaired)
	time.Sleep(controllerQuiet) // any late Event has come
	evs, err = cp.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)

	perObject := map[string]map[string]int{} // object -> reason -> Events (with their counts)
	marks := map[string]int{}                // object -> PodGroupCreated Events that say it was marked
	repairedPods := 0
	for _, e := range evs.Items {
		key := e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name
		if perObject[key] == nil {
			perObject[key] = map[string]int{}
		}
		perObject[key][e.Reason] += int(max(e.Count, 1))
		if e.Reason == controller.ReasonPodGroupCreated && strings.Contains(e.Message, "; also set kai.scheduler/skip-podgrouper on the workload") {
			marks[key]++
		}
		if e.Reason == controller.ReasonRepaired {
			var n int
			_, err := fmt.Sscanf(e.Message, "labelled %d pods after creation", &n)
			require.NoError(t, err, e.Message)
			repairedPods += n
			assert.Equal(t, corev1.EventTypeWarning, e.Type)
			assert.Contains(t, e.Message, "this grouper does not serve gangmap's admission webhook")
		}
	}
	t.Logf("%d Events (%d Event objects) for %d workloads of %d pods: %s", total(perObject), len(evs.Items), workloads, perWorkload, summary(perObject))
	for key, reasons := range perObject {
		kind, name, _ := strings.Cut(key, "/")
		require.Equal(t, "CustomJob", kind, "an Event on %s: only workloads have Events (%v)", key, reasons)
		require.Contains(t, jobs, name)
		n := 0
		for reason, c := range reasons {
			assert.Equal(t, 1, c, "%s: one %s Event", key, reason)
			n += c
		}
		assert.LessOrEqual(t, n, 3, "%s: at most a few Events per workload: %v", key, reasons)
		assert.Equal(t, 1, reasons[controller.ReasonRepaired], "%s: one repair Event", key)
		assert.Equal(t, 1, reasons[controller.ReasonPodGroupCreated], "%s: one PodGroupCreated Event", key)
		assert.Equal(t, 1, marks[key]+reasons[controller.ReasonOwnerMarked], "%s: the mark said once, in PodGroupCreated or on its own", key)
	}
	assert.Len(t, perObject, workloads, "every workload has its Events")
	assert.Equal(t, workloads*perWorkload, repairedPods, "the repair Events count every pod once")
	after, err := g.Metrics(ctx)
	require.NoError(t, err)
	assert.Equal(t, float64(workloads*perWorkload), after["gangmap_pods_repaired_total"]-before["gangmap_pods_repaired_total"],
		"gangmap_pods_repaired_total counts every pod")
}

// controllerQuiet is how long the controller waits after a workload's last repaired pod before it
// writes the workload's repair Event, with a margin.
const controllerQuiet = controller.EpisodeQuiet + 2*time.Second

func total(m map[string]map[string]int) int {
	n := 0
	for _, r := range m {
		for _, c := range r {
			n += c
		}
	}
	return n
}

// summary counts the Events by reason.
func summary(m map[string]map[string]int) string {
	by := map[string]int{}
	for _, r := range m {
		for reason, c := range r {
			by[reason] += c
		}
	}
	var parts []string
	for reason, c := range by {
		parts = append(parts, fmt.Sprintf("%s %d", reason, c))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
