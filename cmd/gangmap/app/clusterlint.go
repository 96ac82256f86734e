package app

import (
	"context"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/podgrouper/runtime/crdlint"
)

// lintAgainstClusterCRDs runs the grouper's in-cluster lint (podgrouper/runtime/crdlint) on reg with the
// cluster's CRDs, so that `gangmap definitions --cluster` shows a definition the grouper refuses
// (a path its kind's CRD cannot hold) as not active, with the grouper's problem (issue 31 point 8:
// it was listed ACTIVE yes). Reading CRDs needs get on customresourcedefinitions; the linter
// skips a kind whose CRD it cannot read.
func (c *kubeClients) lintAgainstClusterCRDs(ctx context.Context, reg *definitions.Registry) error {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	cl, err := client.New(c.config, client.Options{Scheme: scheme, Mapper: c.mapper})
	if err != nil {
		return err
	}
	l := &crdlint.Linter{Registry: reg, Reader: cl, Mapper: c.mapper}
	l.LintAll(ctrl.LoggerInto(ctx, logr.Discard()))
	return nil
}
