//go:build e2e_kai

// Package inkai_test runs gangmap inside KAI's pod-grouper on the real KAI scheduler: the
// harness of e2e/realkai (kwok, KAI's scheduler and binder as processes) with
// gangmap-kai-podgrouper (kaipodgrouper/, built from this checkout against KAI_SRC) as the only
// pod-grouper, and no gangmap webhook or controller. make e2e-kai runs it with e2e/realkai.
package inkai_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/e2e/realkai"
)

var (
	kai *realkai.Cluster
	// podGrouper is gangmap-kai-podgrouper, the cluster's only pod-grouper.
	podGrouper *realkai.Process
	// podGrouperBin is its binary; metricsAddr is where podGrouper serves its metrics.
	podGrouperBin, metricsAddr string
)

const (
	parentQueue = "gangmap-e2e-parent"
	queue       = "gangmap-e2e"
	// admitTimeout bounds a wait for KAI to bind a gang that fits.
	admitTimeout = 60 * time.Second
	// holdPeriod is how long a gang that must not be admitted is watched: 10 scheduling cycles.
	holdPeriod = 10 * time.Second
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// No gangmap webhook: the pod-grouper is the only grouper.
	return realkai.RunMain(m, "e2e-kai inkai", []string{
		"../../testdata/crds/e2e.example.com_customjobs.yaml",
		"../../testdata/crds/jobset.x-k8s.io_jobsets.yaml",
		"../../testdata/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml",
		"../testdata/e2e.example.com_typojobs.yaml",
		"../testdata/serving.kserve.io_llminferenceservices.yaml",
		"../../testdata/crds/batch.volcano.sh_jobs.yaml",
	}, realkai.Options{}, func(ctx context.Context, c *realkai.Cluster, cfg realkai.Config) (func() error, error) {
		kai = c
		if err := setUp(ctx, cfg); err != nil {
			return nil, err
		}
		return podGrouper.Stop, nil
	})
}

// setUp creates the queues and the CustomJob's cluster Karta, builds gangmap-kai-podgrouper and
// starts it.
func setUp(ctx context.Context, cfg realkai.Config) error {
	if err := kai.CreateQueues(ctx, parentQueue, queue); err != nil {
		return err
	}
	if _, err := kai.ApplyFile(ctx, "../../testdata/customjob-karta.yaml", ""); err != nil {
		return err
	}
	bin, err := buildKAIPodGrouper(ctx, cfg.Src)
	if err != nil {
		return err
	}
	metrics, probe, err := addrs()
	if err != nil {
		return err
	}
	podGrouperBin, metricsAddr = bin, metrics
	podGrouper = &realkai.Process{Name: "gangmap-kai-podgrouper", Bin: bin,
		Args: []string{"--kubeconfig=" + kai.Kubeconfig, "--scheduler-name=" + realkai.SchedulerName,
			"--queue-label-key=" + realkai.QueueLabelKey, "--nodepool-label-key=" + realkai.NodePoolLabelKey,
			"--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + probe},
		Env:     []string{"KUBECONFIG=" + kai.Kubeconfig},
		LogPath: filepath.Join(kai.LogDir, "gangmap-kai-podgrouper.log"),
		// /readyz includes gangmap's definitions check: ready once the Kartas are loaded.
		ReadyURL: "http://" + probe + "/readyz",
	}
	return podGrouper.Start(ctx)
}

// buildKAIPodGrouper builds the nested module's binary against KAI's source (hack/kai-module.sh).
func buildKAIPodGrouper(ctx context.Context, kaiSrc string) (string, error) {
	out := filepath.Join(kai.LogDir, "gangmap-kai-podgrouper")
	cmd := exec.CommandContext(ctx, "bash", "../../../hack/kai-module.sh")
	cmd.Env = append(os.Environ(), "KAI_SRC="+kaiSrc, "KAI_MODULE_BUILD_ONLY=1", "KAI_MODULE_OUT="+out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building gangmap-kai-podgrouper: %w: %s", err, strings.TrimSpace(string(b)))
	}
	return out, nil
}

// addrs are two free loopback addresses, for metrics and probes.
func addrs() (metrics, probe string, err error) {
	var ports [2]int
	for i := range ports {
		if ports[i], err = framework.FreePort(); err != nil {
			return "", "", err
		}
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1]), nil
}
