package app

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/gang"
)

// printPlanTables writes the table form of a plan document: per workload a header line, the
// PodGroups table, the roles table, notes and overrides, a Status line (the definition's status
// words, as describe prints them) and a TOTAL GPUs line; workloads are separated by a blank line.
func printPlanTables(w io.Writer, doc planDocument) {
	for i, e := range doc.Plans {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if e.Plan == nil && e.Native != "" {
			fmt.Fprintf(w, "%s\n  %s\n", e.label, e.Native)
			continue
		}
		if e.Plan == nil {
			// The message names the workload.
			fmt.Fprintf(w, "error: %s\n", indentLines(e.Error, "  "))
			continue
		}
		printPlanTable(w, e.label, e.Plan)
	}
}

func printPlanTable(w io.Writer, label string, p *gang.Plan) {
	fmt.Fprintf(w, "%s   definition: %s (%s)\n", label, p.Definition.Name, p.Definition.Source)
	if gvk := schema.FromAPIVersionAndKind(p.Workload.APIVersion, p.Workload.Kind); nativeInKAI(gvk) {
		fmt.Fprintf(w, "  KAI groups %s natively: in a cluster, gangmap leaves it to KAI's plugin.\n", p.Workload.Kind)
	}
	fmt.Fprintln(w)

	tw := newTable(w, "  NAME\tMIN-MEMBER\tMIN-SUBGROUP\tSUB-GROUPS\tPODS\tGPUS")
	for _, pg := range p.PodGroups {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\n", pg.Name, optInt(pg.MinMember), optInt(pg.MinSubGroup), subGroupList(subGroupShapes(pg.SubGroups)), pg.Pods, pg.GPUs)
	}
	_ = tw.Flush()
	if len(p.PodGroups) == 0 {
		fmt.Fprintf(w, "  (none: %s)\n", noPodGroupReason(p))
		if len(p.Misses) > 0 {
			// An empty workload and a misspelt path look the same here; the CRD schema tells them apart.
			fmt.Fprintln(w, "  A path of the definition resolved to nothing (see the notes): if the workload is not empty,")
			fmt.Fprintln(w, "  the path may be misspelt; `gangmap validate --crd <the kind's CRD> <definition>` checks it.")
		}
	}
	fmt.Fprintln(w)

	tw = newTable(w, "  ROLE\tCOMPONENT\tINSTANCE\tREPLICAS\tMIN\tPODS\tGANG-PODS\tGPUS/POD\tGPUS")
	for _, r := range p.Roles {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", r.Name, r.Component, cmp.Or(r.Instance, "-"), r.Replicas, r.MinReplicas, r.Pods, r.GangPods, r.GPUsPerPod, r.GPUs)
	}
	_ = tw.Flush()
	if len(p.Roles) == 0 {
		fmt.Fprintln(w, "  (none: no component resolved to a pod template)")
	}
	printPlanTopology(w, p)

	extra := gpuDetailNotes(p.Roles)
	if len(p.Notes)+len(p.Overrides)+len(extra) > 0 {
		fmt.Fprintln(w)
	}
	printLines(w, "  note: ", p.Notes)
	printLines(w, "  note: ", extra)
	for _, o := range p.Overrides {
		status := "applied: " + o.Effect
		if !o.Applied {
			status = "refused: " + o.Reason
		}
		fmt.Fprintf(w, "  override: %s=%q %s\n", o.Annotation, o.Value, status)
	}
	fmt.Fprintf(w, "Status: %s\n", planStatusText(p))
	fmt.Fprintf(w, "TOTAL GPUs: %s\n", p.TotalGPUs)
}

// planStatusText is the plan's status words as describe prints them ("running", several comma
// separated), or "-" with the reason when the definition's status could not be evaluated.
func planStatusText(p *gang.Plan) string {
	if p.StatusError != "" {
		return "- (" + p.StatusError + ")"
	}
	return cmp.Or(p.StatusText(), "-")
}

