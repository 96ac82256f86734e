package app

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// describeOptions are the flags of "gangmap describe".
type describeOptions struct {
	files       []string
	definitions []string
	output      string
	kube        kubeFlags
}

func newDescribeCommand(use string) *cobra.Command {
	o := &describeOptions{}
	cmd := &cobra.Command{
		Use:   "describe (KIND/NAME | KIND NAME | -f MANIFEST) [-n NAMESPACE] [-o table|json|yaml]",
		Short: "Show a workload's tree, pods, GPUs and PodGroups, live or from a manifest",
		Long: `Describe shows one workload as gangmap sees it: the definition's tree (root, components,
instances) with the workload's pods placed in it (phase and node), the status the definition
matches, the replicas, pods and GPUs of each role, and the PodGroups gangmap would write next to
those that exist for the workload (matched by owner reference), with every difference: a
PodGroup written by KAI's default grouper (pg-<name>-<uid>, minMember 1) shows up as "foreign".
Pods that no component claims are listed, never hidden.

Live (KIND/NAME): KIND is resolved through the cluster's discovery like kubectl does (plural,
singular, short name or Kind, optionally resource.group). Everything is read-only and nothing is
installed in the cluster: the workload is read, the namespace's pods are listed once, their owner
references are followed (bounded depth, each owner read once) to the workload, and the
namespace's PodGroups are listed once; where the plan has topology constraints, each named KAI
Topology and each pod's node (at most 200) are read once, for the Placement tree (role, segment,
pods, each node's topology labels). Definitions: the built-in catalog, --definitions, and the
cluster's Karta objects (highest), as the grouper sees them. An object with owners (a pod, a
PodGroup, a JobSet's Job) is described through its workload: its top owner, the end of its
owner references, by which KAI groups pods (a note on stderr names it).

Offline (-f): the manifest's top-level objects (no owner references, not Pods or PodGroups) are
the workloads; Pod documents in the manifest are their pods (through owner references to objects
in the manifest, else the only workload's), and PodGroup documents are compared with the plan.

Exit codes: 0 described; 1 a workload has no definition or no plan, or the cluster could not be
read; 2 unusable input (a bad flag, a missing file, a kubeconfig that does not load).`,
		Example: examples(use,
			"gangmap describe jobset/train-llm -n team-a",
			"gangmap describe jobsets.jobset.x-k8s.io train-llm -o yaml",
			"# The workload of a pod (its top owner), with the pod's PodGroup and sub-group",
			"gangmap describe pod/train-llm-workers-0-0 -n team-a",
			"gangmap describe -f examples/jobset-leader-workers.yaml",
			"# As a kubectl plugin",
			"kubectl gangmap describe rayclusters/my-cluster -n ray",
		),
		Args:              cobra.MaximumNArgs(2),
		RunE:              runE(o.run),
		ValidArgsFunction: completeKinds,
	}
	cmd.Flags().StringArrayVarP(&o.files, "filename", "f", nil, "describe the workloads of a manifest offline: a YAML or JSON file, a directory of them, or - for stdin (repeatable)")
	addDefinitionsFlag(cmd, &o.definitions, ", in addition to the built-in catalog")
	addOutputFlag(cmd, &o.output, "table", "json", "yaml")
	o.kube.addFlags(cmd, true)
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	return cmd
}

func (o *describeOptions) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var doc *workloadsDocument
	var err error
	switch {
	case len(o.files) > 0 && len(args) > 0:
		return fail(ExitUnusable, "give either KIND/NAME or -f MANIFEST, not both")
	case len(o.files) > 0 && (o.kube.namespace != "" || o.kube.kubeconfig != "" || o.kube.context != ""):
		// Offline the manifest is all there is: a namespace or cluster flag would be ignored.
		return fail(ExitUnusable, "-n/--namespace, --kubeconfig and --context are for a live KIND/NAME; -f reads only the manifest")
	case len(o.files) > 0:
		doc, err = o.offline(ctx, stderr)
	default:
		kind, name, perr := splitKindName(args)
		if perr != nil {
			return perr
		}
		doc, err = o.live(ctx, kind, name, stderr)
	}
	if err != nil {
		return err
	}
	return writeDocument(stdout, o.output, doc, func(w io.Writer) { printDescribe(w, doc) }, planCode(doc.Workloads))
}

// splitKindName reads KIND/NAME or KIND NAME.
func splitKindName(args []string) (string, string, error) {
	switch len(args) {
	case 1:
		kind, name, ok := strings.Cut(args[0], "/")
		if ok && kind != "" && name != "" && !strings.Contains(name, "/") {
			return kind, name, nil
		}
	case 2:
		if !strings.Contains(args[0], "/") && args[1] != "" {
			return args[0], args[1], nil
		}
	}
	return "", "", fail(ExitUnusable, "expected KIND/NAME, KIND NAME or -f MANIFEST\nRun 'gangmap describe --help' for usage.")
}

