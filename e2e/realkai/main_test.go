//go:build e2e_kai

package realkai_test

import (
	"context"
	"os"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/e2e/realkai"
)

// kai is the cluster of this package: the control plane with kwok, KAI's scheduler and binder,
// and gangmap's grouper (webhook and controller) as a process. The tests run one after the
// other; each has its own namespace and its own fake GPU nodes, which only its pods select.
var kai *realkai.Cluster

// gm is gangmap's grouper process; grouperBin its binary, built from this checkout.
var (
	gm         *framework.GrouperProcess
	grouperBin string
)

const (
	parentQueue = "gangmap-e2e-parent"
	queue       = "gangmap-e2e"
	// admitTimeout bounds a wait for KAI to bind a gang that fits (about 1 s of scheduling
	// period, the binder, and gangmap grouping the pods, on a loaded 2-core machine).
	admitTimeout = 60 * time.Second
	// holdPeriod is how long a gang that must not be admitted is watched: 10 scheduling cycles.
	holdPeriod = 10 * time.Second
)

// grouperArgs: JobSet, LeaderWorkerSet and MPIJob v2beta1 are native kinds of KAI v0.17; gangmap
// groups them here as on a KAI without those plugins (the configuration in which issue 27's
// start-order deadlocks were measured). Strays are collected quickly.
var grouperArgs = []string{
	"--native-kinds-remove=jobset.x-k8s.io/v1alpha2/JobSet,leaderworkerset.x-k8s.io/v1/LeaderWorkerSet,kubeflow.org/v2beta1/MPIJob",
	"--stray-podgroup-grace=5s",
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	return realkai.RunMain(m, "e2e-kai", []string{
		"../testdata/crds/e2e.example.com_customjobs.yaml",
		"../testdata/crds/jobset.x-k8s.io_jobsets.yaml",
		"../testdata/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml",
		"../testdata/crds/batch.volcano.sh_jobs.yaml",
		"../testdata/crds/kubeflow.org_mpijobs.yaml",
		"testdata/e2e.example.com_typojobs.yaml",
		"testdata/e2e.example.com_brokenjobs.yaml",
		"testdata/serving.kserve.io_llminferenceservices.yaml",
	}, realkai.Options{MutatingWebhooks: []*admissionregistrationv1.MutatingWebhookConfiguration{realkai.GangmapWebhook()}},
		func(ctx context.Context, c *realkai.Cluster, _ realkai.Config) (func() error, error) {
			kai = c
			if err := setUp(ctx); err != nil {
				return nil, err
			}
			return gm.Stop, nil
		})
}

// setUp creates the queues and the CustomJob definition, and starts gangmap.
func setUp(ctx context.Context) error {
	if err := kai.CreateQueues(ctx, parentQueue, queue); err != nil {
		return err
	}
	if _, err := kai.ApplyFile(ctx, "../testdata/customjob-karta.yaml", ""); err != nil {
		return err
	}
	var err error
	if grouperBin, err = framework.BuildGrouperBinary(ctx, kai.LogDir); err != nil {
		return err
	}
	gm, err = kai.StartGangmap(ctx, grouperBin, grouperArgs...)
	return err
}
