package app

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/gangmap/gangmap/gang"
)

// printPlanTopology prints the plan's topology constraints (issue 30), when it has any: one row
// for each PodGroup and sub-group with a constraint (KAI's TopologyConstraint fields: topology,
// requiredTopologyLevel, preferredTopologyLevel), segments marked with their index, then each
// segmented role's segment size, where it was read and the pod index that places its pods.
func printPlanTopology(w io.Writer, p *gang.Plan) error {
	type row struct{ pg, sg, segment, topology, required, preferred string }
	var rows []row
	for _, pg := range p.PodGroups {
		if t := pg.Topology; t != nil {
			rows = append(rows, row{pg.Name, "(PodGroup)", "-", t.TopologyName, dash(t.RequiredTopologyLevel), dash(t.PreferredTopologyLevel)})
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
			rows = append(rows, row{pg.Name, name, seg, t.TopologyName, dash(t.RequiredTopologyLevel), dash(t.PreferredTopologyLevel)})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "  PODGROUP\tSUB-GROUP\tSEGMENT\tTOPOLOGY\tREQUIRED\tPREFERRED")
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", r.pg, r.sg, r.segment, r.topology, r.required, r.preferred)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range p.Roles {
		if s := r.Segments; s != nil {
			leader := ""
			if s.Leader != "" {
				leader = fmt.Sprintf(", leader %s (%s)", s.Leader, s.Policy)
			}
			fmt.Fprintf(w, "  segments: role %s in segments of %d pods (%s), each pod by %s%s\n", r.Name, s.Size, s.SizeFrom, s.IndexPath, leader)
		}
	}
	return nil
}
