package definitions

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/gangmap/gangmap/definitions/expr"
)

// ErrNoComponent says no pod-bearing component's selector matches the pod: the definition does
// not describe it (a RayJob submitter pod, a helper pod the operator adds).
var ErrNoComponent = errors.New("no component's podSelector.componentTypeSelector matches the pod")

// PodPlacement says where a pod sits in its workload's component tree.
type PodPlacement struct {
	// Component is the pod-bearing component the pod belongs to.
	Component *Component
	// InstanceID is the pod's instance of Component ("" for a single-instance component).
	InstanceID string
	// ReplicaKeys maps the names of Component and its ancestors that have a
	// podSelector.replicaSelector to the pod's replica key there (LWS group index).
	ReplicaKeys map[string]string
	// ReplicaKeyErrors holds, by component name, why a replica key could not be read; it is an
	// error only where the plan needs that key.
	ReplicaKeyErrors map[string]error
	// AlphaJudged says the definition has alpha podGroups filters and AlphaGroup is the index of
	// the alpha pod group the pod's own labels and spec put it in (-1: none), as KAI's fallback
	// judges them on the pod.
	AlphaJudged bool
	AlphaGroup  int
	// AlphaKeys are, in the alpha form, the pod's values of the grouping keys of the member that
	// takes it (AlphaMemberOfPod, AlphaKeyValues): KAI's fallback names the pod's PodGroup by
	// them. AlphaKeysErr says why they could not be read (then KAI's fallback groups the pod
	// nowhere); both are empty when the member has no keys or no member takes the pod.
	AlphaKeys    []string
	AlphaKeysErr error
	// PodIndex is the pod's index among its role's pods (Component.PodIndex, a whole number
	// >= 0), which places it in its segment; HasPodIndex says it was read, PodIndexErr why not
	// (an error only where the plan segments the role). Both unset without a podIndexPath.
	PodIndex    int64
	HasPodIndex bool
	PodIndexErr error
	// PodReplica is the pod's replica index when the definition counts PodIndex within a replica
	// (Component.PodReplicaIndex, else the component's own replica key); HasPodReplica says so.
	PodReplica    int64
	HasPodReplica bool
}

// PlacePod finds the pod's component, instance and replica keys by the definition's pod
// selectors. pod is the pod as normalized JSON (expr.FromObject).
//
// A scaled role without a pod template (Compiled.ScaledRoles) whose componentTypeSelector matches
// comes first (KAI's fallback matches sub-group components by that selector). Otherwise the
// component is the only pod-bearing one when there is just one (upstream's InferPodComponent
// rule), else the first pod-bearing component in definition order whose componentTypeSelector
// matches. Errors: no component matches; an instance or replica key
// expression yields nothing or more than one value (each names the field path).
func (c *Compiled) PlacePod(ctx context.Context, pod map[string]any) (*PodPlacement, error) {
	pod, _ = expr.Normalize(pod).(map[string]any) // a no-op copy-free walk for PodInput's maps
	if err := expr.CheckInput(pod, c.limits); err != nil {
		return nil, fmt.Errorf("the pod: %w", err)
	}
	in := expr.Input{Pod: pod, Normalized: true}
	var comp *Component
	for _, cand := range c.ScaledRoles {
		ok, err := cand.MatchesType(ctx, in)
		if err != nil {
			return nil, err
		}
		if ok {
			comp = cand
			break
		}
	}
	switch {
	case comp != nil:
	case c.ByElimination:
		comp = c.PodBearing[0]
	default:
		for _, cand := range c.PodBearing {
			ok, err := cand.MatchesType(ctx, in)
			if err != nil {
				return nil, err
			}
			if ok {
				comp = cand
				break
			}
		}
	}
	if comp == nil {
		return nil, ErrNoComponent
	}
	pl := &PodPlacement{Component: comp}
	if c.IsAlphaForm() {
		m, ok, err := c.AlphaMemberOfPod(ctx, comp, pod)
		if err != nil {
			return nil, err
		}
		if c.HasAlphaFilters() {
			pl.AlphaJudged, pl.AlphaGroup = true, -1
			if ok {
				pl.AlphaGroup = m.Group
			}
		}
		if ok {
			pl.AlphaKeys, pl.AlphaKeysErr = c.AlphaKeyValues(ctx, m, pod)
		}
	}
	if comp.InstanceKey != nil {
		id, err := singleKey(ctx, comp.InstanceKey, in)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", comp.Path.Child("podSelector", "componentInstanceSelector", "idPath"), comp.InstanceKey.Source(), err)
		}
		pl.InstanceID = id
	}
	if comp.PodIndex != nil {
		pl.PodIndex, pl.PodIndexErr = podIndex(ctx, comp, comp.PodIndex, "podIndexPath", in)
		if pl.PodIndexErr == nil && comp.PodReplicaIndex != nil {
			pl.PodReplica, pl.PodIndexErr = podIndex(ctx, comp, comp.PodReplicaIndex, "podReplicaIndexPath", in)
			pl.HasPodReplica = pl.PodIndexErr == nil
		}
		pl.HasPodIndex = pl.PodIndexErr == nil
	}
	for a := comp; a != nil; a = a.Parent {
		if a.ReplicaKey == nil {
			continue
		}
		key, err := singleKey(ctx, a.ReplicaKey, in)
		if err != nil {
			if pl.ReplicaKeyErrors == nil {
				pl.ReplicaKeyErrors = map[string]error{}
			}
			pl.ReplicaKeyErrors[a.Name] = fmt.Errorf("%s (%s): %w", a.Path.Child("podSelector", "replicaSelector", "keyPath"), a.ReplicaKey.Source(), err)
			continue
		}
		if pl.ReplicaKeys == nil {
			pl.ReplicaKeys = map[string]string{}
		}
		pl.ReplicaKeys[a.Name] = key
	}
	return pl, nil
}

