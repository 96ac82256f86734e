//go:build e2e

package faults

import (
	"context"
	"os"
	"testing"

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
	return framework.RunWithGrouper(m, "faults", &workDir, &grouperBin, func(ctx context.Context) (func() error, error) {
		down := &metav1.LabelSelector{MatchLabels: map[string]string{webhookDownLabel: "down"}}
		var err error
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
			return nil, err
		}
		_, err = cp.ApplyFile(ctx, "../testdata/customjob-karta.yaml", "")
		return cp.Stop, err
	})
}
