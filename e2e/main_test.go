//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/e2e/framework"
)

// cp is the control plane shared by the tests of this package; the grouper runs against it with
// JobSet removed from the native table, as on a KAI release without the JobSet plugin.
var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	var err error
	cp, err = framework.Start(
		"testdata/crds/e2e.example.com_customjobs.yaml",
		"testdata/crds/jobset.x-k8s.io_jobsets.yaml",
		"testdata/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml",
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := app.DefaultOptions()
	o.NativeKindsRemove = []string{"jobset.x-k8s.io/v1alpha2/JobSet", "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet"}
	done, err := cp.StartGrouper(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: grouper:", err)
		return 1
	}
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "e2e: grouper stopped with:", err)
	}
	return code
}
