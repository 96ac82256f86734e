// Package kaiplugin is gangmap inside KAI Scheduler's own pod-grouper: the decision KAI's plugin
// hub makes per top-owner kind (Hub.Choose) and the grouper it hands KAI for the kinds gangmap
// groups (Grouper.Metadata), on gangmap's copy of KAI's types. The nested module kaipodgrouper/
// (which may import KAI's module) only binds them to KAI's pluginshub.PluginsHub,
// grouper.Grouper and podgroup.Metadata, and builds the gangmap-kai-podgrouper binary: KAI's
// pod-grouper application (cmd/podgrouper/app, v0.17) with this hub registered
// (App.RegisterPlugins) and KAI's own Karta fallback off.
//
// Inside KAI there is one pod-grouper, so none of the standalone grouper's coexistence machinery
// (workload marks, strict mode, repair, stray collection) applies: KAI's pod controller
// (pkg/podgrouper/pod_controller.go Reconcile) walks the owners, asks the hub, writes the
// PodGroup (podgroup/handler.go ApplyToCluster) and labels the pod. podgrouper/runtime/inkai
// builds the hub and grouper on KAI's manager (inkai.Setup).
package kaiplugin

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/definitions"
)

// Choice is the grouper KAI's pod-grouper uses for pods whose top owner has a given kind.
type Choice string

// The choices of Hub.Choose, the choice label of gangmap_kai_plugin_choices_total.
const (
	// Native: KAI has a plugin of its own for the kind (an exact or wildcard-version entry of
	// its hub's table, DefaultPluginsHub.HasMatchingPlugin): native wins, whatever definitions
	// say.
	Native Choice = "Native"
	// Gangmap: no native plugin, and an active definition for the kind (a cluster Karta, a file
	// or the built-in catalog, in that order of precedence): gangmap's grouper.
	Gangmap Choice = "Gangmap"
	// Default: no native plugin and no active definition: KAI's default grouper (one PodGroup
	// pg-<top owner name>-<uid>, minMember 1), as stock KAI v0.17 with --generic-karta-fallback=false.
	Default Choice = "Default"
	// Waiting: no native plugin, and gangmap's definition sources have not loaded yet since the
	// start (Hub.Sources), so the kind's definition may be a Karta not read yet. Grouping now by
	// the default grouper could admit a gang's first pods alone (minMember 1) while the
	// pod-grouper restarts; the pod waits instead: its grouper returns ErrDefinitionsLoading and
	// KAI's pod controller retries it with backoff (1 s, doubling, at most 1 min).
	Waiting Choice = "Waiting"
)

// ErrDefinitionsLoading is the error of a pod whose top owner's kind is not native while
// gangmap's definition sources have not loaded yet (Choice Waiting). KAI's pod controller turns it
// into a PodGrouperWarning Event on the pod and a retry.
var ErrDefinitionsLoading = errors.New("gangmap's workload definitions (cluster Kartas, files) are still loading after the pod-grouper's start; the pod is grouped once they are, never before by KAI's default grouper")

// NativePlugins says whether KAI's pod-grouper has a native plugin for a kind. KAI's
// *pluginshub.DefaultPluginsHub (v0.10+) satisfies it: HasMatchingPlugin checks the exact kind,
// then the kind with version "*" (pkg/podgrouper/podgrouper/hub/hub.go getRegularPlugin), and
// never the Karta fallback.
type NativePlugins interface {
	HasMatchingPlugin(gvk metav1.GroupVersionKind) bool
}

// SyncedSource is a definition source that loads after the start: sources.Files and
// sources.Cluster.
type SyncedSource interface {
	Synced() bool
}

// Hub decides, per top-owner kind, which grouper KAI's pod-grouper uses. It is safe for
// concurrent use (KAI reconciles pods in parallel, --max-concurrent-reconciles).
type Hub struct {
	// Native is KAI's table of native plugins.
	Native NativePlugins
	// Registry holds gangmap's definitions (all sources).
	Registry *definitions.Registry
	// Sources are the definition sources that load after the start; until every one has synced
	// once, a kind without a native plugin is Waiting. The built-in catalog is in the registry
	// before the start and needs no entry.
	Sources []SyncedSource

	ready atomic.Bool
}

// Choose returns the grouper for pods whose top owner has kind gvk (KAI passes the top owner's
// GroupVersionKind as read). Order: native wins; then Waiting until the sources synced; then an
// active definition, or only unusable ones (definitions.Registry.Unusable); else KAI's default
// grouper.
func (h *Hub) Choose(gvk metav1.GroupVersionKind) Choice {
	c := h.choose(gvk)
	choices.WithLabelValues(string(c)).Inc()
	return c
}

