package app

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/runtime/crdlint"
)

// driftSample is how many live workloads of each kind `gangmap definitions --cluster` plans to
// find drift.
const driftSample = 50

// clusterChecks runs what `gangmap definitions --cluster` adds to each definition's problems
// (each failure to read a warning on warn): the grouper's CRD lint (it marks the definitions the grouper
// refuses), drift on live workloads (clusterDrift) and the grouper's findings (clusterFindings).
func (c *kubeClients) clusterChecks(ctx context.Context, reg *definitions.Registry, warn io.Writer) (drift, found map[string][]string) {
	c.lintAgainstClusterCRDs(ctx, reg)
	var err error
	if drift, err = c.clusterDrift(ctx, reg); err != nil {
		fmt.Fprintf(warn, "warning: cannot check the definitions against live workloads: %v\n", err)
	}
	if found, err = c.clusterFindings(ctx); err != nil {
		fmt.Fprintf(warn, "warning: cannot read the grouper's findings from the PodGroups: %v\n", err)
	}
	return drift, found
}

// clusterDrift plans up to driftSample live workloads of the kind of every active definition
// (all namespaces) and returns, by definition origin, one line per path that resolved to
// nothing: "drift: <path> (<expression>) resolved to nothing on N of M <Kind> workloads". Kinds
// the cluster does not serve are skipped. A workload whose plan fails is a line too.
func (c *kubeClients) clusterDrift(ctx context.Context, reg *definitions.Registry) (map[string][]string, error) {
	if _, err := c.discovery.ServerGroups(); apierrors.IsNotFound(err) {
		return nil, nil // no discovery (not a full API server): nothing to check
	} else if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, e := range reg.Entries() {
		if !e.Active {
			continue
		}
		gvk := e.Kind.GVK()
		mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		list, err := c.dynamic.Resource(mapping.Resource).List(ctx, metav1.ListOptions{Limit: driftSample})
		if err != nil {
			out[e.Origin] = append(out[e.Origin], fmt.Sprintf("drift: cannot list %s: %v", mapping.Resource.GroupResource(), err))
			continue
		}
		compiled := reg.Lookup(gvk)
		misses := map[definitions.PathMiss]int{}
		var failed []string
		for i := range list.Items {
			p, err := gang.Build(ctx, compiled, &list.Items[i])
			if err != nil {
				failed = append(failed, fmt.Sprintf("drift: %s %s/%s does not plan: %v", gvk.Kind, list.Items[i].GetNamespace(), list.Items[i].GetName(), err))
				continue
			}
			for _, m := range p.Misses {
				misses[m]++
			}
		}
		lines := make([]string, 0, len(misses))
		for m, n := range misses {
			lines = append(lines, fmt.Sprintf("drift: %s (%s) resolved to nothing on %d of %d %s workloads", m.Path, m.Expression, n, len(list.Items), gvk.Kind))
		}
		sort.Strings(lines)
		out[e.Origin] = append(out[e.Origin], append(lines, failed...)...)
	}
	return out, nil
}

// lintAgainstClusterCRDs runs the grouper's in-cluster lint (podgrouper/runtime/crdlint) on reg
// with the cluster's CRDs, so that `gangmap definitions --cluster` shows a definition the grouper
// refuses (a path its kind's CRD cannot hold) as not active, with the grouper's problem. Reading
// CRDs (c.crds; nil: no lint) needs get on customresourcedefinitions; the linter skips a kind
// whose CRD it cannot read.
func (c *kubeClients) lintAgainstClusterCRDs(ctx context.Context, reg *definitions.Registry) {
	if c.crds != nil {
		l := &crdlint.Linter{Registry: reg, Reader: c.crds, Mapper: c.mapper}
		l.LintAll(ctrl.LoggerInto(ctx, logr.Discard()))
	}
}
