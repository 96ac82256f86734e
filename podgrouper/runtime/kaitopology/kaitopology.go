// Package kaitopology keeps the KAI Topology objects of the cluster (kai.scheduler/v1alpha1
// Topology, cluster scoped: KAI v0.17 pkg/apis/kai/v1alpha1/topology_types.go) in memory, so that
// the findings can say when a workload's topology constraint names a Topology that does not exist
// or a level it does not have. One informer reads each Topology once per change (its watch); a
// lookup is a map read, never an API call.
package kaitopology

import (
	"cmp"
	"context"
	"slices"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// GroupVersionResource is KAI's Topology API (KAI v0.17 pkg/apis/kai/v1alpha1
// groupversion_info.go GroupVersion; the CRD deployments/kai-scheduler/crds/
// kai.scheduler_topologies.yaml, plural topologies, scope Cluster).
var GroupVersionResource = schema.GroupVersionResource{Group: "kai.scheduler", Version: "v1alpha1", Resource: "topologies"}

// MaxLevels is KAI's bound on a Topology's levels (TopologySpec.Levels MaxItems=16).
const MaxLevels = 16

// Level is one level of a Topology: the node label whose values are its domains, and the optional
// alias a constraint may use in its place (TopologyLevel.NodeLabel and .Alias).
type Level struct {
	NodeLabel string `json:"nodeLabel"`
	Alias     string `json:"alias,omitempty"`
}

// Topology is a Topology's name and levels, top (widest) first as in its spec.
type Topology struct {
	Name   string
	Levels []Level
}

// HasLevel says whether level names one of the Topology's levels as KAI resolves a constraint's
// level: a level's node label or its alias (KAI v0.17 cluster_info.go buildAliasMapsByTopology
// and topology_info.go resolveAlias, then topology plugin job_filtering.go
// calculateRelevantDomainLevels, which refuses a level that is not one of the node labels).
func (t Topology) HasLevel(level string) bool {
	return level != "" && slices.ContainsFunc(t.Levels, func(l Level) bool { return level == l.NodeLabel || level == l.Alias })
}

// LevelNames renders the levels for a message: "zone, rack (alias r)".
func (t Topology) LevelNames() []string {
	out := make([]string, 0, len(t.Levels))
	for _, l := range t.Levels {
		if l.Alias != "" {
			out = append(out, l.NodeLabel+" (alias "+l.Alias+")")
			continue
		}
		out = append(out, l.NodeLabel)
	}
	return out
}

// Lookup is what the Watcher answers: the named Topology and whether it exists, once known.
type Lookup interface {
	// Topology returns the named Topology. found says it exists; known says the answer is
	// authoritative (the first list is done, or the API server does not serve the Topology API,
	// in which case no Topology exists). Until known, callers must not report a missing one.
	Topology(name string) (t Topology, found, known bool)
	// Served says whether the API server serves KAI's Topology API (false also until known).
	Served() bool
}

// snapshot is the Topologies at one time, never changed once stored.
type snapshot struct {
	served bool
	byName map[string]Topology
}

// Watcher watches every Topology and answers Lookup from memory. While the API server does not
// serve kai.scheduler/v1alpha1 it checks again every CRDPoll (KAI installs the CRD; a grouper may
// start first). It is a manager Runnable on every replica (the webhook's replicas need no
// Topologies, but the findings reporter runs on the leader, which may be any of them).
type Watcher struct {
	Dynamic   dynamic.Interface
	Discovery discovery.DiscoveryInterface
	// CRDPoll is how often a missing Topology API is looked for again (default 30s).
	CRDPoll time.Duration

	current atomic.Pointer[snapshot]
}

var _ manager.LeaderElectionRunnable = (*Watcher)(nil)

// Add adds a Watcher with clients of mgr's configuration (dynamic for the informer, discovery for
// the Topology API's presence) to mgr and returns it.
func Add(mgr manager.Manager) (*Watcher, error) {
	dyn, err := dynamic.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	w := &Watcher{Dynamic: dyn, Discovery: disc}
	return w, mgr.Add(w)
}

// Topology implements Lookup.
func (w *Watcher) Topology(name string) (Topology, bool, bool) {
	s := w.current.Load()
	if s == nil {
		return Topology{}, false, false
	}
	t, ok := s.byName[name]
	return t, ok, true
}

// Served implements Lookup.
func (w *Watcher) Served() bool {
	s := w.current.Load()
	return s != nil && s.served
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica keeps them.
func (w *Watcher) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable: it waits for the Topology API, then keeps the snapshot of
// every Topology current until ctx ends.
func (w *Watcher) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("kai-topologies")
	poll := cmp.Or(max(w.CRDPoll, 0), 30*time.Second) // unset or not positive: 30s
	if wait.PollUntilContextCancel(ctx, poll, true, func(ctx context.Context) (bool, error) { return w.apiServed(ctx), nil }) != nil {
		return nil // stopped
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(w.Dynamic, 0)
	inf := factory.ForResource(GroupVersionResource).Informer()
	changed := make(chan struct{}, 1)
	notify := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: notify, UpdateFunc: func(_, n any) { notify(n) }, DeleteFunc: notify}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil
	}
	for {
		w.current.Store(snapshotOf(inf.GetStore().List()))
		log.V(1).Info("KAI Topologies read", "topologies", len(w.current.Load().byName))
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// apiServed reports whether the API server serves KAI's Topology API; a NotFound answer stores an
// empty snapshot (known: no Topology exists), another error leaves the answer unknown.
func (w *Watcher) apiServed(ctx context.Context) bool {
	_, err := w.Discovery.ServerResourcesForGroupVersion(GroupVersionResource.GroupVersion().String())
	switch {
	case err == nil:
		return true
	case apierrors.IsNotFound(err):
		if w.current.Load() == nil {
			ctrl.LoggerFrom(ctx).Info("KAI's Topology API (kai.scheduler/v1alpha1) is not served: every named Topology is missing; checking again later")
			w.current.Store(&snapshot{byName: map[string]Topology{}})
		}
	default:
		ctrl.LoggerFrom(ctx).V(1).Info("Discovery of KAI's Topology API failed; checking again later", "error", err.Error())
	}
	return false
}

// snapshotOf reads the Topologies of an informer's store (unstructured objects; anything else is
// skipped). A Topology being deleted no longer counts (KAI's scheduler lists it until it is gone,
// but it is going). Levels past MaxLevels are dropped (the CRD refuses them).
func snapshotOf(items []any) *snapshot {
	s := &snapshot{served: true, byName: make(map[string]Topology, len(items))}
	for _, item := range items {
		u, ok := item.(*unstructured.Unstructured)
		if !ok || u.GetDeletionTimestamp() != nil {
			continue
		}
		t := FromUnstructured(u)
		s.byName[t.Name] = t
	}
	return s
}

// FromUnstructured reads a Topology object: its name and levels (nodeLabel, alias), at most
// MaxLevels (the CRD refuses more), levels without a node label skipped.
func FromUnstructured(u *unstructured.Unstructured) Topology {
	raw, _, _ := unstructured.NestedSlice(u.Object, "spec", "levels")
	t := Topology{Name: u.GetName()}
	for _, l := range raw {
		m, ok := l.(map[string]any)
		if !ok || len(t.Levels) == MaxLevels {
			continue
		}
		label, _ := m["nodeLabel"].(string)
		alias, _ := m["alias"].(string)
		if label != "" {
			t.Levels = append(t.Levels, Level{NodeLabel: label, Alias: alias})
		}
	}
	return t
}
