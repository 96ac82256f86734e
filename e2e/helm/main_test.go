//go:build e2e

// Package helm checks the Helm chart deploy/helm/gangmap as a user installs it, on a real
// kube-apiserver and etcd (its own control plane; no fake client): that the API server accepts
// every object the chart renders, and that the chart's RBAC is enough for the grouper to do its
// whole job, and no more.
//
// # How the chart is installed
//
// The chart is rendered with `helm template` (the pinned helm through hack/helm.sh, built once and
// cached, as deploy/helm/charttest runs it) with testdata/values.yaml, and every rendered object is
// server-side applied through the dynamic client with fieldValidation=Strict, one by one. That was
// chosen over `helm install` against the control plane's kubeconfig (which works too) because:
//   - each object is asserted on its own, and a rejection names the object and the API server's
//     reason (helm install stops at the first error, in its own words);
//   - strict field validation makes the API server refuse an unknown or duplicated field (a
//     template typo) instead of dropping it;
//   - the Karta CRD reaches the API server: framework.Start installs kartas.run.ai, so under helm
//     install the template's `lookup` would find it and render nothing. Rendered offline, the
//     chart's copy is applied over the identical installed one. The `lookup` guard itself is
//     checked against this API server by TestKartaCRDLookupGuardOnAPIServer (`helm template
//     --dry-run=server`).
//
// The release namespace is created first, as `helm install --create-namespace` does.
//
// # How the grouper runs
//
// gangmap-grouper is built from this checkout and run as a process with the rendered
// Deployment's container args (parsed first with the grouper's own flag set, as charttest does),
// authenticated as the chart's ServiceAccount: a token from the TokenRequest API (envtest's
// kube-apiserver signs service-account tokens: it runs with --service-account-issuer and
// --service-account-signing-key-file) in a kubeconfig file, checked with a SelfSubjectReview.
// Only what must differ outside a pod is overridden (see grouperArgs): the kubeconfig (in a pod
// the in-cluster config), the metrics, probe and webhook bind addresses (free localhost ports
// instead of :8080, :8081 and :9443), the webhook certificate directory and the --definitions
// directory (temporary directories standing in for the emptyDir and the ConfigMap mount, the
// latter filled with the rendered ConfigMap's files), and the serving certificate's DNS names,
// which get "localhost" added.
//
// The webhook runs in the chart's default self-signed mode (its Secret and
// MutatingWebhookConfiguration RBAC are exercised). The API server cannot reach a Service here (no
// pod network, no endpoints), so after the chart's MutatingWebhookConfiguration is accepted as
// rendered, its clientConfig is pointed at https://localhost:<port><the rendered path>, as
// e2e/selfsigned does; everything else in it (selectors, policy, timeouts) stays the chart's.
package helm

import (
	"context"
	"os"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gangmap/gangmap/e2e/framework"
)

// cp is this package's own control plane, with the CustomJob CRD installed (as a cluster admin
// installs it with its operator).
var cp *framework.ControlPlane

// grouperBin is gangmap-grouper built from this checkout; workDir holds it and its logs.
var grouperBin, workDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	return framework.RunWithGrouper(m, "helm", &workDir, &grouperBin, func(context.Context) (func() error, error) {
		var err error
		if cp, err = framework.Start("../testdata/crds/e2e.example.com_customjobs.yaml"); err != nil {
			return nil, err
		}
		return cp.Stop, nil
	})
}
