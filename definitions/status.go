package definitions

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gangmap/gangmap/definitions/expr"
)

// Status is a word of the common status vocabulary.
type Status string

// The common status vocabulary of Workload Map definitions.
const (
	StatusInitializing Status = "initializing"
	StatusRunning      Status = "running"
	StatusCompleted    Status = "completed"
	StatusFailed       Status = "failed"
	StatusDegraded     Status = "degraded"
	StatusSuspended    Status = "suspended"
	StatusSuspending   Status = "suspending"
	StatusResuming     Status = "resuming"
	StatusUndefined    Status = "undefined"
)

// CompiledStatus is a compiled statusDefinition.
type CompiledStatus struct {
	phase      expr.Program
	conditions expr.Program
	condFields ConditionsDefinition
	// entries in upstream's evaluation order: resuming, suspending, suspended, running, failed,
	// completed, initializing, degraded.
	entries []statusEntry
}

type statusEntry struct {
	status   Status
	matchers []compiledMatcher
}

type compiledMatcher struct {
	byPhase      string
	byConditions []ConditionMatcher
	byExpression expr.Program
	expected     *string
}

func (cc *compileCtx) status(sd *StatusDefinition, p *field.Path) *CompiledStatus {
	if sd == nil {
		return nil
	}
	cs := &CompiledStatus{}
	if sd.PhaseDefinition != nil {
		cs.phase = cc.compile(sd.PhaseDefinition.Path, expr.Object, p.Child("phaseDefinition", "path"))
	}
	if cd := sd.ConditionsDefinition; cd != nil {
		cs.conditions = cc.compile(cd.Path, expr.Object, p.Child("conditionsDefinition", "path"))
		cs.condFields = *cd
	}
	for _, o := range sd.StatusMappings.byName() {
		e := statusEntry{status: o.status}
		for i, sm := range o.matchers {
			mp := p.Child("statusMappings", string(o.status)).Index(i)
			cm := compiledMatcher{byPhase: sm.ByPhase, byConditions: sm.ByConditions}
			if be := sm.ByExpression; be != nil {
				ep := mp.Child("byExpression", "expression")
				if be.ExpectedResult != nil {
					// Published shape: jq, compared as a string after `tostring`.
					cm.byExpression = cc.compile(JQExpr("("+be.Expression+") | tostring"), expr.Object, ep)
					cm.expected = be.ExpectedResult
				} else {
					// Forward shape: a CEL boolean.
					cm.byExpression = cc.compile(CELExpr(be.Expression), expr.Object, ep)
				}
			}
			if cm.byPhase == "" && len(cm.byConditions) == 0 && be(sm) == nil {
				cc.errs = append(cc.errs, field.Required(mp, "a status matcher needs byPhase, byConditions or byExpression"))
			}
			e.matchers = append(e.matchers, cm)
		}
		cs.entries = append(cs.entries, e)
	}
	return cs
}

func be(sm StatusMatcher) *ExpressionMatcher { return sm.ByExpression }

// condition is one extracted condition.
type condition struct {
	typ, status string
	reason      *string
}

// EvaluateStatus returns every common status whose matchers hold on the workload object, in
// upstream's order (resuming, suspending, suspended, running, failed, completed, initializing,
// degraded); [undefined] when none holds or the definition has no status. Matchers under one
// status are ORed; the clauses of one matcher are ANDed. Errors name the failing field path.
func (c *Compiled) EvaluateStatus(ctx context.Context, obj map[string]any, vars map[string]any) ([]Status, error) {
	cs := c.Status
	if cs == nil {
		return []Status{StatusUndefined}, nil
	}
	in := expr.Input{Object: obj, Variables: vars}
	phase := ""
	if cs.phase != nil {
		res, err := cs.phase.Eval(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("statusDefinition.phaseDefinition.path: %w", err)
		}
		if len(res) > 0 && res[0] != nil {
			phase = fmt.Sprint(res[0])
		}
	}
	conds, err := cs.extractConditions(ctx, in)
	if err != nil {
		return nil, err
	}
	var out []Status
	for _, e := range cs.entries {
		for _, m := range e.matchers {
			ok, err := m.matches(ctx, in, phase, conds)
			if err != nil {
				return nil, fmt.Errorf("statusDefinition.statusMappings.%s: %w", e.status, err)
			}
			if ok {
				out = append(out, e.status)
				break
			}
		}
	}
	if len(out) == 0 {
		return []Status{StatusUndefined}, nil
	}
	return out, nil
}

func (cs *CompiledStatus) extractConditions(ctx context.Context, in expr.Input) ([]condition, error) {
	if cs.conditions == nil {
		return nil, nil
	}
	res, err := cs.conditions.Eval(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("statusDefinition.conditionsDefinition.path: %w", err)
	}
	var items []any
	for _, r := range res {
		if l, ok := r.([]any); ok {
			items = append(items, l...)
		} else if r != nil {
			items = append(items, r)
		}
	}
	tf, sf := orDefault(cs.condFields.TypeFieldName, "type"), orDefault(cs.condFields.StatusFieldName, "status")
	var out []condition
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		cd := condition{typ: str(m[tf]), status: str(m[sf])}
		if rf := cs.condFields.ReasonFieldName; rf != "" {
			r := str(m[rf])
			cd.reason = &r
		}
		out = append(out, cd)
	}
	return out, nil
}

func (m compiledMatcher) matches(ctx context.Context, in expr.Input, phase string, conds []condition) (bool, error) {
	if m.byPhase != "" && m.byPhase != phase {
		return false, nil
	}
	for _, want := range m.byConditions {
		if !hasCondition(conds, want) {
			return false, nil
		}
	}
	if m.byExpression != nil {
		res, err := m.byExpression.Eval(ctx, in)
		if err != nil {
			return false, err
		}
		if m.expected != nil {
			return len(res) > 0 && res[0] != nil && str(res[0]) == *m.expected, nil
		}
		return expr.Truthy(res), nil
	}
	return true, nil
}

func hasCondition(conds []condition, want ConditionMatcher) bool {
	for _, c := range conds {
		if c.typ != want.Type {
			continue
		}
		if want.Status != "" && c.status != want.Status {
			continue
		}
		// Matching on a reason needs reasonFieldName; without it the reason is unknown and the
		// matcher never fires (upstream accessor behaviour).
		if want.Reason != "" && (c.reason == nil || *c.reason != want.Reason) {
			continue
		}
		return true
	}
	return false
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func str(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	default:
		return fmt.Sprint(t)
	}
}
