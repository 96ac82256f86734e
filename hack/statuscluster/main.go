// Command statuscluster runs a small live cluster on which an operator's own controller writes the
// status objects of the status corpus (definitions/catalog/tests/status): gangmap's test control
// plane (kube-apiserver and etcd, framework.StartWith), kube-controller-manager (Job, ReplicaSet,
// Deployment, StatefulSet, garbage collector, ... controllers), kube-scheduler, and kwok managing
// one fake node on which every bound pod becomes Running and Ready (realkai.Cluster.StartKwok).
// A recording script (hack/record-status/*.sh) installs the operator's CRDs, runs the operator's
// controller against DIR/kubeconfig and sets pod phases as containers exiting would
// (hack/record-status/lib.sh).
//
// Usage:
//
//	KUBEBUILDER_ASSETS=$(bash hack/control-plane.sh) go run ./hack/statuscluster --log-dir DIR [--crds PATH]...
//
// It prints READY on stdout once the node is schedulable and the CRDs are established, and stops
// everything on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/e2e/realkai"
)

// kcmControllers are the kube-controller-manager controllers a workload operator relies on: its
// Jobs, ReplicaSets, Deployments and StatefulSets get pods, deleted owners take their dependents,
// namespaces get their default ServiceAccount. No token controller: the test control plane has no
// service-account signing key.
const kcmControllers = "job,cronjob,ttl-after-finished,replicaset,deployment,statefulset,daemonset,disruption," +
	"garbagecollector,namespace,serviceaccount,endpointslice,podgc,resourcequota"

// crdPaths collects repeated --crds flags.
type crdPaths []string

func (p *crdPaths) String() string     { return strings.Join(*p, ",") }
func (p *crdPaths) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	var crds crdPaths
	logDir := flag.String("log-dir", "", "directory for kubeconfig and every process's log (required)")
	gpus := flag.Int("gpus", 64, "nvidia.com/gpu capacity of the fake node node-0")
	flag.Var(&crds, "crds", "a CRD YAML file or directory to apply before READY (repeatable)")
	flag.Parse()
	if *logDir == "" {
		fmt.Fprintln(os.Stderr, "statuscluster: --log-dir is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = untilOrphaned(ctx)
	if err := run(ctx, *logDir, *gpus, crds); err != nil {
		fmt.Fprintln(os.Stderr, "statuscluster:", err)
		os.Exit(1)
	}
}

// run starts the cluster, prints READY and blocks until ctx ends; everything started is stopped
// on return.
func run(ctx context.Context, logDir string, gpus int, crds []string) error {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	cp, err := framework.StartWith(framework.Options{})
	if err != nil {
		return err
	}
	c := &realkai.Cluster{ControlPlane: cp, Config: realkai.Config{Assets: assets}, LogDir: logDir}
	defer c.Stop()
	kubeconfig := filepath.Join(logDir, "kubeconfig")
	if err := copyFile(cp.Kubeconfig, kubeconfig); err != nil {
		return err
	}
	if c.Kwok, err = c.StartKwok(ctx); err != nil {
		return err
	}
	procs, err := startControllers(ctx, c, assets)
	defer func() {
		for _, p := range procs {
			_ = p.Stop()
		}
	}()
	if err != nil {
		return err
	}
	if err := c.CreateGPUNodes(ctx, realkai.NodeSpec{Names: []string{"node-0"}, GPUs: gpus}); err != nil {
		return err
	}
	if err := addEphemeralStorage(ctx, c, "node-0"); err != nil {
		return err
	}
	if err := applyCRDs(ctx, filepath.Join(assets, "kubectl"), kubeconfig, crds); err != nil {
		return err
	}
	for _, p := range procs {
		if !p.Running() {
			return fmt.Errorf("%s exited:\n%s", p.Name, p.Tail(20))
		}
	}
	fmt.Println("READY")
	fmt.Fprintf(os.Stderr, "statuscluster: export KUBECONFIG=%s (logs in %s)\n", kubeconfig, logDir)
	<-ctx.Done()
	return nil
}

// startControllers starts kube-controller-manager and kube-scheduler, each logging into c.LogDir.
func startControllers(ctx context.Context, c *realkai.Cluster, assets string) ([]*realkai.Process, error) {
	var procs []*realkai.Process
	for _, p := range []*realkai.Process{
		{Name: "kube-controller-manager", Bin: filepath.Join(assets, "kube-controller-manager"), Args: []string{
			"--kubeconfig=" + c.Kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
			"--use-service-account-credentials=false", "--controllers=" + kcmControllers}},
		{Name: "kube-scheduler", Bin: filepath.Join(assets, "kube-scheduler"), Args: []string{
			"--kubeconfig=" + c.Kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0"}},
	} {
		p.LogPath = filepath.Join(c.LogDir, p.Name+".log")
		if err := p.Start(ctx); err != nil {
			return procs, err
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// applyCRDs applies every CRD path (server-side, so large CRDs fit) and waits until all CRDs are
// established.
func applyCRDs(ctx context.Context, kubectl, kubeconfig string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	args := []string{"--kubeconfig=" + kubeconfig, "apply", "--server-side", "-R"}
	for _, p := range paths {
		args = append(args, "-f", p)
	}
	if out, err := exec.CommandContext(ctx, kubectl, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args[1:], " "), err, out)
	}
	// kubectl wait fails at once ("accessor error") on a CRD the API server has not written
	// conditions on yet (large ones, e.g. KServe's): retry it until the deadline.
	wait := []string{"--kubeconfig=" + kubeconfig, "wait", "--for=condition=Established", "crd", "--all", "--timeout=10s"}
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := exec.CommandContext(ctx, kubectl, wait...).CombinedOutput()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("kubectl %s: %w\n%s", strings.Join(wait[1:], " "), err, out)
		}
		time.Sleep(time.Second)
	}
}

// untilOrphaned is ctx, cancelled too when the process that started this one exits (it is
// reparented): a recording script killed without running its trap leaves no cluster behind.
func untilOrphaned(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	parent := os.Getppid()
	go func() {
		defer cancel()
		for ctx.Err() == nil && os.Getppid() == parent {
			time.Sleep(time.Second)
		}
	}()
	return ctx
}

// addEphemeralStorage gives the node 1 TiB of ephemeral-storage capacity and allocatable, which
// every kubelet reports and kwok's node stage does not: operators' pods that request it (the
// training-operator's MPIJob launcher, mpijob_controller.go newLauncher) must schedule.
func addEphemeralStorage(ctx context.Context, c *realkai.Cluster, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := c.Client.Get(ctx, types.NamespacedName{Name: name}, n); err != nil {
			return err
		}
		n.Status.Capacity[corev1.ResourceEphemeralStorage] = resource.MustParse("1Ti")
		n.Status.Allocatable[corev1.ResourceEphemeralStorage] = resource.MustParse("1Ti")
		return c.Client.Status().Update(ctx, n)
	})
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return errors.New(from + " is empty")
	}
	return os.WriteFile(to, b, 0o600)
}
