//go:build e2e

package load

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gangmap/gangmap/e2e/framework"
)

// cp is this package's own control plane; grouperBin is gangmap-grouper built from this
// checkout, run as a process so that its memory can be measured on its own.
var (
	cp                  *framework.ControlPlane
	grouperBin, workDir string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	var err error
	workDir, err = os.MkdirTemp("", "gangmap-e2e-load-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		return 1
	}
	keep := false
	defer func() {
		if !keep {
			_ = os.RemoveAll(workDir)
		}
	}()
	// Fail, never skip, without the control plane.
	cp, err = framework.Start(
		"../testdata/crds/e2e.example.com_customjobs.yaml",
		"testdata/broken.example.com_brokenjobs.yaml",
		"testdata/loop.example.com_loopjobs.yaml",
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	start := time.Now()
	grouperBin, err = framework.BuildGrouperBinary(context.Background(), workDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "load: built gangmap-grouper in %v\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	if code != 0 {
		keep = true
		fmt.Fprintf(os.Stderr, "load: grouper logs kept in %s\n", workDir)
	}
	return code
}
