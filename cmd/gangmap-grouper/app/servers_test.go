package app

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// fakeReviewAPI stands in for the API server's TokenReview and SubjectAccessReview endpoints (the
// calls controller-runtime's filters.WithAuthenticationAndAuthorization makes): token "reader"
// is user metrics-reader, allowed get on /metrics; token "other" is user other, allowed nothing;
// any other token is not authenticated. It counts the reviews.
type fakeReviewAPI struct {
	mu      sync.Mutex
	reviews map[string]int
}

func (f *fakeReviewAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.reviews[r.Method+" "+r.URL.Path]++
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/apis/authentication.k8s.io/v1/tokenreviews":
		tr := &authenticationv1.TokenReview{}
		_ = json.NewDecoder(r.Body).Decode(tr)
		if tr.Spec.Token == "reader" || tr.Spec.Token == "other" {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: tr.Spec.Token}}
		}
		_ = json.NewEncoder(w).Encode(tr)
	case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
		sar := &authorizationv1.SubjectAccessReview{}
		_ = json.NewDecoder(r.Body).Decode(sar)
		na := sar.Spec.NonResourceAttributes
		sar.Status.Allowed = sar.Spec.User == "reader" && na != nil && na.Path == "/metrics" && na.Verb == "get"
		_ = json.NewEncoder(w).Encode(sar)
	default:
		http.NotFound(w, r)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// startMetrics runs controller-runtime's metrics server with o's options against api.
func startMetrics(t *testing.T, o *Options, api *httptest.Server) string {
	t.Helper()
	o.MetricsAddr = freeAddr(t)
	srv, err := metricsserver.NewServer(o.MetricsServerOptions(), &rest.Config{Host: api.URL}, api.Client())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", o.MetricsAddr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	return o.MetricsAddr
}

// get fetches path from addr over HTTPS (any certificate: the server's is self-signed), offering
// HTTP/2, with the bearer token unless empty.
func get(t *testing.T, addr, path, token string) *http.Response {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a self-signed test server
		ForceAttemptHTTP2: true,
	}}
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestMetricsServedOverHTTPSWithAuthnAndAuthz: with the defaults, metrics are HTTPS only, a
// request without a token is 401, with a token the API server rejects refused, an authenticated user without get on /metrics 403, the
// metrics reader 200; HTTP/1.1 only (HTTP/2 is not negotiated) and TLS 1.2 refused.
func TestMetricsServedOverHTTPSWithAuthnAndAuthz(t *testing.T) {
	api := &fakeReviewAPI{reviews: map[string]int{}}
	apiSrv := httptest.NewServer(api)
	defer apiSrv.Close()
	o := DefaultOptions()
	require.True(t, o.MetricsSecure, "secure metrics by default")
	require.Equal(t, ":8443", o.MetricsAddr)
	addr := startMetrics(t, o, apiSrv)

	assert.Equal(t, http.StatusUnauthorized, get(t, addr, "/metrics", "").StatusCode, "no token")
	// A token the API server does not authenticate is refused too; controller-runtime's filter
	// answers 500 ("Authentication failed"): apiserver's bearertoken authenticator reports an
	// unauthenticated token as an error, not as "no user".
	forged := get(t, addr, "/metrics", "forged")
	assert.Equal(t, http.StatusInternalServerError, forged.StatusCode, "a token the API server does not know")
	assert.Equal(t, http.StatusForbidden, get(t, addr, "/metrics", "other").StatusCode, "authenticated, not authorized")
	resp := get(t, addr, "/metrics", "reader")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "HTTP/1.1", resp.Proto, "HTTP/2 is off by default")
	assert.Equal(t, uint16(tls.VersionTLS13), resp.TLS.Version)
	api.mu.Lock()
	assert.Positive(t, api.reviews["POST /apis/authentication.k8s.io/v1/tokenreviews"])
	assert.Positive(t, api.reviews["POST /apis/authorization.k8s.io/v1/subjectaccessreviews"])
	api.mu.Unlock()

	// Plain HTTP is not served on the port.
	plain, err := http.Get("http://" + addr + "/metrics")
	if err == nil {
		plain.Body.Close()
		assert.Equal(t, http.StatusBadRequest, plain.StatusCode, "an HTTP request to the HTTPS port")
	}
	assertTLS12Refused(t, addr)
}

// TestMetricsHTTP2AndTLS12WhenAskedFor: --enable-http2 and --tls-min-version=1.2 do what they say;
// --metrics-secure=false serves plain HTTP without authentication (local use).
func TestMetricsHTTP2AndTLS12WhenAskedFor(t *testing.T) {
	api := &fakeReviewAPI{reviews: map[string]int{}}
	apiSrv := httptest.NewServer(api)
	defer apiSrv.Close()
	o := DefaultOptions()
	fs := NewFlagSet(o, os.Stderr)
	require.NoError(t, fs.Parse([]string{"--enable-http2", "--tls-min-version=1.2"}))
	addr := startMetrics(t, o, apiSrv)
	resp := get(t, addr, "/metrics", "reader")
	assert.Equal(t, "HTTP/2.0", resp.Proto)
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12}) //nolint:gosec // test
	require.NoError(t, err, "TLS 1.2 accepted with --tls-min-version=1.2")
	c.Close()

	o = DefaultOptions()
	o.MetricsSecure = false
	addr = startMetrics(t, o, apiSrv)
	plain, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer plain.Body.Close()
	assert.Equal(t, http.StatusOK, plain.StatusCode)
}

// TestWebhookServerHTTP1AndTLSMinimum: the admission webhook server negotiates HTTP/1.1 only and
// refuses TLS 1.2 with the defaults (controller-runtime's default offers h2 and accepts 1.2).
func TestWebhookServerHTTP1AndTLSMinimum(t *testing.T) {
	dir := t.TempDir()
	crt, key, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600))
	o := DefaultOptions()
	host, port, err := net.SplitHostPort(freeAddr(t))
	require.NoError(t, err)
	o.WebhookHost, o.WebhookCertDir = host, dir
	o.WebhookPort, err = strconv.Atoi(port)
	require.NoError(t, err)
	srv := webhook.NewServer(o.WebhookServerOptions())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	defer func() { cancel(); <-done }()
	require.Eventually(t, func() bool { return srv.StartedChecker()(nil) == nil }, 10*time.Second, 20*time.Millisecond)

	addr := net.JoinHostPort(host, port)
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}}) //nolint:gosec // test
	require.NoError(t, err)
	assert.Equal(t, "http/1.1", c.ConnectionState().NegotiatedProtocol, "HTTP/2 is off by default")
	assert.Equal(t, uint16(tls.VersionTLS13), c.ConnectionState().Version)
	c.Close()
	assertTLS12Refused(t, addr)
}

func assertTLS12Refused(t *testing.T, addr string) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12}) //nolint:gosec // test
	if err == nil {
		c.Close()
	}
	assert.Error(t, err, fmt.Sprintf("TLS 1.2 refused on %s (minimum 1.3 by default)", addr))
}
