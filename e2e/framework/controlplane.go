// Package framework runs gangmap's end-to-end tests and demo against a real control plane: a
// kube-apiserver and etcd built from the Go module proxy by hack/control-plane.sh (found through
// KUBEBUILDER_ASSETS), driven by controller-runtime's envtest, with the PodGroup and Karta CRDs
// installed and gangmap's grouper running in-process. There is no fake client anywhere.
package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/deploy/crds"
)

// ErrNoControlPlane says KUBEBUILDER_ASSETS does not point at the control-plane binaries.
var ErrNoControlPlane = errors.New("KUBEBUILDER_ASSETS must name a directory with kube-apiserver and etcd: run `make test` (it builds them with hack/control-plane.sh) or export KUBEBUILDER_ASSETS=$(hack/control-plane.sh)")

// ControlPlane is a running kube-apiserver and etcd with gangmap's CRDs installed.
type ControlPlane struct {
	Env     *envtest.Environment
	Config  *rest.Config
	Client  client.Client
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	// Kubeconfig is a kubeconfig file for an admin user, for child processes and the CLI.
	Kubeconfig string
}

// Start starts the control plane and installs the PodGroup and Karta CRDs plus extraCRDs
// (YAML files of workload CRDs, as a cluster admin would bring). It fails, never skips, when
// the binaries are missing.
func Start(extraCRDs ...string) (*ControlPlane, error) {
	return StartWith(Options{CRDs: extraCRDs})
}

// Options configure StartWith.
type Options struct {
	// CRDs are YAML files of workload CRDs to install besides the PodGroup and Karta CRDs.
	CRDs []string
	// MutatingWebhooks are installed by envtest, which rewrites each webhook's service reference
	// into a URL on its local serving host and port and generates a CA and serving certificate
	// (see ServeWebhook).
	MutatingWebhooks []*admissionregistrationv1.MutatingWebhookConfiguration
	// OmitCRDs are names of gangmap's embedded CRDs (deploy/crds) not to install, e.g.
	// crds.PodGroupName when CRDs brings KAI's own PodGroup CRD (the real-KAI e2e).
	OmitCRDs []string
}

// StartWith starts the control plane as Start does, with the options' CRDs and webhooks.
func StartWith(o Options) (*ControlPlane, error) {
	extraCRDs := o.CRDs
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, ErrNoControlPlane
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoControlPlane, err)
		}
	}
	all, err := embeddedCRDs(o.OmitCRDs)
	if err != nil {
		return nil, err
	}
	for _, f := range extraCRDs {
		c, err := readCRD(f)
		if err != nil {
			return nil, err
		}
		all = append(all, c)
	}
	env := &envtest.Environment{
		CRDs:                     all,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
		WebhookInstallOptions:    envtest.WebhookInstallOptions{MutatingWebhooks: o.MutatingWebhooks},
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	cp := &ControlPlane{Env: env, Config: cfg}
	if err := cp.connect(); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) connect() error {
	var err error
	if cp.Client, err = client.New(cp.Config, client.Options{Scheme: app.Scheme()}); err != nil {
		return err
	}
	if cp.Kube, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return err
	}
	if cp.Dynamic, err = dynamic.NewForConfig(cp.Config); err != nil {
		return err
	}
	user, err := cp.Env.AddUser(envtest.User{Name: "gangmap-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	f, err := os.CreateTemp("", "gangmap-kubeconfig-*")
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(kc); err != nil {
		return err
	}
	cp.Kubeconfig = f.Name()
	return nil
}

// Stop stops the control plane and removes the kubeconfig file.
func (cp *ControlPlane) Stop() error {
	if cp.Kubeconfig != "" {
		_ = os.Remove(cp.Kubeconfig)
	}
	return cp.Env.Stop()
}

// Grouper is a grouper manager running in-process.
type Grouper struct {
	Manager  manager.Manager
	Registry *definitions.Registry
	// Done receives the manager's result when it stops.
	Done <-chan error
}

// StartGrouper runs gangmap's grouper manager in-process against the control plane until ctx
// ends. o may be nil for the defaults with metrics and probes off. It returns once the manager's
// caches have synced. The webhook server is off unless ServeWebhook configured o.
func (cp *ControlPlane) StartGrouper(ctx context.Context, o *app.Options) (<-chan error, error) {
	g, err := cp.RunGrouper(ctx, o, nil)
	if err != nil {
		return nil, err
	}
	return g.Done, nil
}

// ServeWebhook makes a grouper started with o serve its admission webhook where envtest's
// webhook configurations call it: envtest's local serving host, port and certificate directory.
func (cp *ControlPlane) ServeWebhook(o *app.Options) {
	w := cp.Env.WebhookInstallOptions
	o.WebhookHost, o.WebhookPort, o.WebhookCertDir = w.LocalServingHost, w.LocalServingPort, w.LocalServingCertDir
}

// RunGrouper is StartGrouper with the grouper's registry and manager returned, and cfg (nil for
// the control plane's admin config; set its UserAgent to tell groupers apart in managedFields).
// When o serves the webhook, RunGrouper also waits until the webhook server is up.
func (cp *ControlPlane) RunGrouper(ctx context.Context, o *app.Options, cfg *rest.Config) (*Grouper, error) {
	if o == nil {
		o = app.DefaultOptions()
	}
	// No fixed ports (many groupers share a machine): metrics only where the caller chose an
	// address of its own (make demo's KEEP=1 serves them on a free loopback port).
	if o.MetricsAddr == app.DefaultOptions().MetricsAddr {
		o.MetricsAddr = "0"
	}
	o.ProbeAddr = "0"
	w := cp.Env.WebhookInstallOptions
	// The webhook is served when ServeWebhook set envtest's serving options, or when the grouper
	// issues its own certificate (self-signed mode).
	webhook := (w.LocalServingCertDir != "" && o.WebhookCertDir == w.LocalServingCertDir) || o.WebhookSelfSigned
	if !webhook {
		o.WebhookPort = 0
	}
	if cfg == nil {
		cfg = cp.Config
	}
	// The grouper's client-side rate limit is its own (--qps, --burst, as Options.RestConfig sets
	// it for the binary), not envtest's 1,000 QPS.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	mgr, registry, err := app.New(o, cfg)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		return nil, fmt.Errorf("grouper caches did not sync")
	}
	if webhook {
		started := mgr.GetWebhookServer().StartedChecker()
		if err := WaitFor(syncCtx, time.Minute, func(context.Context) (bool, error) { return started(nil) == nil, nil }); err != nil {
			return nil, fmt.Errorf("grouper webhook server did not start: %w", err)
		}
	}
	return &Grouper{Manager: mgr, Registry: registry, Done: done}, nil
}

// embeddedCRDs is crds.All without the CRDs named in omit.
func embeddedCRDs(omit []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	all, err := crds.All()
	if err != nil {
		return nil, err
	}
	kept := all[:0]
	for _, c := range all {
		if !slices.Contains(omit, c.Name) {
			kept = append(kept, c)
		}
	}
	return kept, nil
}

func readCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(b, c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
