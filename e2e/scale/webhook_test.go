//go:build e2e

package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/runtime/webhook"
)

// The release the chart would install: its namespace (where the grouper keeps its self-signed
// certificate's Secret) and its MutatingWebhookConfiguration's name.
const (
	releaseNamespace  = "gangmap-system"
	webhookConfigName = "gangmap-grouper-scale"
	probeNamespace    = "scale-probe"
)

// webhookMode reads GANGMAP_SCALE_WEBHOOK: on (the default, "1") the grouper serves its admission
// webhook and the API server calls it on every pod create, as the chart installs it, so pods are
// grouped at admission; "0" runs the grouper without the webhook, so its pod controller repairs
// every pod after creation (one PATCH and one Warning Event per pod), as on an install with
// webhook.enabled=false.
func webhookMode(b *testing.B) bool {
	switch v := os.Getenv("GANGMAP_SCALE_WEBHOOK"); v {
	case "", "1", "true":
		return true
	case "0", "false":
		return false
	default:
		b.Fatalf("GANGMAP_SCALE_WEBHOOK=%q: want 1 (webhook, the default) or 0 (no webhook: the controller repairs every pod)", v)
		return false
	}
}

// setUpWebhook installs what the chart installs for the webhook with the grouper's own
// certificate (the default: --webhook-self-signed) and returns the grouper's webhook flags, as
// the chart's Deployment passes them. Only the address differs from a cluster: the API server
// calls https://localhost:<a free port>/mutate-v1-pod instead of the Service, and the certificate
// is issued for localhost. The configuration is the chart's default one (see chartWebhook).
func setUpWebhook(ctx context.Context, b *testing.B) []string {
	port, err := framework.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	if err := cp.CreateNamespace(ctx, releaseNamespace); err != nil {
		b.Fatal(err)
	}
	cfg := chartWebhook(fmt.Sprintf("https://localhost:%d%s", port, webhook.Path))
	if err := cp.Client.Create(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	certDir := filepath.Join(workDir, "webhook-certs")
	if err := os.MkdirAll(certDir, 0o755); err != nil {
		b.Fatal(err)
	}
	return []string{
		"--webhook-port=" + strconv.Itoa(port), "--webhook-host=127.0.0.1", "--webhook-cert-dir=" + certDir,
		"--webhook-self-signed=true", "--webhook-configuration-name=" + webhookConfigName,
		"--webhook-namespace=" + releaseNamespace, "--webhook-cert-dns-names=localhost",
		"--webhook-timeout=3s",
	}
}

// tearDownWebhook removes the configuration, so that nothing calls a stopped grouper.
func tearDownWebhook(ctx context.Context) {
	_ = cp.Client.Delete(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhookConfigName}})
}

// chartWebhook is the chart's MutatingWebhookConfiguration with its default values
// (deploy/helm/gangmap/templates/webhook.yaml): Pod CREATE, failurePolicy Ignore, timeoutSeconds
// 5, reinvocation IfNeeded, matchPolicy Equivalent, every namespace but kube-system and the
// release's, every pod; no caBundle (the grouper sets it), and url in place of the Service.
func chartWebhook(url string) *admissionregistrationv1.MutatingWebhookConfiguration {
	cfg := framework.GangmapWebhook(webhookConfigName, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", releaseNamespace},
	}}})
	w := &cfg.Webhooks[0]
	w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url)}
	w.TimeoutSeconds = ptr.To[int32](5)
	w.MatchPolicy = ptr.To(admissionregistrationv1.Equivalent)
	w.ObjectSelector = &metav1.LabelSelector{}
	return cfg
}

// waitWebhookServes waits until the API server's call to the webhook mutates a pod: the
// grouper's certificate is in the configuration's caBundle, its webhook server is up and its
// caches hold the definition. It dry-run creates pods of a probe CustomJob in a namespace of its
// own (nothing is stored), then deletes the probe, so that nothing of it stays cached.
func waitWebhookServes(ctx context.Context, b *testing.B) {
	if err := cp.CreateNamespace(ctx, probeNamespace); err != nil {
		b.Fatal(err)
	}
	job, err := workload(probeNamespace, "probe", 1)
	if err != nil {
		b.Fatal(err)
	}
	if err := cp.Client.Create(ctx, job); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cp.Client.Delete(ctx, job) }()
	err = framework.WaitFor(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		p, err := framework.RolePod(job, "worker", 0)
		if err != nil {
			return false, err
		}
		if err := cp.Client.Create(ctx, p, client.DryRunAll); err != nil {
			return false, err
		}
		return p.Annotations[kaikeys.PodGroupName] != "", nil
	})
	if err != nil {
		b.Fatalf("the grouper's webhook did not mutate a dry-run pod of the probe CustomJob: %v", err)
	}
}
