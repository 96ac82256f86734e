package definitions

import (
	"context"
	"fmt"

	"github.com/gangmap/gangmap/definitions/expr"
)

// IsAlphaForm reports whether the definition's gang hints are the alpha podGroups form (and not
// the current podGroup form, which wins when both are set, as in KAI).
func (c *Compiled) IsAlphaForm() bool {
	gs := c.Loaded.Karta.Spec.OptimizationInstructions.GangScheduling
	return gs != nil && gs.PodGroup == nil && len(gs.PodGroups) > 0
}

// AlphaMemberOfPod is the alpha pod group member that takes a pod of comp, as KAI's fallback
// chooses it (Karta's GetPodGroupingEffectiveComponent, called from KAI
// pkg/podgrouper/podgrouper/plugins/karta/grouper.go getPodGroupMetadataAlpha): the first of
// AlphaCandidates whose filters all hold on the pod. ok is false when none does.
func (c *Compiled) AlphaMemberOfPod(ctx context.Context, comp *Component, pod map[string]any) (m AlphaMember, ok bool, err error) {
	for _, cand := range c.AlphaCandidates(comp) {
		pass, err := c.PassesAlphaFilters(ctx, cand.Group, cand.Member, pod)
		if err != nil {
			return AlphaMember{}, false, err
		}
		if pass {
			return cand, true, nil
		}
	}
	return AlphaMember{}, false, nil
}

// AlphaKeyValues evaluates member m's grouping keys (groupByKeyPaths, then groupByExpressions)
// on pod, as KAI's fallback does (Karta pkg/resource/pod_querier.go ExtractGroupKeys): each key
// must give exactly one result that is neither null nor "" (validateSingleQueryResult), and the
// value is that result formatted with fmt's %v (KAIKeyValue). Errors name the key's field path.
// A member without keys gives no values and no error.
func (c *Compiled) AlphaKeyValues(ctx context.Context, m AlphaMember, pod map[string]any) ([]string, error) {
	progs := c.AlphaKeys[m.Group][m.Member]
	if len(progs) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(progs))
	for i, p := range progs {
		v, err := singleKeyValue(ctx, p, expr.Input{Pod: pod})
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", c.alphaKeyPath(m, i), p.Source(), err)
		}
		out = append(out, v)
	}
	return out, nil
}

// AlphaKeyPrograms returns member m's compiled grouping keys, in AlphaKeyValues' order.
func (c *Compiled) AlphaKeyPrograms(m AlphaMember) []expr.Program {
	return c.AlphaKeys[m.Group][m.Member]
}

// KAIKeyValue formats one grouping-key result as KAI's fallback does: fmt.Sprintf("%v", result)
// (Karta pkg/resource/pod_querier.go ExtractGroupKeys), so "0", "true" and "2.5" for JSON
// numbers and booleans.
func KAIKeyValue(v any) string { return fmt.Sprintf("%v", v) }

// singleKeyValue evaluates a grouping key: exactly one result, not null and not "".
func singleKeyValue(ctx context.Context, p expr.Program, in expr.Input) (string, error) {
	res, err := p.Eval(ctx, in)
	if err != nil {
		return "", err
	}
	if len(res) != 1 {
		return "", fmt.Errorf("expected a single value on the pod, got %d", len(res))
	}
	if res[0] == nil || res[0] == "" {
		return "", fmt.Errorf("expected a non-empty value on the pod, got %v", res[0])
	}
	return KAIKeyValue(res[0]), nil
}

func (c *Compiled) alphaKeyPath(m AlphaMember, i int) string {
	mem := c.Loaded.Karta.Spec.OptimizationInstructions.GangScheduling.PodGroups[m.Group].Members[m.Member]
	field, idx := "groupByKeyPaths", i
	if i >= len(mem.GroupByKeyPaths) {
		field, idx = "groupByExpressions", i-len(mem.GroupByKeyPaths)
	}
	return fmt.Sprintf("spec.optimizationInstructions.gangScheduling.podGroups[%d].members[%d].%s[%d]", m.Group, m.Member, field, idx)
}

// EvalAlphaKey evaluates one grouping key on pod with KAI's rule (AlphaKeyValues): exactly one
// result, neither null nor "", formatted by KAIKeyValue.
func EvalAlphaKey(ctx context.Context, p expr.Program, pod map[string]any) (string, error) {
	return singleKeyValue(ctx, p, expr.Input{Pod: pod})
}
