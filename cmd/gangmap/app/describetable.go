package app

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/gangmap/gangmap/podgrouper/runtime/findings"
)

// printDescribe writes the table form of a describe document: per workload a header, the tree
// with pods, the roles, the GPU totals, the PodGroups (planned and existing, with differences),
// the unclaimed pods, the grouper's findings and the notes; workloads are separated by a blank line.
func printDescribe(w io.Writer, doc *workloadsDocument) {
	for i, v := range doc.Workloads {
		if i > 0 {
			fmt.Fprintln(w)
		}
		printWorkloadView(w, v)
	}
}

func printWorkloadView(w io.Writer, v *workloadView) {
	header := v.Workload.Kind + "/" + v.Workload.Name
	if v.Workload.Namespace != "" {
		header += "   namespace: " + v.Workload.Namespace
	}
	if v.Definition != nil {
		header += fmt.Sprintf("   definition: %s (%s)", v.Definition.Name, v.Definition.Source)
	}
	fmt.Fprintln(w, header)
	if v.Error != "" {
		fmt.Fprintf(w, "error: %s\n", indentLines(v.Error, "  "))
	} else {
		fmt.Fprintf(w, "Status: %s\n", v.statusText())
	}
	fmt.Fprintf(w, "Pods: %d/%d ready\n", v.Pods.Ready, v.Pods.Total)

	if v.Tree != nil {
		fmt.Fprintln(w)
		tw, root := newTable(w, ""), componentLine(v.Tree)
		fmt.Fprintln(tw, root.text)
		printTree(tw, "", root.under)
		_ = tw.Flush()
	}

	if len(v.Roles) > 0 {
		fmt.Fprintln(w)
		tw := newTable(w, "ROLE\tCOMPONENT\tINSTANCE\tREPLICAS\tPODS\tGANG-PODS\tREADY\tGPUS/POD\tGPUS")
		ready := map[string]string{}
		eachInstance(v.Tree, func(_ *componentNode, in *instanceNode) {
			if in.Role != "" {
				ready[in.Role] = fmt.Sprintf("%d/%d", in.Ready, len(in.Pods))
			}
		})
		for _, r := range v.Roles {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", r.Name, r.Component, cmp.Or(r.Instance, "-"), r.Replicas, r.Pods, r.GangPods, ready[r.Name], r.GPUsPerPod, r.GPUs)
		}
		_ = tw.Flush()
	}
	if v.Error == "" && v.Definition != nil {
		fmt.Fprintf(w, "TOTAL GPUs: %s (plan); the %d pods request %s\n", v.TotalGPUs, v.Pods.Total, v.PodGPUs)
		printLines(w, "note: ", gpuDetailNotes(v.Roles))
	}
	if n := v.DRAClaimPods; n > 0 {
		fmt.Fprintf(w, "note: %d of the pods get devices through DRA resource claims (not counted in the GPUs above)\n", n)
	}

	fmt.Fprintln(w)
	printPodGroupViews(w, v.PodGroups)
	printPlacement(w, v)

	fmt.Fprintln(w)
	if len(v.Unclaimed) == 0 {
		fmt.Fprintln(w, "Unclaimed pods: none")
	} else {
		fmt.Fprintf(w, "Unclaimed pods (%d, no component of the definition claims them):\n", len(v.Unclaimed))
		tw := newTable(w, "  POD\tPHASE\tNODE\tGPUS\tREASON")
		for _, p := range v.Unclaimed {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", p.Name, p.Phase, cmp.Or(p.Node, "<none>"), p.GPUs, p.Reason)
		}
		_ = tw.Flush()
	}
	printFindings(w, v)
	if len(v.Notes) > 0 {
		fmt.Fprintln(w)
		printLines(w, "note: ", v.Notes)
	}
}

// printFindings writes the Findings section (nothing when the grouper reports none): the
// findings its gangmap.io/health annotation lists and, when it counts more than it lists (the
// first findings.MaxHealthFindings of a workload), how many more and where what they concern
// shows.
func printFindings(w io.Writer, v *workloadView) {
	if len(v.Findings) == 0 && v.FindingsOmitted == 0 {
		return
	}
	const what = "the grouper's pods against the plan; docs/findings.md says what each means and how to fix it"
	fmt.Fprintln(w)
	if v.FindingsOmitted == 0 {
		fmt.Fprintf(w, "Findings (%d, %s):\n", len(v.Findings), what)
	} else {
		fmt.Fprintf(w, "Findings (%d, the first %d listed; %s):\n", len(v.Findings)+v.FindingsOmitted, len(v.Findings), what)
	}
	for _, f := range v.Findings {
		fmt.Fprintf(w, "  %s\n", f.String())
	}
	if v.FindingsOmitted == 0 {
		return
	}
	fmt.Fprintf(w, "  ... and %d more, not listed: the grouper's %s annotation lists a workload's first %d findings and counts the rest;\n", v.FindingsOmitted, findings.HealthAnnotation, len(v.Findings))
	fmt.Fprintf(w, "  the grouper's Events name at most %d at a time (the workload's %s Event counts the others);\n", findings.MaxHealthFindings, findings.ReasonMoreFindings)
	if len(v.Roles) > 0 {
		fmt.Fprintln(w, "  the ROLE table above shows every role's live pods (READY: ready/live) against its PODS and GANG-PODS")
	}
}

