//go:build e2e

package faults

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

const timeout = 20 * time.Second

// startGrouper runs a grouper process for the test, logging under workDir/<test>, stopped at
// cleanup.
func startGrouper(t *testing.T, ctx context.Context) *framework.GrouperProcess {
	t.Helper()
	dir := filepath.Join(workDir, strings.ReplaceAll(t.Name(), "/", "_"))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	g, err := framework.StartGrouperProcess(ctx, grouperBin, cp.Kubeconfig, dir, grouperArgs...)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = g.Stop()
		if t.Failed() {
			t.Logf("grouper log: %s", g.LogPath)
		}
	})
	return g
}

// waitDefinitions waits until cond holds for the number of cluster definitions (Karta objects)
// the grouper has loaded, in any state. (Not only state="active": a re-list of unchanged Kartas
// makes the registry report an active definition as "shadowed"; see docs/reliability.md.)
func waitDefinitions(t *testing.T, ctx context.Context, g *framework.GrouperProcess, cond func(loaded float64) bool) {
	t.Helper()
	var m map[string]float64
	err := framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		var err error
		if m, err = g.Metrics(ctx); err != nil {
			return false, nil
		}
		return cond(framework.Sum(m, "gangmap_definitions", `source="cluster"`)), nil
	})
	if err != nil {
		for k, v := range m {
			if strings.HasPrefix(k, "gangmap_") {
				t.Logf("%s %v", k, v)
			}
		}
	}
	require.NoError(t, err, "cluster definitions loaded by the grouper")
}

// customJob creates ../testdata/customjob.yaml as name in ns with the given worker replicas, the
// kind changed to group/kind when group is not empty.
func customJob(t *testing.T, ctx context.Context, ns, name string, workers int64, group, kind string) *unstructured.Unstructured {
	t.Helper()
	job, err := framework.ReadObject("../testdata/customjob.yaml")
	require.NoError(t, err)
	job.SetName(name)
	job.SetNamespace(ns)
	if group != "" {
		job.SetAPIVersion(group + "/v1")
		job.SetKind(kind)
	}
	require.NoError(t, unstructured.SetNestedField(job.Object, workers, "spec", "worker", "replicas"))
	require.NoError(t, cp.Client.Create(ctx, job))
	return job
}

// grouped counts the pods of ns that carry a pod-group-name annotation.
func grouped(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Annotations[kaikeys.PodGroupName] != "" {
			n++
		}
	}
	return n
}

// waitAllGrouped waits until every pod of ns has its pod-group-name annotation.
func waitAllGrouped(t *testing.T, ctx context.Context, ns string, want int, within time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := framework.WaitFor(ctx, within, func(ctx context.Context) (bool, error) {
		var err error
		pods, err = cp.Pods(ctx, ns)
		if err != nil {
			return false, nil // the API server may be restarting
		}
		return len(pods) == want && grouped(pods) == want, nil
	})
	require.NoError(t, err, "%d of %d pods of %s grouped", grouped(pods), want, ns)
	return pods
}

// waitPodGroup waits until the named PodGroup exists and ok(it) holds, leaving it in pg.
func waitPodGroup(ctx context.Context, ns, name string, pg *v2alpha2.PodGroup, ok func(*v2alpha2.PodGroup) bool) error {
	return framework.WaitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg); err != nil {
			return false, nil
		}
		return ok(pg), nil
	})
}
