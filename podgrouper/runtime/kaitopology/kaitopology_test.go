package kaitopology

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// topology is a Topology object as KAI's docs/topology write it (kai.scheduler/v1alpha1, spec
// levels of nodeLabel and an optional alias).
func topology(name string, levels ...map[string]any) *unstructured.Unstructured {
	items := make([]any, len(levels))
	for i, l := range levels {
		items[i] = l
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"levels": items}}}
	return u
}

// The Watcher knows nothing before its first list, then every Topology with its levels (node
// label and alias, in spec order), and follows a change (a Topology deleted) from its watch.
func TestWatcherFollowsTheTopologies(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{GroupVersionResource: "TopologyList"},
		topology("cluster-topology", map[string]any{"nodeLabel": "topology.kubernetes.io/zone", "alias": "zone"}, map[string]any{"nodeLabel": "kai.scheduler/rack"}))
	disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "kai.scheduler/v1alpha1", APIResources: []metav1.APIResource{{Name: "topologies", Kind: "Topology"}}}}
	w := &Watcher{Dynamic: dyn, Discovery: disc}
	_, _, known := w.Topology("cluster-topology")
	require.False(t, known)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	require.Eventually(t, func() bool { _, _, k := w.Topology("x"); return k }, 10*time.Second, 10*time.Millisecond)
	tp, found, _ := w.Topology("cluster-topology")
	require.True(t, found)
	require.True(t, w.Served())
	require.Equal(t, []Level{{NodeLabel: "topology.kubernetes.io/zone", Alias: "zone"}, {NodeLabel: "kai.scheduler/rack"}}, tp.Levels)
	require.True(t, tp.HasLevel("zone"))
	require.True(t, tp.HasLevel("topology.kubernetes.io/zone"))
	require.True(t, tp.HasLevel("kai.scheduler/rack"))
	require.False(t, tp.HasLevel("rack"))
	require.False(t, tp.HasLevel(""))
	require.Equal(t, []string{"topology.kubernetes.io/zone (alias zone)", "kai.scheduler/rack"}, tp.LevelNames())
	_, found, _ = w.Topology("other")
	require.False(t, found)

	require.NoError(t, dyn.Resource(GroupVersionResource).Delete(ctx, "cluster-topology", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { _, f, _ := w.Topology("cluster-topology"); return !f }, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}

// While the API server does not serve kai.scheduler/v1alpha1 (discovery NotFound), every
// Topology is known missing and the API not served.
func TestWatcherWithoutTheTopologyAPI(t *testing.T) {
	disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	w := &Watcher{Discovery: disc, CRDPoll: 10 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	require.Eventually(t, func() bool { _, _, k := w.Topology("x"); return k }, 10*time.Second, 10*time.Millisecond)
	_, found, _ := w.Topology("cluster-topology")
	require.False(t, found)
	require.False(t, w.Served())
	cancel()
	require.NoError(t, <-done)
}

// A Topology's levels past KAI's 16 are dropped, as are levels without a node label; a
// Topology being deleted is gone.
func TestSnapshotBounds(t *testing.T) {
	var levels []map[string]any
	for i := range 20 {
		levels = append(levels, map[string]any{"nodeLabel": "l" + string(rune('a'+i))})
	}
	levels[0] = map[string]any{"alias": "no-label"}
	deleting := topology("going")
	deleting.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	s := snapshotOf([]any{topology("wide", levels...), deleting, "not an object"})
	require.Len(t, s.byName, 1)
	require.Len(t, s.byName["wide"].Levels, MaxLevels)
	require.Equal(t, "lb", s.byName["wide"].Levels[0].NodeLabel)
}