// treeLine is one line of a tree drawing (tab-separated cells) and the lines drawn under it.
type treeLine struct {
	text  string
	under []treeLine
}

// printTree writes each of lines after prefix and its branch, and the lines under it after
// prefix and the branch's continuation.
func printTree(w io.Writer, prefix string, lines []treeLine) {
	for i, l := range lines {
		b, c := "|-- ", "|   "
		if i == len(lines)-1 {
			b, c = "`-- ", "    "
		}
		fmt.Fprintln(w, prefix+b+l.text)
		printTree(w, prefix+c, l.under)
	}
}

// componentLine is the tree of a component: its instances with their pods (a single instance
// without an ID shares the component's line), then its children.
func componentLine(n *componentNode) treeLine {
	l := treeLine{text: n.Name}
	if n.Kind != "" {
		l.text += " (" + n.Kind + ")"
	}
	if len(n.Instances) == 1 && n.Instances[0].ID == "" {
		l.text += "\t" + instanceText(n.Instances[0])
		l.under = podLines(n.Instances[0].Pods)
	} else {
		l.text += "\t"
		for _, in := range n.Instances {
			l.under = append(l.under, treeLine{text: in.ID + "\t" + instanceText(in), under: podLines(in.Pods)})
		}
	}
	for _, ch := range n.Children {
		l.under = append(l.under, componentLine(ch))
	}
	return l
}

func instanceText(in *instanceNode) string {
	if in.Role == "" {
		return fmt.Sprintf("replicas %d", in.Replicas)
	}
	return fmt.Sprintf("role %s   replicas %d   pods %d/%d ready, %d planned   GPUs %s/pod, %s", in.Role, in.Replicas, in.Ready, len(in.Pods), in.PlanPods, in.GPUsPerPod, in.GPUs)
}

func podLines(pods []*podView) []treeLine {
	out := make([]treeLine, len(pods))
	for i, p := range pods {
		pg := p.PodGroup
		if p.SubGroup != "" {
			pg += "/" + p.SubGroup
		}
		out[i].text = fmt.Sprintf("%s\t%s   node %s   GPUs %s   -> %s", p.Name, p.Phase, cmp.Or(p.Node, "<none>"), p.GPUs, cmp.Or(pg, p.Reason))
	}
	return out
}

// verdictStates are the STATE column's words for each verdict.
var verdictStates = map[string]string{verdictForeign: "exists, not gangmap's", verdictMissing: "planned, not created yet",
	verdictDiffers: "exists, differs from the plan", verdictMatch: "exists, matches the plan", verdictPlanned: "planned",
	verdictNative: "not created: KAI groups the kind natively"}

// printPodGroupViews writes the PodGroups table and each difference below it.
func printPodGroupViews(w io.Writer, pgs []*podGroupView) {
	if len(pgs) == 0 {
		fmt.Fprintln(w, "PodGroups: none planned, none found")
		return
	}
	tw := newTable(w, "PODGROUP\tSTATE\tMIN-MEMBER\tMIN-SUBGROUP\tSUB-GROUPS\tPODS\tGPUS")
	for _, pg := range pgs {
		s, state := pg.Planned, cmp.Or(verdictStates[pg.Verdict], pg.Verdict)
		if pg.Verdict == verdictForeign {
			s = pg.Existing
			if pg.Writer != "" {
				state += ": " + pg.Writer
			}
		}
		if a := pg.Admission; a != nil && !a.Admitted {
			state += "; KAI cannot admit it"
			if a.Blocking != "" {
				state += " (sub-group " + a.Blocking + " blocks it)"
			}
		} else if a != nil && a.Partial {
			state += "; KAI would bind part of it first"
		}
		pods, gpus := "-", "-"
		if pg.Planned != nil {
			pods, gpus = fmt.Sprint(pg.Planned.Pods), pg.Planned.GPUs.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", pg.Name, state, optInt(s.MinMember), optInt(s.MinSubGroup), subGroupList(s.SubGroups), pods, gpus)
	}
	_ = tw.Flush()
	for _, pg := range pgs {
		printLines(w, "  "+pg.Name+": ", pg.Differences)
		if a := pg.Admission; a != nil && (!a.Admitted || a.Partial) && a.Reason != "" {
			fmt.Fprintf(w, "  %s: KAI: %s\n", pg.Name, a.Reason)
		}
		if a := pg.Admission; a != nil && len(a.Stranded) > 0 {
			fmt.Fprintf(w, "  %s: KAI does not schedule %d pod(s) in no sub-group of it: %s\n", pg.Name, len(a.Stranded), strings.Join(a.Stranded, ", "))
		}
	}
}
