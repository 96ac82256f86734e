//go:build e2e

// Package dryrun checks the grouper's shadow mode on a real API server: it decides and reports
// (Events on the workload), and writes nothing.
package dryrun

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	var err error
	cp, err = framework.Start("../testdata/crds/e2e.example.com_customjobs.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, "dryrun:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = cp.Stop()
	os.Exit(code)
}

// TestDryRunDecidesAndWritesNothing: with --dry-run the grouper tells, with an Event on the
// workload, which PodGroup each pod would join (and its gang), and writes no PodGroup and no pod.
func TestDryRunDecidesAndWritesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := app.DefaultOptions()
	o.DryRun = true
	_, err := cp.RunGrouper(ctx, o, nil)
	require.NoError(t, err)

	ns := "shadow"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	_, err = cp.ApplyFile(ctx, "../testdata/customjob-karta.yaml", "")
	require.NoError(t, err)
	objs, err := cp.ApplyFile(ctx, "../testdata/customjob.yaml", ns)
	require.NoError(t, err)
	job := objs[0]
	pods, err := cp.RunRoles(ctx, job, 3, "coordinator", "worker")
	require.NoError(t, err)

	pgName := fmt.Sprintf("pg-%s-customjob", job.GetUID())
	err = framework.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		evs, err := cp.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen := 0
		for _, e := range evs.Items {
			if e.Reason == "DryRunPodGroup" && e.InvolvedObject.UID == job.GetUID() && strings.Contains(e.Message, pgName) {
				seen++
			}
		}
		return seen > 0, nil
	})
	require.NoError(t, err, "a DryRunPodGroup Event on the workload names the PodGroup")

	time.Sleep(2 * time.Second) // give a wrongly writing grouper the time to write
	var pgs v2alpha2.PodGroupList
	require.NoError(t, cp.Client.List(ctx, &pgs, client.InNamespace(ns)))
	assert.Empty(t, pgs.Items, "no PodGroup is written in dry-run")
	for _, p := range pods {
		got := &corev1.Pod{}
		require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(p), got))
		assert.Equal(t, p.ResourceVersion, got.ResourceVersion, "pod %s is never written in dry-run", p.Name)
	}
}
