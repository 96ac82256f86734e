//go:build e2e

// Package scale is the scale benchmark (`make bench-scale`, not in CI): N pods of M workloads on
// a real control plane, grouped by gangmap-grouper run as a process, with the time to group all,
// the grouper's API calls per pod, its resident set and heap, and the heap per cached pod.
package scale

import (
	"context"
	"flag"
	"os"
	"testing"

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
	return framework.RunWithGrouper(m, "scale", &workDir, &grouperBin, func(context.Context) (func() error, error) {
		var err error
		if cp, err = framework.Start("../testdata/crds/e2e.example.com_customjobs.yaml"); err != nil {
			return nil, err
		}
		return cp.Stop, nil
	})
}
