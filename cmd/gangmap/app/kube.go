package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// kubeFlags are the cluster flags of the commands that read a cluster: --kubeconfig, --context
// and (describe, get) -n/--namespace, as kubectl reads them.
type kubeFlags struct {
	kubeconfig       string
	context          string
	namespace        string
	grouperNamespace string
}

// defaultGrouperNamespace is the namespace the README installs the chart in.
const defaultGrouperNamespace = "gangmap-system"

func (k *kubeFlags) addFlags(cmd *cobra.Command, namespace bool) {
	f := cmd.Flags()
	f.StringVar(&k.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&k.context, "context", "", "kubeconfig context to use (default: the current context)")
	if namespace {
		f.StringVarP(&k.namespace, "namespace", "n", "", "namespace (default: the context's namespace, else default)")
	}
	f.StringVar(&k.grouperNamespace, "grouper-namespace", defaultGrouperNamespace, "namespace of the chart-installed grouper whose definitions ConfigMap and native table are adopted; a Deployment with the grouper's labels in any other namespace is ignored (any user who may create a Deployment there could copy them)")
	_ = cmd.MarkFlagFilename("kubeconfig")
}

// kubeClients are the read-only clients of one live command. Nothing is installed in the
// cluster: every call is a get or a list.
type kubeClients struct {
	config    *rest.Config
	namespace string
	// grouperNamespace is where the grouper's Deployment is trusted (--grouper-namespace; "" is
	// defaultGrouperNamespace).
	grouperNamespace string
	dynamic          dynamic.Interface
	metadata         metadata.Interface
	kube             kubernetes.Interface
	discovery        discovery.CachedDiscoveryInterface
	mapper           meta.RESTMapper
	// crds reads CustomResourceDefinitions, for the grouper's CRD lint (nil: no lint).
	crds client.Reader
	// owners caches owner lookups by UID for the whole command (hits and misses, nil).
	owners map[types.UID][]metav1.OwnerReference
}

// connect loads the kubeconfig and builds the clients. Errors say why the kubeconfig does not
// load (configError: unusable input).
func (k *kubeFlags) connect(warn io.Writer) (*kubeClients, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, configError(err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = clusterRequestTimeout
	}
	ns := k.namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = metav1.NamespaceDefault
		}
	}
	c := &kubeClients{config: cfg, namespace: ns, grouperNamespace: k.grouperNamespace, owners: map[types.UID][]metav1.OwnerReference{}}
	var errs [4]error
	var disc *discovery.DiscoveryClient
	c.dynamic, errs[0] = dynamic.NewForConfig(cfg)
	c.metadata, errs[1] = metadata.NewForConfig(cfg)
	c.kube, errs[2] = kubernetes.NewForConfig(cfg)
	disc, errs[3] = discovery.NewDiscoveryClientForConfig(cfg)
	if err := cmp.Or(errs[:]...); err != nil {
		return nil, configError(err) // the first one
	}
	c.discovery = memory.NewMemCacheClient(disc)
	c.mapper = restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(c.discovery), c.discovery, func(s string) {
		fmt.Fprintf(warn, "warning: %s\n", s)
	})
	scheme := runtime.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	if c.crds, err = client.New(cfg, client.Options{Scheme: scheme, Mapper: c.mapper}); err != nil {
		return nil, configError(err)
	}
	return c, nil
}

// errUnknownKind says the cluster serves no resource of that name.
var errUnknownKind = errors.New("the server doesn't have a resource type")

// resolveKind maps what the user typed (plural, singular, short name or Kind, optionally
// qualified as resource.group or resource.version.group) to a RESTMapping through discovery.
// When the kind is served in several versions, the version that has a definition in reg wins,
// else the server's preferred one.
func (c *kubeClients) resolveKind(arg string, reg *definitions.Registry) (*meta.RESTMapping, error) {
	var gvr schema.GroupVersionResource
	err := errUnknownKind
	full, gr := schema.ParseResourceArg(strings.ToLower(arg))
	if full != nil {
		gvr, err = c.mapper.ResourceFor(*full)
	}
	if err != nil {
		gvr, err = c.mapper.ResourceFor(gr.WithVersion(""))
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("%w %q", errUnknownKind, arg)
		}
		return nil, fmt.Errorf("resolving %q: %w", arg, err)
	}
	gvk, err := c.mapper.KindFor(gvr)
	var mappings []*meta.RESTMapping
	if err == nil {
		mappings, err = c.mapper.RESTMappings(gvk.GroupKind())
	}
	if err != nil {
		return nil, fmt.Errorf("resolving %q: %w", arg, err)
	}
	if i := slices.IndexFunc(mappings, func(m *meta.RESTMapping) bool { return reg.Lookup(m.GroupVersionKind) != nil }); i >= 0 {
		return mappings[i], nil
	}
	if i := slices.IndexFunc(mappings, func(m *meta.RESTMapping) bool { return m.GroupVersionKind == gvk }); i >= 0 {
		return mappings[i], nil
	}
	if len(mappings) == 0 {
		return nil, fmt.Errorf("%w %q", errUnknownKind, arg)
	}
	return mappings[0], nil
}

// scope is the namespace of a request: "" for every namespace or a cluster-scoped kind.
func scope(m *meta.RESTMapping, ns string) string {
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return ""
	}
	return ns
}

// pointers points at each item of a list.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// podGroupGVR is KAI's PodGroup resource.
var podGroupGVR = v2alpha2.SchemeGroupVersion.WithResource(v2alpha2.Resource)

