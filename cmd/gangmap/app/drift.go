package app

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
)

// driftSample is how many live workloads of each kind `gangmap definitions --cluster` plans to
// find drift.
const driftSample = 50

// restConfig loads the kubeconfig the cluster flags name. Errors are *configError.
func (c *clusterFlags) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.context}).ClientConfig()
	if err != nil {
		return nil, &configError{err}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = clusterRequestTimeout
	}
	return cfg, nil
}

// clusterDrift plans up to driftSample live workloads of the kind of every active definition
// (all namespaces) and returns, by definition origin, one line per path that resolved to
// nothing: "drift: <path> (<expression>) resolved to nothing on N of M <Kind> workloads". Kinds
// the cluster does not serve are skipped. A workload whose plan fails is a line too.
func clusterDrift(ctx context.Context, cfg *rest.Config, reg *definitions.Registry) (map[string][]string, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := dc.ServerGroups(); apierrors.IsNotFound(err) {
		return nil, nil // no discovery (not a full API server): nothing to check
	} else if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	out := map[string][]string{}
	for _, e := range reg.Entries() {
		if !e.Active {
			continue
		}
		gvk := e.Kind.GVK()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		list, err := dyn.Resource(mapping.Resource).List(ctx, metav1.ListOptions{Limit: driftSample})
		if err != nil {
			out[e.Origin] = append(out[e.Origin], fmt.Sprintf("drift: cannot list %s: %v", mapping.Resource.GroupResource(), err))
			continue
		}
		c := reg.Lookup(gvk)
		misses := map[definitions.PathMiss]int{}
		var failed []string
		for i := range list.Items {
			p, err := gang.Build(ctx, c, &list.Items[i])
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
