package expr

import (
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
)

// celInterruptName is the variable cel-go's interruptible comprehensions read after each step to
// learn whether to stop (cel-go's own context activation answers it the same way).
const celInterruptName = "#interrupted"

// celActivation binds a program's variables for one evaluation and answers the interruption
// check from the evaluation context's done channel.
//
// cel-go's ContextEval checks the channel every InterruptCheckFrequency steps with one counter
// shared by all comprehensions, and forgets a positive answer: after an inner comprehension stops,
// the outer one runs on, building and abandoning a new inner one per step, so an evaluation could
// overrun its timeout by seconds. Here the first positive answer sticks, and every enclosing
// comprehension stops at its next step.
type celActivation struct {
	object, pod, variables any
	hasPod                 bool
	done                   <-chan struct{}
	checks                 uint
	interrupted            bool
}

// newCELActivation binds in for subject; nil maps are null, except variables, which is an empty
// map (its declared type is map(string, dyn)).
func newCELActivation(in Input, subject Subject, done <-chan struct{}) *celActivation {
	a := &celActivation{object: celMap(in.Object), variables: in.Variables, done: done}
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
	case celInterruptName:
		return a.interrupt()
	}
	return nil, false
}

// Parent implements interpreter.Activation: there is none.
func (a *celActivation) Parent() interpreter.Activation { return nil }

// interrupt reports (true, true) once the context is done; it looks at the channel every
// celInterruptCheckFrequency calls and remembers a positive answer.
func (a *celActivation) interrupt() (any, bool) {
	if !a.interrupted {
		a.checks++
		if a.checks%celInterruptCheckFrequency != 0 {
			return nil, false
		}
		select {
		case <-a.done:
			a.interrupted = true
		default:
			return nil, false
		}
	}
	return true, true
}