func (h *Hub) choose(gvk metav1.GroupVersionKind) Choice {
	switch {
	case h.Native != nil && h.Native.HasMatchingPlugin(gvk):
		return Native
	case !h.Ready():
		return Waiting
	case h.Registry != nil && (h.Registry.Lookup(schema.GroupVersionKind(gvk)) != nil || h.Registry.Unusable(schema.GroupVersionKind(gvk)) != ""):
		// Unusable definitions too: gangmap's grouper fails the pod naming the problem, so that
		// KAI's reconciler retries and the pod waits ungrouped instead of getting KAI's default
		// PodGroup of one pod.
		return Gangmap
	default:
		return Default
	}
}

// Ready reports whether every source in Sources has synced once. It stays true once it is.
func (h *Hub) Ready() bool {
	if !h.ready.Load() && !slices.ContainsFunc(h.Sources, func(s SyncedSource) bool { return !s.Synced() }) {
		h.ready.Store(true)
	}
	return h.ready.Load()
}

var choices = withSeries(promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
	Name: "gangmap_kai_plugin_choices_total",
	Help: "Pods KAI's pod-grouper asked gangmap's plugin hub about, by the grouper chosen for the top owner's kind: Native (KAI's own plugin), Gangmap (an active definition), Default (KAI's default grouper), Waiting (definitions still loading after the start; retried).",
}, []string{"choice"}), string(Native), string(Gangmap), string(Default), string(Waiting))

// withSeries makes vec's series of the label values at zero, so that they are exported before
// their first count, and returns vec.
func withSeries(vec *prometheus.CounterVec, values ...string) *prometheus.CounterVec {
	for _, v := range values {
		vec.WithLabelValues(v)
	}
	return vec
}

// ErrOwnerUnreadable is the error of a pod KAI's pod controller would group by an owner short of
// its top owner: see Hub.UnreadOwner.
var ErrOwnerUnreadable = errors.New("the pod-grouper may not read the pod's owner")

// UnreadOwner returns an error (wrapping ErrOwnerUnreadable) when the top owner KAI's pod
// controller passes has an owner reference itself and that owner's kind is one gangmap groups
// (Choose would say Gangmap, or Waiting), else nil. KAI's owner walk
// (pkg/podgrouper/podgrouper/podgrouper.go getResourceOwners, handleGetOwnerError) stops only at
// an object without owners, except when reading the next owner is Forbidden: it then returns the
// last owner it could read, or the pod itself, as the top owner, and the pod would be grouped by
// that kind's native plugin (a Pod or a batch Job: a PodGroup of its own, minMember 1) and
// admitted outside its gang. gangmap refuses the pod instead: KAI records the error as a
// PodGrouperWarning Event on the pod and retries it with backoff, until the pod-grouper is given
// get on the kind (deploy/kai-podgrouper/rbac.yaml). Only the first unread owner is looked at.
func (h *Hub) UnreadOwner(topOwner *unstructured.Unstructured) error {
	refs := topOwner.GetOwnerReferences()
	if len(refs) == 0 {
		return nil
	}
	gv, err := schema.ParseGroupVersion(refs[0].APIVersion)
	if err != nil {
		return nil
	}
	gvk := metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: refs[0].Kind}
	if c := h.choose(gvk); c != Gangmap && c != Waiting {
		return nil
	}
	unreadOwners.Inc()
	return fmt.Errorf("gangmap: %w: %s %s %s is owned by %s %s, a kind gangmap groups, which KAI's pod-grouper may not get (Forbidden); grouped by %s alone it would be admitted outside its gang: grant the pod-grouper's ServiceAccount get, list and watch on %s (deploy/kai-podgrouper/rbac.yaml)",
		ErrOwnerUnreadable, topOwner.GetKind(), topOwner.GetNamespace(), topOwner.GetName(), refs[0].Kind, refs[0].Name, topOwner.GetKind(), schema.GroupKind{Group: gv.Group, Kind: refs[0].Kind})
}

var unreadOwners = promauto.With(metrics.Registry).NewCounter(prometheus.CounterOpts{
	Name: "gangmap_kai_plugin_unread_owners_total",
	Help: "Pods refused (retried by KAI) because KAI's pod-grouper may not read an owner of a kind gangmap groups, so KAI would have grouped them by a lower owner or the pod alone (Hub.UnreadOwner).",
})
