//go:build kind

package kind

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv("KUBECONFIG") == "" {
		fmt.Fprintln(os.Stderr, "e2e/kind: KUBECONFIG is not set. Run `make e2e-kind` (hack/e2e-kind.sh): it creates the kind "+
			"cluster, installs KAI Scheduler and gangmap's chart, and runs this test against it.")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestGangsAllOrNothingOnKAI runs gangmap's chain with the real KAI Scheduler: a CustomJob (a
// kind no KAI version knows) gets one PodGroup from gangmap; KAI binds all of its pods when the
// GPUs for the whole gang exist, none while one pod's GPUs are missing, and all once they are
// added; KAI's own pod-grouper never makes a second PodGroup.
func TestGangsAllOrNothingOnKAI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	e := connect(t)
	t.Cleanup(func() {
		if t.Failed() {
			e.dump(t)
		}
	})
	e.setup(t, ctx)

	t.Run("capacity for the whole gang: all pods scheduled", func(t *testing.T) {
		e.setGPUs(t, ctx, 5)
		g := e.createGang(t, ctx, "whole")
		e.waitAllScheduled(t, ctx, g, 3*time.Minute)
		e.assertOnePodGroup(t, ctx, g)
		time.Sleep(10 * time.Second) // KAI's pod-grouper had time to act on the running pods
		e.assertOnePodGroup(t, ctx, g)
		e.deleteGang(t, ctx, g)
	})
	if t.Failed() {
		return
	}

	g := (*gang)(nil)
	t.Run("capacity for all but one pod: none bound", func(t *testing.T) {
		e.setGPUs(t, ctx, 3) // the coordinator (1) and one worker (2) would fit; the other worker not
		g = e.createGang(t, ctx, "partial")
		e.assertOnePodGroup(t, ctx, g)
		e.assertNoneBound(t, ctx, g, 45*time.Second)
	})
	if g == nil || t.Failed() {
		return
	}
	t.Run("capacity added: all pods scheduled", func(t *testing.T) {
		e.setGPUs(t, ctx, 5)
		e.waitAllScheduled(t, ctx, g, 3*time.Minute)
		e.assertOnePodGroup(t, ctx, g)
	})
	t.Run("cleanup", func(t *testing.T) {
		e.deleteGang(t, ctx, g)
		if err := ctx.Err(); errors.Is(err, context.DeadlineExceeded) {
			t.Fatal("the e2e ran out of time")
		}
	})
}
