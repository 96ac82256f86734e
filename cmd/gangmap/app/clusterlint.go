package app

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/podgrouper/runtime/crdlint"
)

// lintAgainstClusterCRDs runs the grouper's in-cluster lint (podgrouper/runtime/crdlint) on reg with the
// cluster's CRDs, so that `gangmap definitions --cluster` shows a definition the grouper refuses
// (a path its kind's CRD cannot hold) as not active, with the grouper's problem (issue 31 point 8:
// it was listed ACTIVE yes). Reading CRDs needs get on customresourcedefinitions; the linter
// skips a kind whose CRD it cannot read.
func lintAgainstClusterCRDs(ctx context.Context, cfg *rest.Config, reg *definitions.Registry) error {
	if cfg == nil {
		return nil // no cluster (offline)
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper, HTTPClient: hc})
	if err != nil {
		return err
	}
	l := &crdlint.Linter{Registry: reg, Reader: cl, Mapper: mapper}
	l.LintAll(ctrl.LoggerInto(ctx, logr.Discard()))
	return nil
}