// MatchesType reports whether the component's componentTypeSelector matches the pod in
// in.Pod: every matchLabels entry equals the pod's label, and keyPath's result equals value
// (compared as text) or, without a value, some result is not null (upstream's rule). A
// component without a selector matches nothing.
func (c *Component) MatchesType(ctx context.Context, in expr.Input) (bool, error) {
	if !c.HasTypeSelector() {
		return false, nil
	}
	if len(c.MatchLabels) > 0 {
		labels := podLabels(in.Pod)
		for k, v := range c.MatchLabels {
			if got, ok := labels[k]; !ok || got != v {
				return false, nil
			}
		}
	}
	if c.TypeKey == nil {
		return true, nil
	}
	res, err := c.TypeKey.Eval(ctx, in)
	if err != nil {
		return false, fmt.Errorf("%s: %w", c.Path.Child("podSelector", "componentTypeSelector", "keyPath"), err)
	}
	for _, r := range res {
		if r == nil {
			continue
		}
		if c.TypeValue == nil || str(r) == *c.TypeValue {
			return true, nil
		}
	}
	return false, nil
}

// PassesAlphaFilters reports whether every filter of alpha pod group member (group, member)
// holds on the pod (filters are ANDed; none means true).
func (c *Compiled) PassesAlphaFilters(ctx context.Context, group, member int, pod map[string]any) (bool, error) {
	for _, f := range c.AlphaFilters[group][member] {
		res, err := f.Eval(ctx, expr.Input{Pod: pod})
		if err != nil {
			return false, fmt.Errorf("spec.optimizationInstructions.gangScheduling.podGroups[%d].members[%d].filters: %w", group, member, err)
		}
		if !expr.Truthy(res) {
			return false, nil
		}
	}
	return true, nil
}

func podLabels(pod map[string]any) map[string]any {
	md, _ := pod["metadata"].(map[string]any)
	l, _ := md["labels"].(map[string]any)
	return l
}

// singleKey evaluates a key expression that must yield exactly one non-empty value (upstream's
// pod querier rule).
func singleKey(ctx context.Context, p expr.Program, in expr.Input) (string, error) {
	res, err := p.Eval(ctx, in)
	if err != nil {
		return "", err
	}
	if len(res) != 1 {
		return "", fmt.Errorf("expected a single value on the pod, got %d", len(res))
	}
	s := str(res[0])
	if s == "" {
		return "", fmt.Errorf("expected a non-empty value on the pod")
	}
	return s, nil
}

// podIndex reads the pod's index (Component.PodIndex): one whole number >= 0 (a number or a
// numeric string, as the operators write index labels). Errors name the field path.
func podIndex(ctx context.Context, comp *Component, prog expr.Program, name string, in expr.Input) (int64, error) {
	p := gangmapPath.Child("components").Key(comp.Name).Child(name)
	v, err := singleKey(ctx, prog, in)
	if err != nil {
		return 0, fmt.Errorf("%s (%s): %w", p, prog.Source(), err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s (%s): expected a whole number >= 0 on the pod, got %q", p, prog.Source(), v)
	}
	return n, nil
}

// ReplicaKeyOfPod reads the per-replica component's replica key (PerReplicaOf's
// podSelector.replicaSelector.keyPath) on a pod no component may claim, for the pods a plan
// places in no role: ok is false when the definition has no per-replica component with a key,
// or the key yields nothing or more than one value on the pod.
func (c *Compiled) ReplicaKeyOfPod(ctx context.Context, pod map[string]any) (key string, ok bool) {
	if c.PerReplicaOf == nil || c.PerReplicaOf.ReplicaKey == nil {
		return "", false
	}
	pod, _ = expr.Normalize(pod).(map[string]any)
	if err := expr.CheckInput(pod, c.limits); err != nil {
		return "", false
	}
	key, err := singleKey(ctx, c.PerReplicaOf.ReplicaKey, expr.Input{Pod: pod, Normalized: true})
	return key, err == nil
}
