package app

import (
	"crypto/tls"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// tlsVersions are the --tls-min-version values: TLS 1.2 and 1.3 (older versions are broken).
var tlsVersions = map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}

// TLSOptions are the TLS settings of the webhook and metrics servers: the minimum version
// (--tls-min-version) and, unless --enable-http2, HTTP/1.1 only. controller-runtime's servers
// offer "h2" by default; its project scaffolding turns that off the same way, since HTTP/2
// exposes the servers to the Rapid Reset and stream-multiplexing attacks (CVE-2023-44487,
// CVE-2023-39325). An invalid --tls-min-version (refused by Validate) leaves Go's default: the
// servers' configurations come without a MinVersion, and 0 is the default.
func (o *Options) TLSOptions() []func(*tls.Config) {
	min := tlsVersions[o.TLSMinVersion]
	opts := []func(*tls.Config){func(c *tls.Config) { c.MinVersion = min }}
	if !o.EnableHTTP2 {
		opts = append(opts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	return opts
}

// MetricsServerOptions are the metrics server's options: on --metrics-bind-address; with
// --metrics-secure (the default) over HTTPS with TLSOptions and MetricsAuth in front of every
// handler; else plain HTTP.
func (o *Options) MetricsServerOptions() metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsAddr}
	if o.MetricsSecure {
		m.SecureServing = true
		m.CertDir = o.MetricsCertDir
		m.TLSOpts = o.TLSOptions()
		m.FilterProvider = MetricsAuth
	}
	return m
}

// MetricsAuth authenticates every metrics request by its bearer token (a TokenReview) and
// authorizes it (a SubjectAccessReview for the HTTP verb on the request path, e.g. get on
// /metrics), both cached briefly; anonymous requests are refused (401), unauthorized ones 403.
// It is controller-runtime's filters.WithAuthenticationAndAuthorization: the grouper's
// ServiceAccount needs create on tokenreviews.authentication.k8s.io and
// subjectaccessreviews.authorization.k8s.io (the chart grants both).
var MetricsAuth = filters.WithAuthenticationAndAuthorization

// WebhookServerOptions are the admission webhook server's options: host, port and certificate
// directory from the flags, TLS with TLSOptions.
func (o *Options) WebhookServerOptions() webhook.Options {
	return webhook.Options{Host: o.WebhookHost, Port: o.WebhookPort, CertDir: o.WebhookCertDir, TLSOpts: o.TLSOptions()}
}
