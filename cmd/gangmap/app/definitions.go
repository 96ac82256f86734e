package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/kairelease"
	"github.com/gangmap/gangmap/podgrouper/core/native"
	"github.com/gangmap/gangmap/podgrouper/runtime/bothgroupers"
)

// definitionsOptions are the flags of "gangmap definitions".
type definitionsOptions struct {
	definitions []string
	cluster     bool
	kube        kubeFlags
	output      string
}

func newDefinitionsCommand(use string) *cobra.Command {
	o := &definitionsOptions{}
	cmd := &cobra.Command{
		Use:   "definitions [--definitions PATH]... [--cluster] [--kubeconfig FILE] [--context NAME] [-o table|json]",
		Short: "List the Workload Map definitions gangmap would use",
		Long: `Definitions lists every loaded definition: the built-in catalog, the files given with
--definitions and, with --cluster (implied by --kubeconfig or --context), the Karta objects of the
cluster. With the cluster, each active definition is also tried on up to 50 live workloads of
its kind, and a path that resolves to nothing on them is listed as a "drift:" problem (the
framework renamed a field, or the definition has a typo); the grouper's current findings on the
PodGroups (gangmap.io/health) are listed as "findings:" problems, per reason with the number of
workloads affected (on several workloads the definition is almost surely wrong), and those an
annotation counts without listing them (past a workload's first 16) in one line of their own.

For each kind one definition is active: cluster wins over file, file over catalog; two
definitions of one kind from the same source are a conflict and neither is used.
NATIVE-IN-KAI says KAI Scheduler groups the kind with a plugin of its own (KAI v0.17's table), in
which case gangmap leaves it to KAI.

Exit codes: 0 listed; 1 the cluster could not be read (the other sources are still listed);
2 unusable input (a missing --definitions path, a kubeconfig that does not load).`,
		Example: examples(use,
			"gangmap definitions",
			"# With your own definitions: see which ones win",
			"gangmap definitions --definitions ./kartas/",
			"# Include the cluster's Karta objects (current kubeconfig context)",
			"gangmap definitions --cluster -o json",
			"gangmap definitions --kubeconfig ~/.kube/prod --context gpu-cluster",
		),
		Args: cobra.NoArgs,
		RunE: runE(o.run),
	}
	addDefinitionsFlag(cmd, &o.definitions, "")
	cmd.Flags().BoolVar(&o.cluster, "cluster", false, "also list the Karta objects of the cluster (implied by --kubeconfig and --context)")
	o.kube.addFlags(cmd, false)
	addOutputFlag(cmd, &o.output, "table", "json")
	return cmd
}

// definitionsDocument is the -o json output of "gangmap definitions".
type definitionsDocument struct {
	Definitions []definitionRow `json:"definitions"`
}

// definitionRow is a registry entry with whether KAI groups its kind natively.
type definitionRow struct {
	definitions.Entry
	NativeInKAI bool `json:"nativeInKAI"`
}

func (o *definitionsOptions) run(ctx context.Context, _ []string, stdout, stderr io.Writer) error {
	reg, err := newOfflineRegistry(o.definitions, definitions.DecodeOptions{})
	if err != nil {
		return err
	}
	code := ExitOK
	var c *kubeClients
	if o.cluster || o.kube.kubeconfig != "" || o.kube.context != "" {
		if c, err = o.kube.connect(stderr); err != nil {
			return fail(ExitUnusable, "%v", err)
		}
		loaded, err := listKartas(ctx, c.dynamic, stderr)
		switch {
		case errors.Is(err, errNoKartaCRD):
			fmt.Fprintf(stderr, "warning: the Karta CRD (%s) is not installed in the cluster; listing the other sources only\n", kartaResourceName)
		case err != nil:
			fmt.Fprintf(stderr, "warning: cannot list Karta objects from the cluster: %s at %s: %v; listing the other sources only\n", kartaResourceName, c.config.Host, err)
			code = ExitProblems
		default:
			reg.SetSource(definitions.SourceCluster, loaded)
		}
	}
	both := kaiAlsoGroups(reg)
	var drift, found map[string][]string
	if c != nil && code == ExitOK {
		drift, found = c.clusterChecks(ctx, reg, stderr)
	}
	doc := definitionsDocument{Definitions: []definitionRow{}}
	for _, e := range reg.Entries() {
		e.Problems = append(e.Problems, drift[e.Origin]...)
		if e.Active {
			e.Problems = append(e.Problems, found[fmt.Sprintf("%s (%s)", e.Name, e.Source)]...)
		}
		e.Problems = append(e.Problems, both[e.Origin]...)
		doc.Definitions = append(doc.Definitions, definitionRow{Entry: e, NativeInKAI: nativeInKAI(e.Kind.GVK())})
	}
	return writeDocument(stdout, o.output, doc, func(w io.Writer) { printDefinitionsTable(w, doc) }, code)
}

