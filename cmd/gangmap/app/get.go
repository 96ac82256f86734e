package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// getOptions are the flags of "gangmap get".
type getOptions struct {
	definitions   []string
	output        string
	allNamespaces bool
	kube          kubeFlags
}

func newGetCommand(use string) *cobra.Command {
	o := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get KIND [-n NAMESPACE | -A] [-o table|json|yaml]",
		Short: "List the workloads of a kind with their status, pods, GPUs and PodGroups",
		Long: `Get lists every workload of KIND in the namespace (or every namespace with -A), one row
each: NAME, NAMESPACE, STATUS (the definition's matched status), READY/TOTAL pods (found through
owner references), GPUS (the plan's total, from the spec) and PODGROUP(S) (those that exist for
the workload, else the planned ones marked "(planned)").

Read-only, like describe: one list of the workloads, one list of pods and one list of PodGroups
for the namespace (or the cluster with -A), and each owner between a pod and its workload read
once. KIND is resolved through discovery (plural, singular, short name or Kind).

Exit codes: 0 listed; 1 some workload has no definition or no plan, or the cluster could not be
read; 2 unusable input.`,
		Example: examples(use,
			"gangmap get jobsets -n team-a",
			"gangmap get rayclusters -A -o json",
		),
		Args:              cobra.ExactArgs(1),
		RunE:              runE(o.run),
		ValidArgsFunction: completeKinds,
	}
	addDefinitionsFlag(cmd, &o.definitions, ", in addition to the built-in catalog")
	addOutputFlag(cmd, &o.output, "table", "json", "yaml")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list the workloads of every namespace")
	o.kube.addFlags(cmd, true)
	return cmd
}

// workloadsDocument is the -o json|yaml output of "gangmap get" and "gangmap describe": every
// workload fully described.
type workloadsDocument struct {
	Workloads []*workloadView `json:"workloads"`
}

func (o *getOptions) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, reg, m, err := o.kube.liveKind(ctx, args[0], o.definitions, stderr)
	if err != nil {
		return err
	}
	if err := refuseNotWorkload(m); err != nil {
		return err
	}
	ns := c.namespace
	if o.allNamespaces {
		ns = ""
	}
	list, err := c.dynamic.Resource(m.Resource).Namespace(scope(m, ns)).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fail(ExitProblems, "listing %s: %v", m.Resource.GroupResource(), err)
	}
	objs := pointers(list.Items)
	slices.SortFunc(objs, func(a, b *unstructured.Unstructured) int {
		return cmp.Or(strings.Compare(a.GetNamespace(), b.GetNamespace()), strings.Compare(a.GetName(), b.GetName()))
	})
	doc := workloadsDocument{Workloads: []*workloadView{}}
	if len(objs) > 0 {
		if doc.Workloads, err = c.describeLive(ctx, reg, objs, scope(m, ns), stderr); err != nil {
			return err
		}
	}
	return writeDocument(stdout, o.output, doc, func(w io.Writer) { printGetTable(w, doc, ns) }, planCode(doc.Workloads))
}

// liveKind connects to the cluster, builds the live registry (its problems said on stderr) and
// resolves kind through discovery: what describe and get both start with.
func (k *kubeFlags) liveKind(ctx context.Context, kind string, paths []string, stderr io.Writer) (*kubeClients, *definitions.Registry, *meta.RESTMapping, error) {
	c, err := k.connect(stderr)
	if err != nil {
		return nil, nil, nil, fail(ExitUnusable, "%v", err)
	}
	reg, err := c.liveRegistry(ctx, paths, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	warnProblems(stderr, reg)
	m, err := c.resolveKind(kind, reg)
	if err != nil {
		return nil, nil, nil, fail(ExitProblems, "%v", err)
	}
	return c, reg, m, nil
}

// describeLive lists the pods and PodGroups of ns ("" for all) once and describes the workloads
// objs (describeAll). A cluster without the PodGroup CRD is a warning: nothing to compare with.
func (c *kubeClients) describeLive(ctx context.Context, reg *definitions.Registry, objs []*unstructured.Unstructured, ns string, stderr io.Writer) ([]*workloadView, error) {
	pods, err := c.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fail(ExitProblems, "listing pods: %v", err)
	}
	pgs, err := c.listPodGroups(ctx, ns)
	live := !errors.Is(err, errNoPodGroupCRD)
	if !live {
		fmt.Fprintf(stderr, "warning: %v: no existing PodGroups to compare with\n", err)
	} else if err != nil {
		return nil, fail(ExitProblems, "%v", err)
	}
	return describeAll(ctx, c, reg, objs, pointers(pods.Items), pgs, live), nil
}

// describeAll attributes the pods to the workloads (one owner walk per pod, owners read through
// g) and describes each workload with the grouper's findings.
func describeAll(ctx context.Context, g ownerGraph, reg *definitions.Registry, objs []*unstructured.Unstructured, pods []*corev1.Pod, pgs []*v2alpha2.PodGroup, live bool) []*workloadView {
	byWorkload, _ := attribute(ctx, pods, newRootsIndex(objs), g)
	out := make([]*workloadView, len(objs))
	for i, obj := range objs {
		mine := slices.DeleteFunc(slices.Clone(pgs), func(pg *v2alpha2.PodGroup) bool { return pg.Namespace != obj.GetNamespace() })
		out[i] = buildView(ctx, reg, obj, byWorkload[i], mine, live)
		out[i].setHealth(obj, mine)
	}
	return out
}

// printGetTable writes one row per workload; the NAMESPACE column only with -A.
func printGetTable(w io.Writer, doc workloadsDocument, ns string) {
	if len(doc.Workloads) == 0 {
		where := "namespace " + ns
		if ns == "" {
			where = "any namespace"
		}
		fmt.Fprintf(w, "No workloads found in %s.\n", where)
		return
	}
	tw := newTable(w, "NAME\tNAMESPACE\tSTATUS\tREADY/TOTAL\tGPUS\tPODGROUP(S)\tFINDINGS")
	for _, v := range doc.Workloads {
		status := v.statusText()
		gpus := v.TotalGPUs.String()
		switch {
		case v.Error != "":
			status, gpus = "<no plan>", "-"
		case v.NativeInKAI && v.Definition == nil:
			status, gpus = "<KAI native>", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", v.Workload.Name, cmp.Or(v.Workload.Namespace, "-"), status, v.Pods.Ready, v.Pods.Total, gpus, v.podGroupNames(), v.findingsColumn())
	}
	_ = tw.Flush()
	nativeNoted := map[string]bool{}
	for _, v := range doc.Workloads {
		if v.Error != "" {
			fmt.Fprintf(w, "error: %s/%s: %s\n", v.Workload.Kind, v.Workload.Name, indentLines(v.Error, "  "))
		}
		// The row's numbers come from a plan that read nothing at these paths: say so, since a
		// misspelt or renamed field (drift) shrinks the gang without failing.
		for _, m := range v.misses {
			fmt.Fprintf(w, "note: %s/%s: %s (%s) resolved to nothing; 'describe' shows the plan\n", v.Workload.Kind, v.Workload.Name, m.Path, m.Expression)
		}
		if gvk := schema.FromAPIVersionAndKind(v.Workload.APIVersion, v.Workload.Kind); v.NativeInKAI && !nativeNoted[gvk.String()] {
			nativeNoted[gvk.String()] = true
			fmt.Fprintf(w, "note: %s\n", nativeNote(gvk))
		}
	}
}
