package app

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gangmap/gangmap/definitions"
)

// grouperSelector selects the Deployment of gangmap's grouper as the Helm chart labels it
// (deploy/helm/gangmap templates/_helpers.tpl gangmap.labels).
const grouperSelector = "app.kubernetes.io/part-of=gangmap,app.kubernetes.io/component=grouper"

// nativeFlagsGiven says the user set --kai-version, --native-kinds-add or --native-kinds-remove
// on this run: they then win over the grouper's own (set by the root command before each run).
var nativeFlagsGiven bool

// grouperSettings is what the CLI reads of the grouper installed in the cluster: its native-table
// flags and the definition files it polls (--definitions), from the ConfigMaps mounted there.
type grouperSettings struct {
	// Deployment is namespace/name of the grouper's Deployment.
	Deployment string
	// KAIVersion, Add and Remove are its --kai-version, --native-kinds-add, --native-kinds-remove.
	KAIVersion  string
	Add, Remove []string
	// Definitions are its definition files, source "file", origin configmap:<ns>/<name>/<key>.
	Definitions []*definitions.Loaded
	// ConfigMaps names the ConfigMaps the definitions came from.
	ConfigMaps []string
}

// readGrouperSettings finds the grouper's Deployment (grouperSelector) in the grouper namespace
// (--grouper-namespace) only, and reads its settings: nil when there is none, and when there are
// several (a warning naming them). The labels are not proof: any user who may create a Deployment
// in a namespace can copy them, so no other namespace is read. Errors: listing Deployments or
// reading a ConfigMap failed (forbidden, unreachable): the caller warns and goes on without.
func (c *kubeClients) readGrouperSettings(ctx context.Context, warn io.Writer) (*grouperSettings, error) {
	ns := cmp.Or(c.grouperNamespace, defaultGrouperNamespace)
	list, err := c.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: grouperSelector})
	if err != nil {
		return nil, fmt.Errorf("listing the grouper's Deployment (%s) in %s: %w", grouperSelector, ns, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	if len(list.Items) > 1 {
		var names []string
		for _, d := range list.Items {
			names = append(names, d.Namespace+"/"+d.Name)
		}
		slices.Sort(names)
		// With several, none is adopted: the first by name would be a guess.
		fmt.Fprintf(warn, "warning: %d Deployments in %s carry the grouper's labels (%s): none of their settings are used (pass --definitions and --native-kinds-* of the grouper you mean)\n", len(names), ns, strings.Join(names, ", "))
		return nil, nil
	}
	d := &list.Items[0]
	s := &grouperSettings{Deployment: d.Namespace + "/" + d.Name}
	ctr := grouperContainer(d)
	if ctr == nil {
		return s, nil
	}
	var paths []string
	strict := true
	for _, a := range ctr.Args {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok {
			continue
		}
		switch name {
		case "kai-version":
			s.KAIVersion = value
		case "native-kinds-add":
			s.Add = append(s.Add, splitList(value)...)
		case "native-kinds-remove":
			s.Remove = append(s.Remove, splitList(value)...)
		case "definitions":
			paths = append(paths, splitList(value)...)
		case "strict-definitions":
			strict = value != "false"
		}
	}
	for _, p := range paths {
		cm := mountedConfigMap(d, ctr, p)
		if cm == "" {
			fmt.Fprintf(warn, "warning: the grouper %s reads definitions from %s, which is no ConfigMap: its definitions there are not seen here\n", s.Deployment, p)
			continue
		}
		got, err := c.kube.CoreV1().ConfigMaps(d.Namespace).Get(ctx, cm, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading the grouper's definitions ConfigMap %s/%s: %w", d.Namespace, cm, err)
		}
		s.ConfigMaps = append(s.ConfigMaps, d.Namespace+"/"+cm)
		for _, k := range slices.Sorted(maps.Keys(got.Data)) {
			if ext := filepath.Ext(k); ext != ".yaml" && ext != ".yml" && ext != ".json" {
				continue // the grouper reads only these (definitions.DefinitionFiles)
			}
			origin := fmt.Sprintf("configmap:%s/%s/%s", d.Namespace, cm, k)
			ls, err := definitions.Decode(strings.NewReader(got.Data[k]), origin, definitions.SourceFile, definitions.DecodeOptions{Strict: strict})
			if err != nil {
				fmt.Fprintf(warn, "warning: %s: %v (the grouper refuses it too)\n", origin, err)
				continue
			}
			s.Definitions = append(s.Definitions, ls...)
		}
	}
	return s, nil
}

// grouperContainer is the Deployment's container named "grouper" (the chart's), else the first.
func grouperContainer(d *appsv1.Deployment) *corev1.Container {
	cs := d.Spec.Template.Spec.Containers
	if len(cs) == 0 {
		return nil
	}
	return &cs[max(0, slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == "grouper" }))]
}

// mountedConfigMap is the ConfigMap mounted at path (or a directory above it) in ctr, or "".
func mountedConfigMap(d *appsv1.Deployment, ctr *corev1.Container, path string) string {
	for _, m := range ctr.VolumeMounts {
		if path != m.MountPath && !strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/") {
			continue
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil {
				return v.ConfigMap.Name
			}
		}
	}
	return ""
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// adoptGrouper makes reg and the native table those of the grouper in the cluster, so that
// describe and get agree with it without flags (issue 31 point 5): the grouper's definition files
// join --definitions as the file source, and its native-table flags are used unless this run set
// its own. It says on warn what it adopted; a failure to read is a warning, never an error.
func (c *kubeClients) adoptGrouper(ctx context.Context, reg *definitions.Registry, warn io.Writer) {
	s, err := c.readGrouperSettings(ctx, warn)
	if err != nil {
		fmt.Fprintf(warn, "warning: %v; the grouper's own definitions and native table are not used (pass --definitions and --native-kinds-*)\n", err)
	}
	if s == nil {
		return
	}
	var said []string
	if len(s.Definitions) > 0 {
		reg.SetSource(definitions.SourceFile, append(reg.Source(definitions.SourceFile), s.Definitions...))
		said = append(said, fmt.Sprintf("%d definition(s) from ConfigMap %s", len(s.Definitions), strings.Join(s.ConfigMaps, ", ")))
	}
	if !nativeFlagsGiven && (s.KAIVersion != "" || len(s.Add)+len(s.Remove) > 0) {
		nf := &nativeFlags{kaiVersion: cmp.Or(s.KAIVersion, kaiRelease.Requested), add: s.Add, remove: s.Remove}
		if _, err := nf.apply(); err != nil {
			fmt.Fprintf(warn, "warning: the grouper %s's native table: %v; using this run's\n", s.Deployment, err)
		} else {
			said = append(said, fmt.Sprintf("its native table (--kai-version=%s%s%s)", nf.kaiVersion, flagList(" --native-kinds-add=", s.Add), flagList(" --native-kinds-remove=", s.Remove)))
		}
	}
	if len(said) > 0 {
		fmt.Fprintf(warn, "using the settings of the grouper %s: %s\n", s.Deployment, strings.Join(said, "; "))
	}
}

func flagList(prefix string, v []string) string {
	if len(v) == 0 {
		return ""
	}
	return prefix + strings.Join(v, ",")
}
