package webhook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Keys of the Secret that holds the self-signed certificates.
const (
	SecretCACert = "ca.crt"
	SecretCAKey  = "ca.key"
	SecretCert   = corev1.TLSCertKey
	SecretKey    = corev1.TLSPrivateKeyKey
)

// SelfSigned manages the webhook's certificates without cert-manager: a CA and a serving
// certificate kept in a Secret (shared by every replica, so they serve the same certificate and
// the caBundle does not flap), written into CertDir for the webhook server (which reloads
// changed files), renewed when a third of their validity is left, with the CA put in the
// caBundle of every webhook of the named MutatingWebhookConfiguration.
type SelfSigned struct {
	// Reader reads the Secret and the configuration uncached; Writer writes them.
	Reader client.Reader
	Writer client.Writer
	// Secret names the Secret (namespace and name).
	Secret client.ObjectKey
	// WebhookConfiguration names the MutatingWebhookConfiguration whose caBundle is kept.
	WebhookConfiguration string
	// DNSNames are the serving certificate's names (the webhook Service's DNS names).
	DNSNames []string
	// CertDir receives tls.crt and tls.key.
	CertDir string
	// Validity of the serving certificate (default one year; the CA gets ten times as long).
	Validity time.Duration
	// Interval between checks (default one hour).
	Interval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

var _ manager.LeaderElectionRunnable = (*SelfSigned)(nil)

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica serves webhooks.
func (s *SelfSigned) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable: Ensure every Interval until ctx ends.
func (s *SelfSigned) Start(ctx context.Context) error {
	interval := cmp.Or(max(s.Interval, 0), time.Hour) // unset or not positive: an hour
	_ = wait.PollUntilContextCancel(ctx, interval, false, func(ctx context.Context) (bool, error) {
		if err := s.Ensure(ctx); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Renewing the webhook's self-signed certificate")
		}
		return false, nil // until ctx ends
	})
	return nil
}

// Ensure makes the Secret hold a valid CA and serving certificate (creating or renewing them),
// writes the serving certificate into CertDir, and puts the CA in the configuration's caBundle.
// Call it once before the webhook server starts, so the files exist.
func (s *SelfSigned) Ensure(ctx context.Context) error {
	var sec *corev1.Secret
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if sec, err = s.ensureSecret(ctx); !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("secret %s: %w", s.Secret, err)
	}
	if err := s.writeFiles(sec); err != nil {
		return err
	}
	return s.patchCABundle(ctx, sec.Data[SecretCACert])
}

func (s *SelfSigned) ensureSecret(ctx context.Context) (*corev1.Secret, error) {
	sec := &corev1.Secret{}
	err := s.Reader.Get(ctx, s.Secret, sec)
	create := apierrors.IsNotFound(err)
	if err != nil && !create {
		return nil, err
	}
	if create {
		sec = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Secret.Namespace, Name: s.Secret.Name}, Type: corev1.SecretTypeTLS}
	}
	data, changed, err := s.renew(sec.Data)
	if err != nil {
		return nil, err
	}
	if !changed {
		return sec, nil
	}
	sec.Data = data
	if create {
		err = s.Writer.Create(ctx, sec)
	} else {
		err = s.Writer.Update(ctx, sec)
	}
	if err == nil {
		ctrl.LoggerFrom(ctx).Info("Webhook certificate issued", "secret", klog.KObj(sec), "dnsNames", s.DNSNames)
	}
	return sec, err
}

// renew returns data with a CA and serving certificate valid for at least a third of their
// validity, and whether anything changed.
func (s *SelfSigned) renew(data map[string][]byte) (map[string][]byte, bool, error) {
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	validity := cmp.Or(max(s.Validity, 0), 365*24*time.Hour) // unset or not positive: a year
	out := map[string][]byte{}
	maps.Copy(out, data)
	changed := false
	ca, err := tls.X509KeyPair(out[SecretCACert], out[SecretCAKey])
	if err != nil || expiring(ca.Leaf, now, 10*validity) {
		tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "gangmap-webhook-ca"}, IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
		if out[SecretCACert], out[SecretCAKey], err = issue(tmpl, nil, now, 10*validity); err != nil {
			return nil, false, err
		}
		if ca, err = tls.X509KeyPair(out[SecretCACert], out[SecretCAKey]); err != nil {
			return nil, false, err
		}
		changed = true
	}
	cert, err := tls.X509KeyPair(out[SecretCert], out[SecretKey])
	if changed || err != nil || expiring(cert.Leaf, now, validity) || !slices.Equal(cert.Leaf.DNSNames, s.DNSNames) || cert.Leaf.CheckSignatureFrom(ca.Leaf) != nil {
		cn := "gangmap-webhook"
		if len(s.DNSNames) > 0 {
			cn = s.DNSNames[0]
		}
		tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: cn}, DNSNames: s.DNSNames,
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		if out[SecretCert], out[SecretKey], err = issue(tmpl, &ca, now, validity); err != nil {
			return nil, false, err
		}
		changed = true
	}
	return out, changed, nil
}

// expiring reports whether cert is not valid now or has at most a third of validity left.
func expiring(cert *x509.Certificate, now time.Time, validity time.Duration) bool {
	return now.Before(cert.NotBefore) || now.Add(validity/3).After(cert.NotAfter)
}

// issue signs tmpl, valid from an hour before now for validity, with a new P-256 key, by parent
// (self-signed when nil), and returns the certificate and its key PEM-encoded.
func issue(tmpl *x509.Certificate, parent *tls.Certificate, now time.Time, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126)); err != nil {
		return nil, nil, err
	}
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(validity)
	signer, signerKey := tmpl, any(key)
	if parent != nil {
		signer, signerKey = parent.Leaf, parent.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// writeFiles writes tls.crt and tls.key when they differ (write then rename, so the webhook
// server never reads half a file).
func (s *SelfSigned) writeFiles(sec *corev1.Secret) error {
	if err := os.MkdirAll(s.CertDir, 0o700); err != nil {
		return err
	}
	for _, name := range []string{SecretKey, SecretCert} {
		path := filepath.Join(s.CertDir, name)
		if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, sec.Data[name]) {
			continue
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, sec.Data[name], 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return nil
}

// patchCABundle sets caBundle on every webhook of the configuration. A missing configuration is
// not an error (it may be installed later; the next check patches it).
func (s *SelfSigned) patchCABundle(ctx context.Context, ca []byte) error {
	if s.WebhookConfiguration == "" {
		return nil
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := s.Reader.Get(ctx, client.ObjectKey{Name: s.WebhookConfiguration}, mwc); err != nil {
		if apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).Info("MutatingWebhookConfiguration not found; its caBundle is set when it appears", "name", s.WebhookConfiguration)
			return nil
		}
		return err
	}
	changed := false
	for i := range mwc.Webhooks {
		if !bytes.Equal(mwc.Webhooks[i].ClientConfig.CABundle, ca) {
			mwc.Webhooks[i].ClientConfig.CABundle = ca
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return s.Writer.Update(ctx, mwc)
}
