package expr

import (
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
)

// celActivation binds a program's variables (object, pod, variables) for one evaluation.
//
// Interruption is cel-go's: ContextEval checks the context every InterruptCheckFrequency
// comprehension steps and (in the cel-go that go.mod pins, v0.31) remembers a positive answer, so
// an interrupted inner comprehension stops every enclosing one (TestCELTimeout holds it to that).
type celActivation struct {
	object, pod, variables any
	hasPod                 bool
}

// newCELActivation binds in for subject; nil maps are null, except variables, which is an empty
// map (its declared type is map(string, dyn)).
func newCELActivation(in Input, subject Subject) *celActivation {
	a := &celActivation{object: celMap(in.Object), variables: in.Variables}
	if in.Variables == nil {
		a.variables = map[string]any{}
	}
	if subject == Pod {
		a.pod, a.hasPod = celMap(in.Pod), true
	}
	return a
}

// celMap binds a nil map as CEL null rather than as an empty map.
func celMap(m map[string]any) any {
	if m == nil {
		return types.NullValue
	}
	return m
}

// ResolveName implements interpreter.Activation.
func (a *celActivation) ResolveName(name string) (any, bool) {
	switch name {
	case celObject:
		return a.object, true
	case celVariables:
		return a.variables, true
	case celPod:
		return a.pod, a.hasPod
	}
	return nil, false
}

// Parent implements interpreter.Activation: there is none.
func (a *celActivation) Parent() interpreter.Activation { return nil }
