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
// held role's GangPods becomes 0 and HeldPods keeps its own minimum; the reason is in
// StartupHold and in the notes, and StartupFinished says the role has finished.
//
// What the PodGroup then asks of KAI (finish): a finished role keeps a sub-group of minimum 0,
// satisfied by no pod, so its finished pods stay in the PodGroup and it never blocks; a role
// not created yet is Deferred: its sub-group is left out of the PodGroup until its pods exist,
// and is written then with its own minimum, so they start together. Keeping it in the PodGroup
// meanwhile with its minimum deadlocks on KAI, which takes the first minSubGroup sub-groups by
// name (allocation_info.go collectTasksFromSubGroupSet, real-kai.md), and makes KAI's
// stalegangeviction evict the running roles (job_info.go IsStale: a sub-group below its
// minimum while others run); keeping it with minimum 0 lets KAI bind its pods one at a time.
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
		h := holdOf(holds, r)
		r.holdIsPerRole = h.reason != "" && !h.generic
		if h.reason == "" && static && !startsFirst(r.component, st.First) && !(r.Instance != "" && firstInstances.Has(r.Instance)) {
			h.reason = fmt.Sprintf("its pods are created only after those of %s start", strings.Join(firstNames, ", "))
		}
		if h.reason == "" || r.GangPods == 0 {
			continue
		}
		r.StartupHold, r.StartupFinished, r.HeldPods, r.GangPods = h.reason, h.finished, r.GangPods, 0
		if h.finished {
			p.Notes = append(p.Notes, fmt.Sprintf("start order: role %s is kept out of the gang minimum (%s); its sub-group asks for 0 pods", roleLabel(r), h.reason))
			continue
		}
		p.Notes = append(p.Notes, fmt.Sprintf("start order: role %s is kept out of the gang minimum (%s); its sub-group is written to the PodGroup, with its own minimum, once its pods exist, so they start together", roleLabel(r), h.reason))
	}
	return nil
}

// hold is one role's entry of startup.holds: why it is held, and whether because its pods have
// all finished.
type hold struct {
	reason   string
	finished bool
	// generic says the reason is gangmap's text for a hold given as true, which names no
	// condition: it is no release key (Role.ReleaseKey).
	generic bool
}

// evalHolds evaluates startup.holds: an object mapping a role key (instance id or component
// name) to a reason, or a list of {role, reason} objects (the shape CEL builds); a reason is a
// text, true, or {reason, finished} where finished: true says the role's pods have all finished
// (not that they are yet to be created); null, an empty reason or false holds nothing.
func evalHolds(ctx context.Context, prog expr.Program, in expr.Input) (map[string]hold, error) {
	out := map[string]hold{}
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

func addHolds(out map[string]hold, v any) error {
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
			reason := m["reason"]
			if f, ok := m["finished"]; ok {
				reason = map[string]any{"reason": m["reason"], "finished": f}
			}
			if err := addHold(out, role, reason); err != nil {
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

func addHold(out map[string]hold, role string, reason any) error {
	switch t := reason.(type) {
	case nil:
	case string:
		if t != "" {
			out[role] = hold{reason: t}
		}
	case bool:
		if t {
			out[role] = hold{reason: "held by the definition's start rule", generic: true}
		}
	case map[string]any:
		finished, ok := t["finished"].(bool)
		if _, has := t["finished"]; has && !ok {
			return fmt.Errorf("[%q].finished: expected true or false, got %v (%T)", role, t["finished"], t["finished"])
		}
		if err := addHold(out, role, t["reason"]); err != nil {
			return err
		}
		if h, held := out[role]; held {
			h.finished = finished
			out[role] = h
		}
	default:
		return fmt.Errorf("[%q]: expected a reason (text, true, or {reason, finished}), got %v (%T)", role, reason, reason)
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

// holdOf is the hold holds gives for r: by instance id first, then by component name.
func holdOf(holds map[string]hold, r *Role) hold {
	if r.Instance != "" {
		if h := holds[r.Instance]; h.reason != "" {
			return h
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
