package gang_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gangmap/gangmap/gang"
)

// TestBuiltPlanKeepsNoTemplate checks that a built plan holds no role's resolved pod template
// (the plan cache keeps one plan per workload; the templates were half of a plan's memory) on
// every sample workload, and that a role's counts and GPUs, which the build takes from the
// template, are still there.
func TestBuiltPlanKeepsNoTemplate(t *testing.T) {
	r := registry(t)
	entries, err := os.ReadDir("testdata")
	require.NoError(t, err)
	planned, withGPUs := 0, 0
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		obj := load(t, e.Name())
		c := r.Lookup(obj.GroupVersionKind())
		if c == nil {
			continue
		}
		p, err := gang.Build(context.Background(), c, obj)
		if err != nil {
			continue // samples of refused plans are checked by their own tests
		}
		planned++
		require.Zero(t, gang.HeldTemplates(p), e.Name())
		if p.TotalGPUs > 0 {
			withGPUs++
		}
	}
	require.Greater(t, planned, 30)
	require.Greater(t, withGPUs, 10)
}