// gpuDetailNotes reports what the GPUS columns (nvidia.com/gpu and KAI fractions) do not count:
// MIG profiles, KAI gpu-memory, DRA claims and other vendors' accelerators.
func gpuDetailNotes(roles []*gang.Role) []string {
	var out []string
	for _, r := range roles {
		d := r.GPUDetail
		var parts []string
		for _, n := range slices.Sorted(maps.Keys(d.MIG)) {
			parts = append(parts, fmt.Sprintf("%s: %d", n, d.MIG[n]))
		}
		if d.MemoryMiB > 0 {
			parts = append(parts, fmt.Sprintf("gpu-memory %d MiB", d.MemoryMiB))
		}
		if len(d.DRAClaims) > 0 {
			parts = append(parts, "DRA claims "+strings.Join(d.DRAClaims, ", "))
		}
		for _, n := range slices.Sorted(maps.Keys(d.OtherAccelerators)) {
			parts = append(parts, fmt.Sprintf("%s: %s", n, d.OtherAccelerators[n]))
		}
		if len(parts) > 0 {
			out = append(out, fmt.Sprintf("role %s: each pod also asks %s (not counted in GPUS)", r.Name, strings.Join(parts, "; ")))
		}
	}
	return out
}

// subGroupList renders sub-groups as name:minMember (parent/name:minMember when nested), comma
// separated; "-" when there are none.
func subGroupList(sgs []subGroupShape) string {
	if len(sgs) == 0 {
		return "-"
	}
	parts := make([]string, len(sgs))
	for i, sg := range sgs {
		name := sg.Name
		if sg.Parent != "" {
			name = sg.Parent + "/" + name
		}
		min := optInt(sg.MinMember)
		if sg.MinSubGroup != nil {
			min = "subgroups " + optInt(sg.MinSubGroup)
		}
		parts[i] = name + ":" + min
	}
	return strings.Join(parts, ",")
}

func optInt(v *int32) string {
	if v == nil {
		return "-"
	}
	return strconv.Itoa(int(*v))
}

// newTable is a tabwriter over w in gangmap's column layout (3 spaces between columns), with
// header as its first row unless "". A failed write is writeDocument's errWriter's to report.
func newTable(w io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	if header != "" {
		fmt.Fprintln(tw, header)
	}
	return tw
}

// printLines writes each line after prefix.
func printLines(w io.Writer, prefix string, lines []string) {
	for _, l := range lines {
		fmt.Fprintf(w, "%s%s\n", prefix, l)
	}
}

// indentLines indents every line after the first of a multi-line message.
func indentLines(s, indent string) string {
	return strings.ReplaceAll(s, "\n", "\n"+indent)
}

// noPodGroupReason is the plan's own "no PodGroup: ..." note (gang.Build always adds one to a
// plan without PodGroups), so the table says why as the JSON does.
func noPodGroupReason(p *gang.Plan) string {
	for _, n := range p.Notes {
		if r, ok := strings.CutPrefix(n, "no PodGroup: "); ok {
			return r
		}
	}
	return "no role has pods"
}

// printPlanTopology prints the plan's topology constraints (issue 30), when it has any: one row
// for each PodGroup and sub-group with a constraint (KAI's TopologyConstraint fields: topology,
// requiredTopologyLevel, preferredTopologyLevel), segments marked with their index, then each
// segmented role's segment size, where it was read and the pod index that places its pods.
func printPlanTopology(w io.Writer, p *gang.Plan) {
	type row struct{ pg, sg, segment, topology, required, preferred string }
	var rows []row
	for _, pg := range p.PodGroups {
		if t := pg.Topology; t != nil {
			rows = append(rows, row{pg.Name, "(PodGroup)", "-", t.TopologyName, cmp.Or(t.RequiredTopologyLevel, "-"), cmp.Or(t.PreferredTopologyLevel, "-")})
		}
		for _, sg := range pg.SubGroups {
			t := sg.Topology
			if t == nil {
				continue
			}
			name, seg := sg.Name, "-"
			if sg.Parent != nil {
				name = *sg.Parent + "/" + sg.Name
			}
			if sg.Segment != nil {
				seg = fmt.Sprint(*sg.Segment)
			}
			rows = append(rows, row{pg.Name, name, seg, t.TopologyName, cmp.Or(t.RequiredTopologyLevel, "-"), cmp.Or(t.PreferredTopologyLevel, "-")})
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := newTable(w, "  PODGROUP\tSUB-GROUP\tSEGMENT\tTOPOLOGY\tREQUIRED\tPREFERRED")
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", r.pg, r.sg, r.segment, r.topology, r.required, r.preferred)
	}
	_ = tw.Flush()
	for _, r := range p.Roles {
		if s := r.Segments; s != nil {
			leader := ""
			if s.Leader != "" {
				leader = fmt.Sprintf(", leader %s (%s)", s.Leader, s.Policy)
			}
			fmt.Fprintf(w, "  segments: role %s in segments of %d pods (%s), each pod by %s%s\n", r.Name, s.Size, s.SizeFrom, s.IndexPath, leader)
		}
	}
}
