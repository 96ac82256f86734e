package gang

import (
	"fmt"
	"strings"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
)

// noteNegative says when a replica count was negative and counted 0 (KAI's CalculateSubtreeScale
// takes a scale only when it is above 0; Milvus writes -1 for an HPA-managed component).
func (p *Plan) noteNegative(r *Role, inst *definitions.Instance) {
	for _, v := range []struct {
		name string
		n    *int64
	}{{"replicasPath", inst.Replicas}, {"minReplicasPath", inst.MinReplicas}} {
		if v.n != nil && *v.n < 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("role %s: %s gave %d; counted 0, as KAI's fallback counts a scale that is not above 0 (a framework's \"managed elsewhere\" value such as Milvus -1 for an HPA)", roleLabel(r), v.name, *v.n))
		}
	}
}

// explainNoPodGroup adds a note saying why when the plan has no PodGroup, so that no caller
// ends with "nothing to do" without a reason.
func (p *Plan) explainNoPodGroup(c *definitions.Compiled) {
	if len(p.PodGroups) > 0 {
		return
	}
	var why string
	switch {
	case p.OwnsNoPods != "":
		why = p.OwnsNoPods
	case len(p.Roles) == 0 && len(c.PodBearing)+len(c.ScaledRoles) == 0:
		why = "the definition has no component with a specDefinition or a scaleDefinition, so it describes no pods"
	case len(p.Roles) == 0:
		why = "the definition's components have no instances on this workload (their instanceIdPath yielded none)"
	default:
		var zero, left []string
		for _, r := range p.Roles {
			if r.Pods == 0 {
				zero = append(zero, roleLabel(r))
			} else {
				left = append(left, roleLabel(r))
			}
		}
		why = "no role of the definition's gangs has pods"
		if len(zero) > 0 {
			why += fmt.Sprintf(" (0 pods: %s)", strings.Join(zero, ", "))
		}
		if len(left) > 0 {
			why += fmt.Sprintf("; the roles with pods (%s) are in no pod group of the definition and are left to KAI", strings.Join(left, ", "))
		}
	}
	p.Notes = append(p.Notes, "no PodGroup: "+why)
}

// fromExpression says which expression gave a count, for errors: " from <source> on the
// workload (check the workload fields it reads)", or "" without one.
func fromExpression(p expr.Program) string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf(" from %s on the workload (check the workload fields it reads)", p.Source())
}

func roleLabel(r *Role) string {
	if r.Instance == "" {
		return r.Component
	}
	return r.Component + "[" + r.Instance + "]"
}

func instanceNote(id string) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf(" (instance %q)", id)
}