// printDefinitionsTable writes one row per definition, then each problem in full.
func printDefinitionsTable(w io.Writer, doc definitionsDocument) {
	tw := newTable(w, "NAME\tKIND\tSOURCE\tACTIVE\tNATIVE-IN-KAI\tPROBLEMS")
	for _, d := range doc.Definitions {
		kind := "-"
		if d.Kind.Kind != "" {
			kind = d.Kind.String()
		}
		problems := "-"
		if n := len(d.Problems); n > 0 {
			problems = strconv.Itoa(n)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.Name, kind, d.Source, yesNo(d.Active), yesNo(d.NativeInKAI), problems)
	}
	_ = tw.Flush()
	// A problem shared by several definitions (a conflict is a problem of each) is said once,
	// naming every definition it concerns.
	var order []string
	owners := map[string][]string{}
	for _, d := range doc.Definitions {
		for _, p := range d.Problems {
			if _, ok := owners[p]; !ok {
				order = append(order, p)
			}
			if who := fmt.Sprintf("%s (%s)", d.Name, d.Origin); !slices.Contains(owners[p], who) {
				owners[p] = append(owners[p], who)
			}
		}
	}
	if len(order) > 0 {
		fmt.Fprintln(w, "\nProblems:")
	}
	for _, p := range order {
		fmt.Fprintf(w, "  %s: %s\n", strings.Join(owners[p], ", "), indentLines(p, "    "))
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// kaiAlsoGroups notes, by definition origin, each cluster Karta KAI's own Karta fallback can see
// for a kind gangmap groups (bothgroupers.Find), as the grouper says it with an Event.
func kaiAlsoGroups(reg *definitions.Registry) map[string][]string {
	out := map[string][]string{}
	if !kaiRelease.KartaFallback {
		return out
	}
	grouped := func(gvk schema.GroupVersionKind) bool { return !nativeInKAI(gvk) && reg.Lookup(gvk) != nil }
	for _, o := range bothgroupers.Find(reg.Source(definitions.SourceCluster), grouped) {
		out[o.Origin] = append(out[o.Origin], o.Message())
	}
	return out
}

// kaiNativeTable is the table of kinds KAI groups natively for this run: KAI's default release
// table, or what --kai-version and --native-kinds-add/--native-kinds-remove make of it (set by
// the root command before each run).
var kaiNativeTable = native.DefaultTable()

// nativeInKAI reports whether KAI Scheduler groups gvk with a native plugin (kaiNativeTable), in
// which case gangmap never groups it in a cluster.
func nativeInKAI(gvk schema.GroupVersionKind) bool { return kaiNativeTable.Has(gvk) }

// nativeFlags are the root's flags that shape the native table, the same as the grouper's, so
// that the CLI says what a grouper run with them does.
type nativeFlags struct {
	kaiVersion  string
	add, remove []string
}

func (n *nativeFlags) addFlags(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&n.kaiVersion, "kai-version", n.kaiVersion, "KAI release beside gangmap, "+strings.Join(kairelease.Known(), ", ")+" or a tag of one: its native-plugin table and PodGroup fields (as the grouper's flag)")
	f.StringSliceVar(&n.add, "native-kinds-add", nil, "extra kinds KAI groups natively, as group/version/Kind (as the grouper's flag; default none)")
	f.StringSliceVar(&n.remove, "native-kinds-remove", nil, "kinds to drop from the native table, as group/version/Kind, g/*/K for every version (as the grouper's flag; default none)")
}

// apply makes the KAI release and native table the flags describe this run's (kaiRelease,
// kaiNativeTable), and returns the release. Errors name the flag; nothing is changed then.
func (n *nativeFlags) apply() (*kairelease.Release, error) {
	r, err := kairelease.Parse(n.kaiVersion)
	if err != nil {
		return nil, fmt.Errorf("--kai-version: %w", err)
	}
	t := native.FromRelease(r)
	for _, k := range n.add {
		if err := t.Add(k); err != nil {
			return nil, fmt.Errorf("--native-kinds-add: %w", err)
		}
	}
	for _, k := range n.remove {
		if err := t.Remove(k); err != nil {
			return nil, fmt.Errorf("--native-kinds-remove: %w", err)
		}
	}
	kaiRelease, kaiNativeTable = r, t
	return r, nil
}

// kaiRelease is the KAI release of this run (--kai-version), set by the root command before each
// run: what gangmap writes on it (fitToRelease) and what it costs.
var kaiRelease = kairelease.MustParse(native.DefaultRelease)

// fitToRelease makes p what the grouper writes on kaiRelease: flat gangs where its PodGroup has
// no minSubGroup (the grouper's gang.Plan.Flatten, with the same note), and a note for each other
// cost of the release (kairelease.Release.Costs). A plan without PodGroups is left as it is.
func fitToRelease(p *gang.Plan) {
	if p == nil || len(p.PodGroups) == 0 {
		return
	}
	flat := kaiRelease.FlatGangNote()
	if !kaiRelease.HasMinSubGroup() {
		p.Flatten(flat)
	}
	for _, c := range kaiRelease.Costs() {
		if c != flat {
			p.Notes = append(p.Notes, c)
		}
	}
}

// nativeNote says that KAI groups gvk natively and what that means for gangmap.
func nativeNote(gvk schema.GroupVersionKind) string {
	return fmt.Sprintf("KAI groups %s (%s) natively: in a cluster, gangmap leaves its pods and PodGroups to KAI's plugin", gvk.Kind, gvk.GroupVersion())
}
