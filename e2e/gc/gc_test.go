//go:build e2e

// Package gc checks, on a real control plane with kube-controller-manager's garbage collector,
// that deleting a workload leaves its PodGroup to garbage collection through the single owner
// reference gangmap writes (as KAI's pod-grouper does), and that gangmap does not bring it back.
package gc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	cp, err = framework.Start("../testdata/crds/e2e.example.com_customjobs.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, "gc:", err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The garbage collector runs in kube-controller-manager, built with the API server.
	kcm := exec.CommandContext(ctx, filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kube-controller-manager"),
		"--kubeconfig="+cp.Kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
		"--use-service-account-credentials=false", "--controllers=garbagecollector")
	logFile, err := os.CreateTemp("", "gangmap-gc-kcm-*.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, "gc:", err)
		return 1
	}
	defer os.Remove(logFile.Name())
	kcm.Stdout, kcm.Stderr = logFile, logFile
	if err := kcm.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "gc: kube-controller-manager:", err)
		return 1
	}
	defer func() { _ = kcm.Process.Kill(); _ = kcm.Wait() }()
	if _, err := cp.StartGrouper(ctx, nil); err != nil {
		fmt.Fprintln(os.Stderr, "gc: grouper:", err)
		return 1
	}
	return m.Run()
}

// TestDeletedWorkloadLeavesPodGroupToGarbageCollection: the PodGroup's only owner reference is
// the workload, so the garbage collector deletes it with the workload; gangmap writes nothing
// for a workload that is gone.
func TestDeletedWorkloadLeavesPodGroupToGarbageCollection(t *testing.T) {
	ctx := context.Background()
	ns := "gc"
	require.NoError(t, cp.CreateNamespace(ctx, ns))
	_, err := cp.ApplyFile(ctx, "../testdata/customjob-karta.yaml", "")
	require.NoError(t, err)
	objs, err := cp.ApplyFile(ctx, "../testdata/customjob.yaml", ns)
	require.NoError(t, err)
	job := objs[0]
	pods, err := cp.RunRoles(ctx, job, 3, "coordinator", "worker")
	require.NoError(t, err)
	pgName := fmt.Sprintf("pg-%s-customjob", job.GetUID())
	pg, err := cp.WaitForPodGroup(ctx, ns, pgName, 30*time.Second)
	require.NoError(t, err)
	require.Len(t, pg.OwnerReferences, 1)
	require.Equal(t, job.GetUID(), pg.OwnerReferences[0].UID)
	for _, p := range pods {
		_, err := cp.WaitForPodAnnotation(ctx, ns, p.Name, kaikeys.PodGroupName, 30*time.Second)
		require.NoError(t, err)
	}

	require.NoError(t, cp.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	err = framework.WaitFor(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pgName}, &v2alpha2.PodGroup{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	require.NoError(t, err, "the garbage collector deletes the PodGroup with its workload")
	// gangmap does not recreate it while the pods linger or go.
	time.Sleep(2 * time.Second)
	err = cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pgName}, &v2alpha2.PodGroup{})
	require.True(t, apierrors.IsNotFound(err), "PodGroup recreated: %v", err)
}
