//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/e2e/framework"
)

// cp is the control plane shared by the tests of this package; the grouper runs against it with
// JobSet removed from the native table, as on a KAI release without the JobSet plugin.
var cp *framework.ControlPlane

// grouper is the shared grouper: it serves gangmap's admission webhook, which the API server
// calls for pods in every namespace not labelled webhookLabel=disabled.
var grouper *framework.Grouper

// nativeKindsRemoved are taken out of KAI's native table for this cluster (as on a KAI without
// those plugins), so that the grouper groups the seed JobSet and the LWS; the CLI gets the same.
var nativeKindsRemoved = []string{"jobset.x-k8s.io/v1alpha2/JobSet", "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet"}

// webhookLabel=disabled on a namespace keeps the API server from calling gangmap's webhook for
// its pods (the configuration's namespace selector), as when the webhook is down.
const webhookLabel = "gangmap.io/webhook"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	var err error
	notDisabled := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: webhookLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"disabled"}}}}
	cp, err = framework.StartWith(framework.Options{
		CRDs: []string{
			"testdata/crds/e2e.example.com_customjobs.yaml",
			"testdata/crds/jobset.x-k8s.io_jobsets.yaml",
			"testdata/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml",
			"testdata/crds/milvus.io_milvuses.yaml",
			"testdata/crds/kubeflow.org_paddlejobs.yaml",
		},
		MutatingWebhooks: []*admissionregistrationv1.MutatingWebhookConfiguration{framework.GangmapWebhook("gangmap-grouper", notDisabled)},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := app.DefaultOptions()
	o.NativeKindsRemove = nativeKindsRemoved
	o.Findings = findingsConfig
	cp.ServeWebhook(o)
	o.WebhookNamespaceSelector = webhookLabel + "!=disabled"
	if o.OnboardingPolicy, err = writeOnboardingPolicy(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: onboarding policy:", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(filepath.Dir(o.OnboardingPolicy)) }()
	grouper, err = cp.RunGrouper(ctx, o, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: grouper:", err)
		return 1
	}
	code := m.Run()
	cancel()
	if err := <-grouper.Done; err != nil {
		fmt.Fprintln(os.Stderr, "e2e: grouper stopped with:", err)
	}
	return code
}
