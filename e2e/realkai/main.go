package realkai

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// RunMain is the TestMain body of a real-KAI e2e package (e2e/realkai, e2e/realkai/inkai): it
// reads the configuration with the package's workload CRDs (failing, never skipping, without
// KAI_BIN, KAI_SRC or the control plane), starts the cluster with opts, calls setUp (queues,
// definitions and the package's grouper; it returns what stops that grouper), runs the tests and
// stops everything, keeping the logs when a test failed or KAI_KEEP_LOGS=1. name prefixes every
// message. The exit code is m.Run's, or 1 when the set-up failed.
func RunMain(m *testing.M, name string, crds []string, opts Options,
	setUp func(ctx context.Context, c *Cluster, cfg Config) (stop func() error, err error)) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	cfg, err := FromEnv(crds...)
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
	ctx := context.Background()
	start := time.Now()
	c, err := Start(ctx, cfg, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
	code := 1
	defer func() {
		c.Stop()
		if code == 0 && os.Getenv(EnvKeepLogs) != "1" {
			_ = os.RemoveAll(c.LogDir)
		} else {
			fmt.Fprintf(os.Stderr, "%s: logs of KAI, kwok and the grouper kept in %s\n", name, c.LogDir)
		}
	}()
	fmt.Fprintf(os.Stderr, "%s: KAI %s from %s, scheduler and binder up in %v; logs in %s\n",
		name, cfg.SourceVersion(), cfg.Bin, time.Since(start).Round(time.Millisecond), c.LogDir)
	stop, err := setUp(ctx, c, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
	code = m.Run()
	_ = stop()
	return code
}
