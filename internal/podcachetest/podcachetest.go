// Package podcachetest starts the grouper's pod cache (podcache.Cache) on client-go's fake
// source, for tests of the packages that read it (the pod controller, the stray collector). No
// binary imports it.
package podcachetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/gangmap/gangmap/podgrouper/runtime/podcache"
)

// SchedulerName is the scheduler of the cache Start returns: its pods name it.
const SchedulerName = "kai-scheduler"

// Start returns the pod cache, synced and holding pods, and the fake source that feeds it (a
// test adds, modifies and deletes pods through it). The cache stops when the test ends.
func Start(t testing.TB, pods ...*corev1.Pod) (*podcache.Cache, *fcache.FakeControllerSource) {
	t.Helper()
	src := fcache.NewFakeControllerSource()
	for _, p := range pods {
		src.Add(p)
	}
	c, err := podcache.NewWithListWatch(src, SchedulerName)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = c.Start(ctx) }()
	require.True(t, toolscache.WaitForCacheSync(ctx.Done(), c.HasSynced), "pod cache not synced")
	return c, src
}
