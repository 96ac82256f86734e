//go:build e2e

// Package selfsigned checks the grouper's self-managed webhook certificate on a real API server:
// with --webhook-self-signed the grouper issues a CA and serving certificate into a Secret,
// serves the webhook with it, and sets the CA as the caBundle of its MutatingWebhookConfiguration,
// so the API server calls the webhook over verified TLS with no manual step.
package selfsigned

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	var err error
	cp, err = framework.Start("../testdata/crds/e2e.example.com_customjobs.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, "selfsigned:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = cp.Stop()
	os.Exit(code)
}

const (
	configName = "gangmap-selfsigned-e2e"
	namespace  = "gangmap-system"
	secretName = "gangmap-webhook-cert"
)

func TestSelfSignedWebhookCertificate(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := freePort(t)
	require.NoError(t, cp.CreateNamespace(ctx, namespace))
	require.NoError(t, cp.CreateNamespace(ctx, "team"))
	// The configuration as a chart installs it: no caBundle yet, failurePolicy Ignore. The API
	// server reaches the webhook at localhost, the name the certificate is issued for.
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: configName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "pods.gangmap.io",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			TimeoutSeconds:          ptr.To[int32](10),
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(fmt.Sprintf("https://localhost:%d/mutate-v1-pod", port))},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
		}},
	}
	require.NoError(t, cp.Client.Create(ctx, cfg))
	require.NoError(t, cp.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: namespace}}))

	o := app.DefaultOptions()
	o.WebhookPort, o.WebhookHost, o.WebhookCertDir = port, "127.0.0.1", t.TempDir()
	o.WebhookSelfSigned, o.WebhookConfigName = true, configName
	o.WebhookSecret, o.WebhookNamespace, o.WebhookCertDNSNames = secretName, namespace, []string{"localhost"}
	_, err := cp.RunGrouper(ctx, o, nil)
	require.NoError(t, err)

	// The grouper sets the CA as the configuration's caBundle and fills the Secret.
	err = framework.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		got := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Name: configName}, got); err != nil {
			return false, err
		}
		return len(got.Webhooks[0].ClientConfig.CABundle) > 0, nil
	})
	require.NoError(t, err, "caBundle set by the grouper")
	sec := &corev1.Secret{}
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: secretName}, sec))
	assert.NotEmpty(t, sec.Data, "the certificate is kept in the Secret, shared by replicas")

	// A pod of a gangmap kind, created through the API server, is mutated over verified TLS.
	_, err = cp.ApplyFile(ctx, "../testdata/customjob-karta.yaml", "")
	require.NoError(t, err)
	objs, err := cp.ApplyFile(ctx, "../testdata/customjob.yaml", "team")
	require.NoError(t, err)
	job := objs[0]
	var created *corev1.Pod
	err = framework.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		// The definition and the certificate reach the grouper asynchronously: retry with new pods
		// until one comes back mutated from its create.
		p, err := framework.RolePod(job, "worker", int(time.Now().UnixNano()%100000))
		if err != nil {
			return false, err
		}
		if err := cp.Client.Create(ctx, p); err != nil {
			return false, err
		}
		created = p
		return p.Annotations[kaikeys.SkipPodGrouper] == "true", nil
	})
	require.NoError(t, err, "a pod created after the certificate was issued is mutated by the webhook at creation")
	assert.Equal(t, fmt.Sprintf("pg-%s-customjob", job.GetUID()), created.Annotations[kaikeys.PodGroupName])
	assert.Equal(t, "worker", created.Labels[kaikeys.SubGroupName])
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