// errNoPodGroupCRD says the cluster does not serve KAI's PodGroups.
var errNoPodGroupCRD = errors.New("the PodGroup CRD (podgroups.scheduling.run.ai) is not installed")

// listPodGroups lists KAI's PodGroups of one namespace ("" for all), in one request.
func (c *kubeClients) listPodGroups(ctx context.Context, ns string) ([]*v2alpha2.PodGroup, error) {
	list, err := c.dynamic.Resource(podGroupGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, errNoPodGroupCRD
	}
	if err != nil {
		return nil, fmt.Errorf("listing PodGroups: %w", err)
	}
	out := make([]*v2alpha2.PodGroup, 0, len(list.Items))
	for i := range list.Items {
		pg := &v2alpha2.PodGroup{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, pg); err != nil {
			return nil, fmt.Errorf("PodGroup %s: %w", list.Items[i].GetName(), err)
		}
		out = append(out, pg)
	}
	return out, nil
}

// owner implements ownerGraph: it reads the owner's metadata (one request per owner UID for the
// whole command; misses are cached too).
func (c *kubeClients) owner(ctx context.Context, ns string, ref metav1.OwnerReference) []metav1.OwnerReference {
	if refs, ok := c.owners[ref.UID]; ok {
		return refs
	}
	c.owners[ref.UID] = nil
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil
	}
	m, err := c.mapper.RESTMapping(gv.WithKind(ref.Kind).GroupKind(), gv.Version)
	if err != nil {
		return nil
	}
	obj, err := c.metadata.Resource(m.Resource).Namespace(scope(m, ns)).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil || obj.UID != ref.UID {
		return nil
	}
	c.owners[ref.UID] = obj.OwnerReferences
	return obj.OwnerReferences
}

// liveRegistry is the offline registry (catalog and --definitions) with the cluster's Karta
// objects on top, and the definition files and native table of the grouper installed in the
// cluster (adoptGrouper), as that grouper sees them. The cluster source is best effort: a
// cluster without the Karta CRD adds nothing, any other failure is a warning.
func (c *kubeClients) liveRegistry(ctx context.Context, paths []string, warn io.Writer) (*definitions.Registry, error) {
	reg, err := newOfflineRegistry(paths, definitions.DecodeOptions{})
	if err != nil {
		return nil, err
	}
	loaded, err := listKartas(ctx, c.dynamic, warn)
	switch {
	case errors.Is(err, errNoKartaCRD):
	case err != nil:
		fmt.Fprintf(warn, "warning: cannot list Karta objects (%s) from the cluster: %v; using the built-in catalog and --definitions only\n", kartaResourceName, err)
	default:
		reg.SetSource(definitions.SourceCluster, loaded)
	}
	c.adoptGrouper(ctx, reg, warn)
	// The grouper refuses a cluster or file definition with a path its kind's CRD cannot hold
	// (podgrouper/runtime/crdlint): refuse it here too, so that describe and get show what the
	// grouper does (the kind's pods held, GangmapGroupingFailed) rather than a plan it never uses.
	c.lintAgainstClusterCRDs(ctx, reg)
	return reg, nil
}

// clusterRequestTimeout bounds each request to the API server, so an unreachable cluster fails
// the listing instead of hanging it.
const clusterRequestTimeout = 30 * time.Second

// errNoKartaCRD says the cluster does not serve the Karta resource.
var errNoKartaCRD = errors.New("the Karta CRD is not installed")

// configError says why a kubeconfig does not load: unusable input, not a cluster problem.
func configError(err error) error {
	if clientcmd.IsEmptyConfig(err) {
		// client-go skips the files of $KUBECONFIG that do not exist (clientcmd.ClientConfigLoadingRules.Load):
		// name them, or a typo reads as "no kubeconfig at all".
		var missing []string
		for _, f := range filepath.SplitList(os.Getenv(clientcmd.RecommendedConfigPathEnvVar)) {
			if _, statErr := os.Stat(f); f != "" && statErr != nil {
				missing = append(missing, f)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("no kubeconfig: $KUBECONFIG names %s, which cannot be read: pass --kubeconfig or set $KUBECONFIG to an existing file", strings.Join(missing, ", "))
		}
		// client-go's own text suggests KUBERNETES_MASTER, which nothing here reads.
		return errors.New("no kubeconfig: pass --kubeconfig, set $KUBECONFIG, or create ~/.kube/config")
	}
	return fmt.Errorf("loading the kubeconfig: %w", err)
}

// listKartas lists every Karta of the cluster through client and converts each with
// definitions.FromUnstructured. A Karta that does not convert is reported on warn and skipped.
// Errors: errNoKartaCRD when the cluster does not serve kartas.run.ai, or the API error as it is.
func listKartas(ctx context.Context, client dynamic.Interface, warn io.Writer) ([]*definitions.Loaded, error) {
	list, err := client.Resource(definitions.GroupVersionResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, errNoKartaCRD
		}
		return nil, err
	}
	out := make([]*definitions.Loaded, 0, len(list.Items))
	for i := range list.Items {
		l, err := definitions.FromUnstructured(&list.Items[i])
		if err != nil {
			fmt.Fprintf(warn, "warning: skipping Karta %q from the cluster: %v\n", list.Items[i].GetName(), err)
			continue
		}
		out = append(out, l)
	}
	return out, nil
}

// kartaResourceName is "kartas.run.ai", the resource the Karta CRD serves.
var kartaResourceName = definitions.GroupVersionResource.GroupResource().String()
