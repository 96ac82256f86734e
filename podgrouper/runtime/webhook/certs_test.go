package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestSelfSigned: two replicas share one CA and serving certificate through the Secret; the
// configuration's caBundle is the CA; the files verify against it for the Service's names; the
// serving certificate is renewed when a third of its validity is left, under the same CA.
func TestSelfSigned(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = admissionregistrationv1.AddToScheme(s)
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "gangmap-grouper"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "pods.gangmap.io"}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(mwc).Build()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	replica := func() *SelfSigned {
		return &SelfSigned{Reader: c, Writer: c, Secret: client.ObjectKey{Namespace: "gangmap-system", Name: "cert"}, WebhookConfiguration: mwc.Name,
			DNSNames: []string{"svc.gangmap-system.svc"}, CertDir: t.TempDir(), Validity: 90 * 24 * time.Hour, Now: func() time.Time { return now }}
	}
	a, b := replica(), replica()
	if err := a.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	certA, _ := os.ReadFile(filepath.Join(a.CertDir, "tls.crt"))
	certB, _ := os.ReadFile(filepath.Join(b.CertDir, "tls.crt"))
	if len(certA) == 0 || !bytes.Equal(certA, certB) {
		t.Fatal("the replicas do not serve the same certificate")
	}
	got := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: mwc.Name}, got); err != nil {
		t.Fatal(err)
	}
	ca := got.Webhooks[0].ClientConfig.CABundle
	verify(t, a.CertDir, ca, now)

	// 61 days later (less than a third of 90 days left): a new serving certificate, same CA.
	now = now.Add(61 * 24 * time.Hour)
	if err := a.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	renewed, _ := os.ReadFile(filepath.Join(a.CertDir, "tls.crt"))
	if bytes.Equal(renewed, certA) {
		t.Error("the serving certificate was not renewed")
	}
	if err := c.Get(ctx, client.ObjectKey{Name: mwc.Name}, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Webhooks[0].ClientConfig.CABundle, ca) {
		t.Error("the CA changed with the serving certificate")
	}
	verify(t, a.CertDir, ca, now)
}

func verify(t *testing.T, dir string, caPEM []byte, now time.Time) {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("caBundle is not PEM")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "svc.gangmap-system.svc", CurrentTime: now}); err != nil {
		t.Errorf("serving certificate does not verify against the caBundle: %v", err)
	}
}
