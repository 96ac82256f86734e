package definitions

import (
	"fmt"
	"strings"
)

// namedOthers returns the components the gang instructions (sub-groups, alpha members) name
// that are neither holder nor one of its ancestors, in the order named.
func (c *Compiled) namedOthers(holder *Component) []string {
	own := map[string]bool{}
	for a := holder; a != nil; a = a.Parent {
		own[a.Name] = true
	}
	var named []string
	if gs := c.Loaded.Karta.Spec.OptimizationInstructions.GangScheduling; gs != nil {
		if gs.PodGroup != nil {
			for _, sg := range gs.PodGroup.SubGroups {
				named = append(named, sg.ComponentName)
			}
		}
		for _, pg := range gs.PodGroups {
			for _, m := range pg.Members {
				named = append(named, m.ComponentName)
			}
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, n := range named {
		if o := c.byName[n]; o != nil && o.ScaledRole && o.HasTypeSelector() {
			continue // claims its own pods before any elimination (compat: KAI's fallback)
		}
		if !own[n] && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// PlacementNotice says how pods are placed when that is likely not what the author meant: the
// only component with a specDefinition and no podSelector receives every pod of the workload,
// even unlabelled ones (placement by elimination); or, when the gang instructions name other
// components, no pod is placed at all. It returns the field path and the message, or "" "".
func (c *Compiled) PlacementNotice() (path, msg string) {
	if len(c.PodBearing) != 1 || c.PodBearing[0].HasTypeSelector() {
		return "", ""
	}
	h := c.PodBearing[0]
	p := h.Path.Child("podSelector").String()
	if others := c.namedOthers(h); len(others) > 0 {
		return p, fmt.Sprintf("component %q is the only one with a specDefinition and has no podSelector, while the gang names %s: "+
			"gangmap never places a pod by elimination then, so every pod is unclaimed (falls to KAI's default grouping); give each "+
			"component that has pods a specDefinition and a podSelector", h.Name, strings.Join(others, ", "))
	}
	var without []string
	for _, o := range c.Components {
		if o != h && !o.IsAncestorOf(h) && !(o.ScaledRole && o.HasTypeSelector()) {
			without = append(without, o.Name)
		}
	}
	if len(without) == 0 {
		return "", "" // the holder and its ancestors only: every pod is the holder's
	}
	return p, fmt.Sprintf("component %q is the only one with a specDefinition and has no podSelector: it receives every pod of the "+
		"workload, even unlabelled ones (placement by elimination), while component(s) %s have no specDefinition; if those have pods, give them a "+
		"specDefinition and every pod-holding component a podSelector", h.Name, strings.Join(without, ", "))
}
