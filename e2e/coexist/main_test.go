//go:build e2e

// Package coexist runs gangmap beside a stand-in for KAI's own pod-grouper
// (framework.KAIPodGrouper) on a real kube-apiserver and etcd, and stops and starts gangmap under
// running workloads: no pod of a gang is ever in a PodGroup it alone satisfies once gangmap took
// the workload, and stray PodGroups go away.
package coexist

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gangmap/gangmap/cmd/gangmap-grouper/app"
	"github.com/gangmap/gangmap/e2e/framework"
)

var (
	cp  *framework.ControlPlane
	kai *framework.KAIPodGrouper
	// gm is gangmap's grouper (webhook and controller), stopped and started by the tests.
	gm *gangmap
)

// strayGrace is --stray-podgroup-grace in these tests.
const strayGrace = 2 * time.Second

const timeout = 20 * time.Second

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	var err error
	// Fail, never skip, without the control plane. The webhook is called for every namespace.
	cp, err = framework.StartWith(framework.Options{
		CRDs: []string{
			"../testdata/crds/e2e.example.com_customjobs.yaml",
			"../testdata/crds/jobset.x-k8s.io_jobsets.yaml",
			"../faults/testdata/faults.example.com_doomedjobs.yaml",
			"testdata/e2e.example.com_alphajobs.yaml",
			"testdata/e2e.example.com_clusterjobs.yaml",
		},
		MutatingWebhooks: []*admissionregistrationv1.MutatingWebhookConfiguration{framework.GangmapWebhook("gangmap-grouper", &metav1.LabelSelector{})},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "coexist:", err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if kai, err = framework.StartKAIPodGrouper(ctx, cp.Config); err != nil {
		fmt.Fprintln(os.Stderr, "coexist: KAI pod-grouper stand-in:", err)
		return 1
	}
	if _, err := cp.ApplyFile(ctx, "../testdata/customjob-karta.yaml", ""); err != nil {
		fmt.Fprintln(os.Stderr, "coexist:", err)
		return 1
	}
	gm = &gangmap{}
	if err := gm.start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "coexist: grouper:", err)
		return 1
	}
	code := m.Run()
	gm.stop()
	return code
}

// gangmap is the in-process grouper: its admission webhook where the API server calls it, and
// the controller; stop makes the webhook unreachable (failurePolicy Ignore admits pods unchanged)
// and stops all grouping, as when every gangmap replica is down.
type gangmap struct {
	cancel context.CancelFunc
	done   <-chan error
	g      *framework.Grouper
}

func (g *gangmap) start(ctx context.Context) error {
	o := app.DefaultOptions()
	o.NativeKindsRemove = []string{"jobset.x-k8s.io/v1alpha2/JobSet"}
	o.StrayPodGroupGrace = strayGrace
	o.SkipControllerNameValidation = true
	cp.ServeWebhook(o)
	gctx, cancel := context.WithCancel(ctx)
	gr, err := cp.RunGrouper(gctx, o, nil)
	if err != nil {
		cancel()
		return err
	}
	g.cancel, g.done, g.g = cancel, gr.Done, gr
	return nil
}

func (g *gangmap) stop() {
	if g.cancel == nil {
		return
	}
	g.cancel()
	<-g.done
	g.cancel = nil
}
