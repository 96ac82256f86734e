package realkai

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/gangmap/gangmap/deploy/crds"
	"github.com/gangmap/gangmap/e2e/framework"
)

// Cluster is a control plane with kwok and the real KAI scheduler and binder running, and KAI's
// pod-grouper when StartPodGrouper started it.
type Cluster struct {
	*framework.ControlPlane
	Config Config
	// LogDir holds every process's log (<name>.log) and the generated configuration files.
	LogDir string
	// Kwok manages the fake nodes (annotation kwok.x-k8s.io/node: fake) and their pods.
	Kwok *Process
	// Scheduler and Binder are KAI's; PodGrouper is nil until StartPodGrouper.
	Scheduler, Binder, PodGrouper *Process
}

// Options are what Start adds to the Config.
type Options struct {
	// MutatingWebhooks are installed by envtest (see framework.Options), e.g. gangmap's.
	MutatingWebhooks []*admissionregistrationv1.MutatingWebhookConfiguration
}

// Start starts the control plane with KAI's CRDs (instead of gangmap's PodGroup CRD), the Karta
// CRD and cfg.WorkloadCRDs, then kwok, KAI's binder and KAI's scheduler, each a process logging
// into cfg.LogDir. Whatever started is stopped again when a later step fails.
func Start(ctx context.Context, cfg Config, o Options) (*Cluster, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	var err error
	if cfg.LogDir == "" {
		if cfg.LogDir, err = os.MkdirTemp("", "gangmap-e2e-kai-"); err != nil {
			return nil, err
		}
	}
	kaiCRDs, err := cfg.KAICRDs()
	if err != nil {
		return nil, err
	}
	cp, err := framework.StartWith(framework.Options{
		CRDs:             append(kaiCRDs, cfg.WorkloadCRDs...),
		OmitCRDs:         []string{crds.PodGroupName},
		MutatingWebhooks: o.MutatingWebhooks,
	})
	if err != nil {
		return nil, err
	}
	c := &Cluster{ControlPlane: cp, Config: cfg, LogDir: cfg.LogDir}
	started := false
	defer func() {
		if !started {
			c.Stop()
		}
	}()
	for _, ns := range []string{SchedulerNamespace, ReservationNamespace, ScaleAdjustNamespace} {
		if err := cp.CreateNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	if c.Kwok, err = c.StartKwok(ctx); err != nil {
		return nil, err
	}
	if c.Binder, err = c.startBinder(ctx); err != nil {
		return nil, err
	}
	if c.Scheduler, err = c.startScheduler(ctx); err != nil {
		return nil, err
	}
	started = true
	return c, nil
}

// Stop stops every process (pod-grouper, scheduler, binder, kwok) and then the control plane.
func (c *Cluster) Stop() {
	for _, p := range []*Process{c.PodGrouper, c.Scheduler, c.Binder, c.Kwok} {
		if p != nil {
			_ = p.Stop()
		}
	}
	if c.ControlPlane != nil {
		_ = c.ControlPlane.Stop()
	}
}

// freeAddr is 127.0.0.1:<a port free a moment ago>.
func freeAddr() (string, error) {
	port, err := framework.FreePort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

func (c *Cluster) process(name, bin string, args []string, readyPath string, addr string) *Process {
	p := &Process{Name: name, Bin: bin, Args: args, LogPath: filepath.Join(c.LogDir, name+".log"),
		Env: []string{"KUBECONFIG=" + c.Kubeconfig}}
	if readyPath != "" {
		p.ReadyURL = "http://" + addr + readyPath
	}
	return p
}

// StartKwok runs kwok on the nodes annotated kwok.x-k8s.io/node=fake with kwokStages as its pod
// stages (its default node stages make such a node Ready and keep it so): a bound pod becomes
// Running and Ready and stays so until FinishPod or ExitPod. It needs only c.ControlPlane,
// c.Config.Assets and c.LogDir, so a Cluster without KAI (hack/statuscluster) can use it.
func (c *Cluster) StartKwok(ctx context.Context) (*Process, error) {
	stages := filepath.Join(c.LogDir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, []byte(kwokStages), 0o644); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p := c.process("kwok", filepath.Join(c.Config.Assets, "kwok"), []string{
		"--kubeconfig=" + c.Kubeconfig, "--config=" + stages, "--server-address=" + addr,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=" + FakeNodeAnnotation + "=fake",
	}, "/healthz", addr)
	return p, p.Start(ctx)
}

// startBinder runs KAI's binder with the flags of real-kai.md (KAI's operator renders the same,
// pkg/operator/operands/binder/resources.go), --fake-gpu-nodes because kwok's GPUs have no
// device plugin.
func (c *Cluster) startBinder(ctx context.Context) (*Process, error) {
	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	probe, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p := c.process("binder", filepath.Join(c.Config.Bin, "binder"), []string{
		"--kubeconfig=" + c.Kubeconfig, "--scheduler-name=" + SchedulerName,
		"--resource-reservation-namespace=" + ReservationNamespace, "--resource-reservation-service-account=" + ReservationAccount,
		"--resource-reservation-app-label=" + ReservationAppLabel, "--scale-adjust-namespace=" + ScaleAdjustNamespace,
		"--fake-gpu-nodes", "--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + probe,
	}, "/metrics", metrics) // the binder registers no health check: its probe server answers 404
	return p, p.Start(ctx)
}

// startScheduler runs KAI's scheduler (kubeconfig from KUBECONFIG only) with the configuration
// KAI's operator renders for a default SchedulingShard (schedulerConfig).
func (c *Cluster) startScheduler(ctx context.Context) (*Process, error) {
	conf := filepath.Join(c.LogDir, "scheduler-config.yaml")
	if err := os.WriteFile(conf, []byte(schedulerConfig()), 0o644); err != nil {
		return nil, err
	}
	listen, err := freeAddr()
	if err != nil {
		return nil, err
	}
	pluginPort, err := framework.FreePort()
	if err != nil {
		return nil, err
	}
	p := c.process("scheduler", filepath.Join(c.Config.Bin, "scheduler"), []string{
		"--scheduler-conf=" + conf, "--scheduler-name=" + SchedulerName, "--namespace=" + SchedulerNamespace,
		"--nodepool-label-key=" + NodePoolLabelKey, "--partition-label-value=", "--resource-reservation-app-label=" + ReservationAppLabel,
		"--queue-label-key=" + QueueLabelKey, "--listen-address=" + listen, "--plugin-server-port=" + strconv.Itoa(pluginPort),
		"--schedule-period=" + c.Config.SchedulePeriod.String(), "--v=" + strconv.Itoa(c.Config.SchedulerVerbosity),
	}, "/metrics", listen)
	return p, p.Start(ctx)
}

// StartPodGrouper starts KAI's own pod-grouper beside gangmap, as a KAI install runs it, with
// extra flags after the defaults (e.g. "--generic-karta-fallback=false"; KAI's default is true).
// Stop it with StopPodGrouper.
func (c *Cluster) StartPodGrouper(ctx context.Context, extra ...string) error {
	return c.StartPodGrouperBinary(ctx, filepath.Join(c.Config.Bin, "podgrouper"), extra...)
}

// StartPodGrouperBinary is StartPodGrouper with another pod-grouper binary that takes KAI's
// pod-grouper flags, e.g. KAI's pod-grouper application built with gangmap's plugins hub
// (issue 29); it is c.PodGrouper, stopped by StopPodGrouper.
func (c *Cluster) StartPodGrouperBinary(ctx context.Context, bin string, extra ...string) error {
	if c.PodGrouper != nil && c.PodGrouper.Running() {
		return errors.New("KAI's pod-grouper is running")
	}
	metrics, err := freeAddr()
	if err != nil {
		return err
	}
	probe, err := freeAddr()
	if err != nil {
		return err
	}
	// The flags KAI's chart gives its pod-grouper, shared with make bench-vs-kai
	// (framework.StartRealKAIPodGrouper).
	args := framework.KAIPodGrouperArgs(c.Kubeconfig, metrics, probe, extra...)
	c.PodGrouper = c.process("podgrouper", bin, args, "/healthz", probe)
	return c.PodGrouper.Start(ctx)
}

// StopPodGrouper stops KAI's pod-grouper (SIGTERM); a no-op when it is not running.
func (c *Cluster) StopPodGrouper() error {
	if c.PodGrouper == nil {
		return nil
	}
	return c.PodGrouper.Stop()
}

// Processes are the KAI processes that run: scheduler, binder, and the pod-grouper while it runs.
func (c *Cluster) Processes() []*Process {
	out := []*Process{c.Scheduler, c.Binder}
	if c.PodGrouper != nil && (c.PodGrouper.Running() || c.PodGrouper.Exited()) {
		out = append(out, c.PodGrouper)
	}
	return out
}

// CheckRunning fails naming each KAI process or kwok that exited, with its log's tail: a test that
// waits for admission first checks that the scheduler it relies on is still alive.
func (c *Cluster) CheckRunning() error {
	var dead []string
	for _, p := range append(c.Processes(), c.Kwok) {
		if p != nil && p.Exited() {
			dead = append(dead, fmt.Sprintf("%s exited; last lines of %s:\n%s", p.Name, p.LogPath, p.Tail(30)))
		}
	}
	if len(dead) > 0 {
		return errors.New(strings.Join(dead, "\n"))
	}
	return nil
}
