//go:build e2e

package faults

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gangmap/gangmap/e2e/framework"
)

// cp is this package's own control plane (kube-apiserver and etcd restartable under running
// clients); the tests run one after the other, each with its own grouper process.
var cp *framework.RestartableControlPlane

// grouperBin is gangmap-grouper built from this checkout; workDir holds it and the logs.
var grouperBin, workDir string

// webhookDownLabel=down on a namespace makes the API server call gangmap's webhook for its pods
// at an address where nothing listens (the webhook is unreachable); no other namespace calls it.
const webhookDownLabel = "gangmap.io/e2e-webhook"

// grouperArgs are the grouper's flags besides kubeconfig, metrics, probes and webhook: JobSet
// and LeaderWorkerSet removed from the native table (a KAI without those plugins).
var grouperArgs = []string{
	"--native-kinds-remove", "jobset.x-k8s.io/v1alpha2/JobSet,leaderworkerset.x-k8s.io/v1/LeaderWorkerSet",
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	var err error
	workDir, err = os.MkdirTemp("", "gangmap-e2e-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	keep := false
	defer func() {
		if !keep {
			_ = os.RemoveAll(workDir)
		}
	}()
	ctx := context.Background()
	// Fail, never skip, without the control plane.
	down := &metav1.LabelSelector{MatchLabels: map[string]string{webhookDownLabel: "down"}}
	cp, err = framework.StartRestartable(framework.Options{
		CRDs: []string{
			"../testdata/crds/e2e.example.com_customjobs.yaml",
			"../testdata/crds/jobset.x-k8s.io_jobsets.yaml",
			"../testdata/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml",
			"testdata/faults.example.com_doomedjobs.yaml",
		},
		MutatingWebhooks: []*admissionregistrationv1.MutatingWebhookConfiguration{framework.GangmapWebhook("gangmap-grouper-unreachable", down)},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	start := time.Now()
	grouperBin, err = framework.BuildGrouperBinary(ctx, workDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "faults: built gangmap-grouper in %v\n", time.Since(start).Round(time.Millisecond))
	if _, err := cp.ApplyFile(ctx, "../testdata/customjob-karta.yaml", ""); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		keep = true
		fmt.Fprintf(os.Stderr, "faults: grouper logs kept in %s\n", workDir)
	}
	return code
}
