//go:build e2e

package load

import (
	"context"
	"os"
	"testing"

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
	return framework.RunWithGrouper(m, "load", &workDir, &grouperBin, func(context.Context) (func() error, error) {
		var err error
		cp, err = framework.Start(
			"../testdata/crds/e2e.example.com_customjobs.yaml",
			"testdata/broken.example.com_brokenjobs.yaml",
			"testdata/loop.example.com_loopjobs.yaml",
		)
		if err != nil {
			return nil, err
		}
		return cp.Stop, nil
	})
}
