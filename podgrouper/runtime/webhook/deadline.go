package webhook

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/gangmap/gangmap/podgrouper/core/decide"
)

// ErrDecisionTimeout is the error of a decision that did not finish within PodMutator.Timeout.
var ErrDecisionTimeout = fmt.Errorf("the decision did not finish in time")

// decideWithin runs the decision on its own goroutine and waits for it at most m.Timeout (none
// when zero), so the webhook answers within its timeout whatever the decision does: reads that
// ignore their context, or a plan that is still being built (the plan build goes on and is
// cached for the pod controller, which repairs the pod). A decision that panics is an error.
func (m *PodMutator) decideWithin(ctx context.Context, pod *corev1.Pod) (*decide.Decision, error) {
	if m.Timeout <= 0 {
		return m.Decider.DecideShared(ctx, pod)
	}
	ctx, cancel := context.WithTimeout(ctx, m.Timeout)
	defer cancel()
	type result struct {
		d   *decide.Decision
		err error
	}
	done := make(chan result, 1) // buffered: a late decision never blocks its goroutine
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("panic: %v", p)}
			}
		}()
		d, err := m.Decider.DecideShared(ctx, pod)
		done <- result{d, err}
	}()
	select {
	case r := <-done:
		return r.d, r.err
	case <-ctx.Done(): // at m.Timeout, or when the request's context ends first
		return nil, fmt.Errorf("%w (%v): %w", ErrDecisionTimeout, m.Timeout, ctx.Err())
	}
}
