package gang

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
)

// applyStartup applies the definition's start rule (spec.gangmap.gang.startup): every role the
// operator creates later, or whose pods have all finished, is held out of the gang minimum. A
// held role's GangPods becomes 0 and HeldPods keeps its own minimum for its sub-group; the reason
// is in StartupHold and in the notes.
//
// Why a held role keeps its sub-group minimum instead of 0: KAI counts a PodGroup's satisfied
// direct sub-groups against minSubGroup, and a sub-group asking for 0 pods is satisfied by no
// pods at all, so it could stand in for a required one; with its own minimum it is satisfied
// only by its own pods, all of them together (the same shape as KAI's JobSet plugin, whose
// InOrder PodGroup keeps every replicated job's full leaf minimum under minSubGroup 1).
func (p *Plan) applyStartup(ctx context.Context, c *definitions.Compiled, obj, vars map[string]any) error {
	st := c.Startup
	if st == nil {
		return nil
	}
	p.HasStartRule = true
	in := expr.Input{Object: obj, Variables: vars}
	if st.When != nil {
		res, err := st.When.Eval(ctx, in)
		if err != nil {
			return fmt.Errorf("spec.gangmap.gang.startup.when: %w", err)
		}
		if !expr.Truthy(res) {
			return nil
		}
	}
	holds, err := evalHolds(ctx, st.Holds, in)
	if err != nil {
		return err
	}
	firstInstances, err := evalFirstInstances(ctx, st.FirstInstances, in)
	if err != nil {
		return err
	}
	static := len(st.First) > 0 || st.FirstInstances != nil
	firstNames := append(sets.List(sets.KeySet(st.First)), sets.List(firstInstances)...)
	for _, r := range p.Roles {
		reason := holdReason(holds, r)
		if reason == "" && static && !startsFirst(r.component, st.First) && !(r.Instance != "" && firstInstances.Has(r.Instance)) {
			reason = fmt.Sprintf("its pods are created only after those of %s start", strings.Join(firstNames, ", "))
		}
		if reason == "" || r.GangPods == 0 {
			continue
		}
		r.StartupHold, r.HeldPods, r.GangPods = reason, r.GangPods, 0
		p.Notes = append(p.Notes, fmt.Sprintf("start order: role %s is kept out of the gang minimum (%s); its pods join the PodGroup in their own sub-group, which still starts them together", roleLabel(r), reason))
	}
	return nil
}

// evalHolds evaluates startup.holds: an object mapping a role key (instance id or component
// name) to a reason, or a list of {role, reason} objects (the shape CEL builds); null, an empty
// reason or false holds nothing.
func evalHolds(ctx context.Context, prog expr.Program, in expr.Input) (map[string]string, error) {
	out := map[string]string{}
	if prog == nil {
		return out, nil
	}
	res, err := prog.Eval(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("spec.gangmap.gang.startup.holds: %w", err)
	}
	for _, v := range res {
		if err := addHolds(out, v); err != nil {
			return nil, fmt.Errorf("spec.gangmap.gang.startup.holds: %w", err)
		}
	}
	return out, nil
}

func addHolds(out map[string]string, v any) error {
	switch t := v.(type) {
	case nil:
		return nil
	case []any:
		for _, e := range t {
			m, ok := e.(map[string]any)
			role, rok := m["role"].(string)
			if !ok || !rok {
				return fmt.Errorf("expected {role, reason} entries, got %v (%T)", e, e)
			}
			if err := addHold(out, role, m["reason"]); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		for role, reason := range t {
			if err := addHold(out, role, reason); err != nil {
				return err
			}
		}
		return nil
	default:
		return fmt.Errorf("expected an object mapping roles to reasons, got %v (%T)", v, v)
	}
}

func addHold(out map[string]string, role string, reason any) error {
	switch t := reason.(type) {
	case nil:
	case string:
		if t != "" {
			out[role] = t
		}
	case bool:
		if t {
			out[role] = "held by the definition's start rule"
		}
	default:
		return fmt.Errorf("[%q]: expected a reason (text), got %v (%T)", role, reason, reason)
	}
	return nil
}

func evalFirstInstances(ctx context.Context, prog expr.Program, in expr.Input) (sets.Set[string], error) {
	out := sets.New[string]()
	if prog == nil {
		return out, nil
	}
	res, err := prog.Eval(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("spec.gangmap.gang.startup.firstInstances: %w", err)
	}
	for _, v := range res {
		if l, ok := v.([]any); ok {
			for _, e := range l {
				out.Insert(fmt.Sprint(e))
			}
		} else if v != nil {
			out.Insert(fmt.Sprint(v))
		}
	}
	return out, nil
}

// holdReason is the reason holds gives for r: by instance id first, then by component name.
func holdReason(holds map[string]string, r *Role) string {
	if r.Instance != "" {
		if s := holds[r.Instance]; s != "" {
			return s
		}
	}
	return holds[r.Component]
}

func startsFirst(c *definitions.Component, first map[string]bool) bool {
	for a := c; a != nil; a = a.Parent {
		if first[a.Name] {
			return true
		}
	}
	return false
}
