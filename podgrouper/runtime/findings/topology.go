package findings

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/runtime/kaitopology"
)

// topologyState is what a workload's plan asks of KAI's topology: the requests the plan could not
// honour (gang.Plan.TopologyIssues) and every distinct constraint it writes, checked against the
// cluster's Topologies at each evaluation (so a Topology created later clears the finding).
type topologyState struct {
	issues []gang.TopologyIssue
	uses   []topologyUse
}

// topologyUse is one distinct constraint of the plan and the first PodGroup field that carries
// it; more counts the other sub-groups with the same constraint (a role's segments).
type topologyUse struct {
	c     definitions.TopologyConstraint
	field string
	role  string
	more  int
}

// setTopology records the plan's topology issues and constraints (nil when it has none).
func (w *workload) setTopology(plan *gang.Plan) {
	var st topologyState
	st.issues = append(st.issues, plan.TopologyIssues...)
	seen := map[definitions.TopologyConstraint]int{}
	add := func(c *definitions.TopologyConstraint, field, role string) {
		if c == nil || c.TopologyName == "" {
			return
		}
		if i, ok := seen[*c]; ok {
			st.uses[i].more++
			return
		}
		seen[*c] = len(st.uses)
		st.uses = append(st.uses, topologyUse{c: *c, field: field, role: role})
	}
	for _, pg := range plan.PodGroups {
		add(pg.Topology, "PodGroup "+pg.Name+" spec.topologyConstraint", "")
		for _, sg := range pg.SubGroups {
			add(sg.Topology, "PodGroup "+pg.Name+" spec.subGroups["+sg.Name+"].topologyConstraint", sg.Name)
		}
	}
	if len(st.issues) == 0 && len(st.uses) == 0 {
		w.rare.topology = nil
		return
	}
	w.rare.topology = &st
}

// topologyFindings are the workload's TopologyUnresolved findings (one per role, its issues
// joined) and, when lookup knows the cluster's Topologies, its TopologyNotFound findings (one per
// distinct constraint that names a missing Topology or a level the Topology lacks).
func (st *topologyState) findings(lookup kaitopology.Lookup) []Finding {
	if st == nil {
		return nil
	}
	var fs []Finding
	byRole := map[string][]string{}
	for _, is := range st.issues {
		byRole[is.Role] = append(byRole[is.Role], is.Reason)
	}
	for role, reasons := range byRole { // in any order: the findings are sorted by role
		msg := strings.Join(reasons, "; ")
		fs = append(fs, Finding{Reason: TopologyUnresolved, Role: role, Counts: msg, Message: msg +
			" (the plan writes the rest of the gang as usual; fix the kai.scheduler/ topology annotations or the definition, and check with gangmap plan)"})
	}
	if lookup == nil {
		return fs
	}
	for _, u := range st.uses {
		if f, ok := u.check(lookup); ok {
			fs = append(fs, f)
		}
	}
	return fs
}

// check is the use's TopologyNotFound finding, if the Topology it names is missing or lacks a
// level it asks for; nothing while lookup does not know yet. KAI's scheduler leaves such a
// sub-group unscheduled: "Requested topology %s does not exist" (v0.17 plugins/topology
// job_filtering.go subSetNodesFn) or a topology constraint config error for a level that is none
// of the Topology's node labels (calculateRelevantDomainLevels, after aliases are resolved).
func (u topologyUse) check(lookup kaitopology.Lookup) (Finding, bool) {
	t, found, known := lookup.Topology(u.c.TopologyName)
	if !known {
		return Finding{}, false
	}
	where := u.field
	if u.more > 0 {
		where += fmt.Sprintf(" (and %d more sub-group(s) with the same constraint)", u.more)
	}
	if !found {
		why := "no KAI Topology of that name exists"
		if !lookup.Served() {
			why = "the API server does not serve KAI's Topology API (kai.scheduler/v1alpha1 topologies): no Topology exists"
		}
		return Finding{Reason: TopologyNotFound, Role: u.role, Counts: "missing " + u.c.TopologyName, Message: fmt.Sprintf(
			"%s.topology names Topology %q, but %s: KAI leaves the sub-group unscheduled (\"Requested topology %s does not exist\"); create the Topology or fix kai.scheduler/topology",
			where, u.c.TopologyName, why, u.c.TopologyName)}, true
	}
	var bad []string
	for _, lv := range []struct{ field, level string }{{"requiredTopologyLevel", u.c.RequiredTopologyLevel}, {"preferredTopologyLevel", u.c.PreferredTopologyLevel}} {
		if lv.level != "" && !t.HasLevel(lv.level) {
			bad = append(bad, fmt.Sprintf("%s.%s %q", where, lv.field, lv.level))
		}
	}
	if len(bad) == 0 {
		return Finding{}, false
	}
	slices.Sort(bad)
	verb := "is not a level"
	if len(bad) > 1 {
		verb = "are not levels"
	}
	return Finding{Reason: TopologyNotFound, Role: u.role, Counts: strings.Join(bad, ","), Message: fmt.Sprintf(
		"%s %s of Topology %q, whose levels are %s: KAI refuses the constraint and leaves the sub-group unscheduled; use one of the levels' node labels (or aliases) in the topology placement annotations",
		strings.Join(bad, " and "), verb, t.Name, strings.Join(t.LevelNames(), ", "))}, true
}
