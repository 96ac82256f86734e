package definitions

import (
	"context"
	"regexp"
)

// AlphaMember is an alpha pod group member chosen for a component: its group and member
// indexes in spec.optimizationInstructions.gangScheduling.podGroups.
type AlphaMember struct{ Group, Member int }

// AlphaCandidates lists the alpha pod group members that can take comp's pods, in upstream's
// precedence (GetPodGroupingEffectiveComponent): members naming comp itself first, then members
// naming an ancestor, each in definition order. The first whose filters pass wins.
func (c *Compiled) AlphaCandidates(comp *Component) []AlphaMember {
	gs := c.Loaded.Karta.Spec.OptimizationInstructions.GangScheduling
	if gs == nil || gs.PodGroup != nil {
		return nil
	}
	var out []AlphaMember
	for _, direct := range []bool{true, false} {
		for gi, g := range gs.PodGroups {
			for mi, m := range g.Members {
				mc := c.Component(m.ComponentName)
				if mc == nil || direct && mc != comp || !direct && !mc.IsAncestorOf(comp) {
					continue
				}
				out = append(out, AlphaMember{gi, mi})
			}
		}
	}
	return out
}

// HasAlphaFilters reports whether any alpha pod group member has filters.
func (c *Compiled) HasAlphaFilters() bool {
	for _, g := range c.AlphaFilters {
		for _, fs := range g {
			if len(fs) > 0 {
				return true
			}
		}
	}
	return false
}

// AlphaGroupOfPod judges the alpha filters on the pod itself, as KAI's fallback does: the
// group of the first candidate member of comp whose filters all pass (AlphaMemberOfPod), or -1.
func (c *Compiled) AlphaGroupOfPod(ctx context.Context, comp *Component, pod map[string]any) (int, error) {
	m, ok, err := c.AlphaMemberOfPod(ctx, comp, pod)
	if err != nil || !ok {
		return -1, err
	}
	return m.Group, nil
}

// podMetadataRef matches a filter's read of pod labels or annotations (jq or CEL).
var podMetadataRef = regexp.MustCompile(`metadata\??\.(labels|annotations)\??(?:\[\s*"([^"]+)"\s*\]|\.([A-Za-z0-9_]+))`)

// AlphaFiltersReadAbsentMetadata reports whether a member's filters read a pod label or
// annotation that the pod template does not set: an operator sets those on the pods it creates
// (a role index, a replica type), so a plan cannot judge such a filter on the template.
func (c *Compiled) AlphaFiltersReadAbsentMetadata(m AlphaMember, tplLabels, tplAnnotations map[string]string) bool {
	gs := c.Loaded.Karta.Spec.OptimizationInstructions.GangScheduling
	for _, f := range gs.PodGroups[m.Group].Members[m.Member].Filters {
		for _, ref := range podMetadataRef.FindAllStringSubmatch(f.String(), -1) {
			key := ref[2] + ref[3]
			have := tplLabels
			if ref[1] == "annotations" {
				have = tplAnnotations
			}
			if _, ok := have[key]; !ok {
				return true
			}
		}
	}
	return false
}