// offline describes the workloads of the manifests.
func (o *describeOptions) offline(ctx context.Context, stderr io.Writer) (*workloadsDocument, error) {
	objs, err := readManifests(o.files)
	if err != nil {
		return nil, fail(ExitUnusable, "%v", err)
	}
	in, err := splitManifest(objs, stderr)
	if err != nil {
		return nil, fail(ExitUnusable, "%v", err)
	}
	if len(in.workloads) == 0 {
		return nil, fail(ExitUnusable, "no workload in %s (only Pods, PodGroups, owned objects or supporting kinds)", strings.Join(o.files, ", "))
	}
	reg, err := newOfflineRegistry(o.definitions, definitions.DecodeOptions{})
	if err != nil {
		return nil, err
	}
	warnProblems(stderr, reg)
	views, unattributed := in.views(ctx, reg)
	for _, p := range unattributed {
		fmt.Fprintf(stderr, "note: Pod/%s is not shown: no owner of it is in the manifest, which has %d workloads to give it to\n", p.Name, len(in.workloads))
	}
	return &workloadsDocument{Workloads: views}, nil
}

// manifestInput is a manifest split into workloads, their pods, PodGroups and other objects.
type manifestInput struct {
	workloads []*unstructured.Unstructured
	pods      []*corev1.Pod
	podGroups []*v2alpha2.PodGroup
	graph     *manifestGraph
}

// splitManifest sorts the objects of a manifest: Pods (core/v1), PodGroups (scheduling.run.ai),
// and the rest; workloads are the rest without owner references that are not supporting kinds
// (plan's rule: a runtime, a ConfigMap, a Service are not workloads; each is said on warn).
func splitManifest(objs []*unstructured.Unstructured, warn io.Writer) (*manifestInput, error) {
	in := &manifestInput{}
	var others []*unstructured.Unstructured
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		switch {
		case gvk.Group == "" && gvk.Kind == "Pod":
			p := &corev1.Pod{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
				return nil, fmt.Errorf("Pod %s: %w", u.GetName(), err)
			}
			in.pods = append(in.pods, p)
		case gvk.Group == v2alpha2.Group && gvk.Kind == v2alpha2.Kind:
			pg := &v2alpha2.PodGroup{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pg); err != nil {
				return nil, fmt.Errorf("PodGroup %s: %w", u.GetName(), err)
			}
			in.podGroups = append(in.podGroups, pg)
		default:
			others = append(others, u)
			switch {
			case len(u.GetOwnerReferences()) > 0:
			case supportingKinds[gvk.GroupKind()]:
				fmt.Fprintf(warn, "note: skipping %s: not a workload\n", workloadLabel(u))
			default:
				in.workloads = append(in.workloads, u)
			}
		}
	}
	in.graph = &manifestGraph{newRootsIndex(others)}
	return in, nil
}

// views describes every workload of the manifest, and returns the pods it could give to none
// (their owners are not in the manifest, and there is more than one workload).
func (in *manifestInput) views(ctx context.Context, reg *definitions.Registry) ([]*workloadView, []*corev1.Pod) {
	ix := newRootsIndex(in.workloads)
	byWorkload, unattributed := attribute(ctx, in.pods, ix, in.graph)
	if len(in.workloads) == 1 {
		// Offline, a pod whose owners are not in the manifest belongs to the only workload.
		byWorkload[0], unattributed = append(byWorkload[0], unattributed...), nil
	}
	out := make([]*workloadView, len(in.workloads))
	for i, w := range in.workloads {
		out[i] = buildView(ctx, reg, w, byWorkload[i], in.podGroups, false)
	}
	return out, unattributed
}

// manifestGraph is the ownerGraph of the objects of a manifest (but its Pods and PodGroups);
// unlike rootsIndex.match, a reference whose UID no object has follows the object of its name
// whatever that object's UID.
type manifestGraph struct{ *rootsIndex }

func (g *manifestGraph) owner(_ context.Context, ns string, ref metav1.OwnerReference) []metav1.OwnerReference {
	i, ok := g.byUID[string(ref.UID)]
	if !ok {
		i, ok = g.byName[refKey(ns, ref)]
	}
	if !ok {
		return nil
	}
	return g.objs[i].GetOwnerReferences()
}

// live describes one workload of the cluster.
func (o *describeOptions) live(ctx context.Context, kind, name string, stderr io.Writer) (*workloadsDocument, error) {
	c, reg, m, err := o.kube.liveKind(ctx, kind, o.definitions, stderr)
	if err != nil {
		return nil, err
	}
	obj, err := c.dynamic.Resource(m.Resource).Namespace(scope(m, c.namespace)).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fail(ExitProblems, "%s %q not found in namespace %s", m.GroupVersionKind.Kind, name, c.namespace)
	}
	if err != nil {
		return nil, fail(ExitProblems, "reading %s %s: %v", m.GroupVersionKind.Kind, name, err)
	}
	if obj, err = c.describedWorkload(ctx, obj, stderr); err != nil {
		return nil, err
	}
	views, err := c.describeLive(ctx, reg, []*unstructured.Unstructured{obj}, obj.GetNamespace(), stderr)
	if err != nil {
		return nil, err
	}
	views[0].addNodeTopology(ctx, c)
	return &workloadsDocument{Workloads: views}, nil
}

// completeKinds completes the first argument with the kinds of the built-in catalog (lower-case
// Kind, as the discovery RESTMapper accepts it).
func completeKinds(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	reg, err := newOfflineRegistry(nil, definitions.DecodeOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, e := range reg.Entries() {
		if k := strings.ToLower(e.Kind.Kind); k != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
