package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gangmap/gangmap/deploy/crds"
)

// RestartableControlPlane is a ControlPlane whose kube-apiserver and etcd can be stopped and
// started again under running clients: etcd keeps its data directory and the API server keeps its
// certificate directory (serving certificate, client CA) and ports across a restart, so clients
// built before the restart (an in-process grouper, a grouper process with a kubeconfig file) keep
// working once the API server is back, as with a control-plane upgrade on a real cluster.
//
// envtest removes a process's directory on Stop when it created it itself; here the directories
// are made up front and removed by Stop.
type RestartableControlPlane struct {
	*ControlPlane
	dirs []string
}

// StartRestartable starts a control plane as StartWith does, with fixed etcd data and API server
// certificate directories so that RestartAPIServer can stop and start both.
func StartRestartable(o Options) (*RestartableControlPlane, error) {
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
	for _, f := range o.CRDs {
		c, err := readCRD(f)
		if err != nil {
			return nil, err
		}
		all = append(all, c)
	}
	r := &RestartableControlPlane{}
	etcdDir, err := os.MkdirTemp("", "gangmap-etcd-")
	if err != nil {
		return nil, err
	}
	certDir, err := os.MkdirTemp("", "gangmap-apiserver-")
	if err != nil {
		_ = os.RemoveAll(etcdDir)
		return nil, err
	}
	r.dirs = []string{etcdDir, certDir}
	env := &envtest.Environment{
		CRDs:                     all,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
		WebhookInstallOptions:    envtest.WebhookInstallOptions{MutatingWebhooks: o.MutatingWebhooks},
	}
	env.ControlPlane.Etcd = &envtest.Etcd{DataDir: etcdDir}
	env.ControlPlane.APIServer = &envtest.APIServer{CertDir: certDir}
	// Drain open watches for at most a second on SIGTERM; without it the API server waits for
	// the connections of running watchers until its 60s shutdown timeout.
	env.ControlPlane.APIServer.Configure().Set("shutdown-watch-termination-grace-period", "1s")
	cfg, err := env.Start()
	if err != nil {
		r.removeDirs()
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	r.ControlPlane = &ControlPlane{Env: env, Config: cfg}
	if err := r.connect(); err != nil {
		_ = env.Stop()
		r.removeDirs()
		return nil, err
	}
	return r, nil
}

// RestartAPIServer stops the API server and etcd (SIGTERM, as a rolling control-plane upgrade
// does), keeps them down for down, and starts etcd then the API server again with the same data,
// certificates and ports. It returns once the API server answers /healthz again.
func (r *RestartableControlPlane) RestartAPIServer(down time.Duration) error {
	cp := &r.Env.ControlPlane
	if err := cp.APIServer.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	if err := cp.Etcd.Stop(); err != nil {
		return fmt.Errorf("stopping etcd: %w", err)
	}
	time.Sleep(down)
	if err := cp.Etcd.Start(); err != nil {
		return fmt.Errorf("starting etcd again: %w", err)
	}
	cp.APIServer.EtcdURL = cp.Etcd.URL
	if err := cp.APIServer.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return nil
}

// Stop stops the control plane and removes its directories.
func (r *RestartableControlPlane) Stop() error {
	defer r.removeDirs()
	return r.ControlPlane.Stop()
}

func (r *RestartableControlPlane) removeDirs() {
	for _, d := range r.dirs {
		_ = os.RemoveAll(d)
	}
}
