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
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
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
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, ErrNoControlPlane
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoControlPlane, err)
		}
	}
	all, err := crds.All()
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

// StartGrouper runs gangmap's grouper manager in-process against the control plane until ctx
// ends. o may be nil for the defaults with metrics and probes off. It returns once the manager's
// caches have synced.
func (cp *ControlPlane) StartGrouper(ctx context.Context, o *app.Options) (<-chan error, error) {
	if o == nil {
		o = app.DefaultOptions()
	}
	o.MetricsAddr, o.ProbeAddr = "0", "0"
	mgr, _, err := app.New(o, rest.CopyConfig(cp.Config))
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
	return done, nil
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
