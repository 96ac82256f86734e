//go:build e2e

// Package scale is the scale benchmark (`make bench-scale`, not in CI): N pods of M workloads on
// a real control plane, grouped by gangmap-grouper run as a process, with the time to group all,
// the grouper's API calls per pod, its resident set and heap, and the heap per cached pod.
package scale

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gangmap/gangmap/e2e/framework"
)

// cp is this package's own control plane; grouperBin is gangmap-grouper built from this
// checkout, run as a process so that its memory is measured on its own.
var (
	cp                  *framework.ControlPlane
	grouperBin, workDir string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(logr.Discard())
	// Only the benchmark needs the control plane: `make e2e` (no -bench) runs nothing here and
	// starts nothing.
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		return m.Run()
	}
	var err error
	workDir, err = os.MkdirTemp("", "gangmap-e2e-scale-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		return 1
	}
	keep := false
	defer func() {
		if !keep {
			_ = os.RemoveAll(workDir)
		}
	}()
	// Fail, never skip, without the control plane.
	cp, err = framework.Start("../testdata/crds/e2e.example.com_customjobs.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	start := time.Now()
	grouperBin, err = framework.BuildGrouperBinary(context.Background(), workDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "scale: built gangmap-grouper in %v\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	if code != 0 {
		keep = true
		fmt.Fprintf(os.Stderr, "scale: grouper logs kept in %s\n", workDir)
	}
	return code
}
