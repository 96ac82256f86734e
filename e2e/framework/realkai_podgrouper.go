package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// EnvKAIBin names the directory of KAI's binaries (scheduler, binder, podgrouper) built from a
// KAI checkout outside this repository: `CGO_ENABLED=0 go build -o <dir>/ ./cmd/scheduler
// ./cmd/binder ./cmd/podgrouper`. Tests and make targets take them by path; nothing of KAI is in
// the repository.
const EnvKAIBin = "KAI_BIN"

// ErrNoKAIBin says KAI_BIN does not name a directory with KAI's podgrouper binary.
var ErrNoKAIBin = errors.New("KAI_BIN must name a directory holding KAI's podgrouper binary " +
	"(in a KAI checkout: CGO_ENABLED=0 go build -o <dir>/ ./cmd/scheduler ./cmd/binder ./cmd/podgrouper)")

// KAIPodGrouperBinary returns KAI_BIN's podgrouper, or an error wrapping ErrNoKAIBin naming what
// is missing.
func KAIPodGrouperBinary() (string, error) {
	dir := os.Getenv(EnvKAIBin)
	if dir == "" {
		return "", fmt.Errorf("%w: KAI_BIN is not set", ErrNoKAIBin)
	}
	bin := filepath.Join(dir, "podgrouper")
	if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%w: KAI_BIN=%s has no executable podgrouper (%v)", ErrNoKAIBin, dir, err)
	}
	return bin, nil
}

// KAIPodGrouperArgs are the flags KAI's pod-grouper (cmd/podgrouper, KAI v0.17
// cmd/podgrouper/app/options.go) is run with beside the real scheduler: the names KAI's chart
// defaults (scheduler kai-scheduler, queue label kai.scheduler/queue, node-pool label
// kai.scheduler/node-pool), its metrics and probes on the given localhost addresses (both default
// to :8080 and :8081 and would clash), no leader election (its default). --generic-karta-fallback
// is left at KAI's default, true: kinds without a native plugin go to its Karta fallback. Its QPS
// and burst are KAI's defaults (50 and 300) unless extra sets --qps and --burst.
func KAIPodGrouperArgs(kubeconfig, metricsAddr, probeAddr string, extra ...string) []string {
	return append([]string{
		"--kubeconfig=" + kubeconfig, "--scheduler-name=kai-scheduler", "--queue-label-key=kai.scheduler/queue",
		"--nodepool-label-key=kai.scheduler/node-pool", "--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=" + probeAddr,
	}, extra...)
}

// StartRealKAIPodGrouper runs KAI's own pod-grouper binary bin (KAIPodGrouperBinary) as a process
// against the cluster of kubeconfig with KAIPodGrouperArgs and extra flags, logging into
// logDir/kai-podgrouper.log, and waits until its metrics endpoint (plain HTTP on a free localhost
// port, controller-runtime's: rest_client_requests_total, process_cpu_seconds_total, workqueue_*)
// answers. The returned process is a GrouperProcess, so it is stopped, scraped and measured (RSS,
// peak RSS) as gangmap's grouper is.
func StartRealKAIPodGrouper(ctx context.Context, bin, kubeconfig, logDir string, extra ...string) (*GrouperProcess, error) {
	metrics, err := FreePort()
	if err != nil {
		return nil, err
	}
	probe, err := FreePort()
	if err != nil {
		return nil, err
	}
	metricsAddr, probeAddr := fmt.Sprintf("127.0.0.1:%d", metrics), fmt.Sprintf("127.0.0.1:%d", probe)
	g := &GrouperProcess{
		Bin:        bin,
		Args:       KAIPodGrouperArgs(kubeconfig, metricsAddr, probeAddr, extra...),
		MetricsURL: "http://" + metricsAddr + "/metrics",
		LogPath:    filepath.Join(logDir, "kai-podgrouper.log"),
	}
	if err := g.Start(ctx); err != nil {
		return nil, fmt.Errorf("KAI's pod-grouper: %w", err)
	}
	return g, nil
}
