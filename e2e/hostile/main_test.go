//go:build e2e

// Package hostile runs gangmap's admission webhook on a real control plane against workloads
// whose authors wrote hostile strings where the catalog's definitions read them, with the
// webhook configured to fail pod creation when it does not answer in time.
package hostile

import (
	"context"
	"fmt"
	"os"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/e2e/framework"
)

// cp is this package's control plane, with the AppWrapper CRD installed.
var cp *framework.ControlPlane

// grouperOptions are the options of the in-process grouper serving the webhook.
var grouperOptions *app.Options

// grouper is the in-process grouper (its registry tells when a cluster Karta is in use).
var grouper *framework.Grouper

// webhookConfigName names the MutatingWebhookConfiguration: gangmap's (framework.GangmapWebhook)
// for every namespace, with failurePolicy Fail and timeoutSeconds webhookTimeoutSeconds, so a
// webhook that answers late (or not at all) makes the API server refuse the pod.
const (
	webhookConfigName     = "gangmap-grouper-fail"
	webhookTimeoutSeconds = 10
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	wh := framework.GangmapWebhook(webhookConfigName, nil)
	wh.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	wh.Webhooks[0].TimeoutSeconds = ptr.To[int32](webhookTimeoutSeconds)
	wh.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{}
	var err error
	// Fail, never skip, without the control plane.
	cp, err = framework.StartWith(framework.Options{
		CRDs: []string{"testdata/workload.codeflare.dev_appwrappers.yaml", "testdata/apps.nvidia.com_nimservices.yaml",
			"../testdata/crds/e2e.example.com_customjobs.yaml"},
		MutatingWebhooks: []*admissionregistrationv1.MutatingWebhookConfiguration{wh},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	grouperOptions = app.DefaultOptions() // built-in catalog (AppWrapper included), 5s decision timeout
	cp.ServeWebhook(grouperOptions)
	grouper, err = cp.RunGrouper(ctx, grouperOptions, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile: grouper:", err)
		return 1
	}
	code := m.Run()
	cancel()
	if err := <-grouper.Done; err != nil {
		fmt.Fprintln(os.Stderr, "hostile: grouper stopped with:", err)
	}
	return code
}
