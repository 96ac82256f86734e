// Package kaihub binds gangmap's plugin hub (github.com/gangmap/gangmap/podgrouper/core/kaiplugin) to
// KAI Scheduler's pod-grouper types, release v0.17.0: PluginsHub is a
// pkg/podgrouper/podgrouper/hub PluginsHub, Grouper a plugins/grouper Grouper, and ToKAI turns
// gangmap's metadata into KAI's pkg/podgrouper/podgroup Metadata. Every decision is made in the
// main module (kaiplugin.Hub.Choose, kaiplugin.Grouper.Metadata); this package only maps it.
package kaihub

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kaipodgroup "github.com/kai-scheduler/KAI-scheduler/pkg/podgrouper/podgroup"
	pluginshub "github.com/kai-scheduler/KAI-scheduler/pkg/podgrouper/podgrouper/hub"
	"github.com/kai-scheduler/KAI-scheduler/pkg/podgrouper/podgrouper/plugins/grouper"

	"github.com/gangmap/gangmap/podgrouper/core/kaiplugin"
)

// KAINatives is what PluginsHub needs of KAI's own hub: its native plugins, their table and its
// default grouper. *pluginshub.DefaultPluginsHub satisfies it.
type KAINatives interface {
	pluginshub.PluginsHub
	kaiplugin.NativePlugins
	GetDefaultPlugin() grouper.Grouper
}

var _ KAINatives = (*pluginshub.DefaultPluginsHub)(nil)

// PluginsHub is KAI's plugin hub with gangmap as the fallback for kinds KAI has no plugin for.
type PluginsHub struct {
	// KAI is KAI's own hub (app.App.DefaultPluginsHub), built with --generic-karta-fallback=false.
	KAI KAINatives
	// Hub decides per kind; its Native is KAI.
	Hub *kaiplugin.Hub
	// Grouper is gangmap's grouper for the kinds Hub gives to gangmap.
	Grouper *Grouper
}

var _ pluginshub.PluginsHub = (*PluginsHub)(nil)

// New returns the hub: KAI's native plugins first, gangmap's grouper for kinds with an active
// definition, KAI's default grouper otherwise (kaiplugin.Hub.Choose).
func New(kai KAINatives, hub *kaiplugin.Hub, g *kaiplugin.Grouper) *PluginsHub {
	return &PluginsHub{KAI: kai, Hub: hub, Grouper: &Grouper{Gangmap: g}}
}

// GetPodGrouperPlugin implements pluginshub.PluginsHub. It never returns nil: KAI's pod
// controller calls Name on the result before anything else (podgrouper.go GetPGMetadata), and a
// nil pointer in a non-nil interface (KAI v0.17's Karta hub bug) is never returned either.
//
// A native kind's plugin is behind a guard that refuses a pod KAI's owner walk stopped short of a
// workload of a kind gangmap groups (kaiplugin.Hub.UnreadOwner: RBAC missing on that kind).
//
// In shadow mode (kaiplugin.Shadow) every kind gets stock KAI's answer (h.KAI.GetPodGrouperPlugin:
// its native plugin, its default grouper, or its Karta fallback when that is on; no guard), and a
// kind gangmap would group gets it through a shadow grouper that asks gangmap first and reports
// the difference.
func (h *PluginsHub) GetPodGrouperPlugin(gvk metav1.GroupVersionKind) grouper.Grouper {
	choice := h.Hub.Choose(gvk)
	if h.Grouper.Gangmap.Shadow != nil {
		stock := h.KAI.GetPodGrouperPlugin(gvk)
		if choice == kaiplugin.Gangmap {
			return &shadowGrouper{gangmap: h.Grouper, kai: stock}
		}
		return stock
	}
	switch choice {
	case kaiplugin.Native:
		return &ownerGuard{kai: h.KAI.GetPodGrouperPlugin(gvk), hub: h.Hub}
	case kaiplugin.Gangmap:
		return h.Grouper
	case kaiplugin.Waiting:
		return waiting{}
	default:
		return h.KAI.GetDefaultPlugin()
	}
}

// Grouper is gangmap's grouper as a KAI grouper.Grouper.
type Grouper struct {
	Gangmap *kaiplugin.Grouper
}

var _ grouper.Grouper = (*Grouper)(nil)

// Name implements grouper.Grouper.
func (g *Grouper) Name() string { return "gangmap" }

// GetPodGroupMetadata implements grouper.Grouper: gangmap's decision (bounded by its timeout),
// in KAI's type. A nil result without an error leaves the pod alone, as KAI's contract says.
func (g *Grouper) GetPodGroupMetadata(topOwner *unstructured.Unstructured, pod *v1.Pod, otherOwners ...*metav1.PartialObjectMetadata) (*kaipodgroup.Metadata, error) {
	md, err := g.Gangmap.Metadata(topOwner, pod, otherOwners...)
	if err != nil || md == nil {
		return nil, err
	}
	return ToKAI(md), nil
}

// waiting is the grouper of a kind chosen Waiting: every pod fails with
// kaiplugin.ErrDefinitionsLoading, so KAI's pod controller records a PodGrouperWarning Event and
// retries the pod with backoff instead of grouping it by its default grouper.
type waiting struct{}

func (waiting) Name() string { return "gangmap-waiting-for-definitions" }

func (waiting) GetPodGroupMetadata(*unstructured.Unstructured, *v1.Pod, ...*metav1.PartialObjectMetadata) (*kaipodgroup.Metadata, error) {
	return nil, kaiplugin.ErrDefinitionsLoading
}

// shadowGrouper is, in shadow mode, the grouper of a kind gangmap would group: it asks gangmap's
// grouper (its findings and metrics count the pod), then stock KAI's grouper for the kind, tells
// the difference (kaiplugin.Shadow.Compare) and returns KAI's answer.
type shadowGrouper struct {
	gangmap *Grouper
	kai     grouper.Grouper
}

var _ grouper.Grouper = (*shadowGrouper)(nil)

// Name implements grouper.Grouper: the name of KAI's grouper, whose answer is returned.
func (s *shadowGrouper) Name() string { return s.kai.Name() }

// GetPodGroupMetadata implements grouper.Grouper: KAI's grouper's metadata and error, after
// gangmap's decision is compared with it.
func (s *shadowGrouper) GetPodGroupMetadata(topOwner *unstructured.Unstructured, pod *v1.Pod, otherOwners ...*metav1.PartialObjectMetadata) (*kaipodgroup.Metadata, error) {
	gm, gmErr := s.gangmap.Gangmap.Metadata(topOwner, pod, otherOwners...)
	md, err := s.kai.GetPodGroupMetadata(topOwner, pod, otherOwners...)
	if err != nil {
		return nil, err
	}
	var gmGang, kaiGang *kaiplugin.Gang
	if gm != nil {
		g := kaiplugin.GangOf(gm)
		gmGang = &g
	}
	if md != nil {
		g := GangOf(md)
		kaiGang = &g
	}
	s.gangmap.Gangmap.Shadow.Compare(topOwner, pod, gmGang, gmErr, s.kai.Name(), kaiGang)
	return md, nil
}

// GangOf is KAI's metadata's gang, as kaiplugin.GangOf gives gangmap's.
func GangOf(md *kaipodgroup.Metadata) kaiplugin.Gang {
	g := kaiplugin.Gang{Name: md.Name, MinMember: md.MinAvailable, MinSubGroup: md.MinSubGroup}
	for _, sg := range md.SubGroups {
		g.SubGroups = append(g.SubGroups, kaiplugin.SubGroupGang{Name: sg.Name, MinMember: sg.MinAvailable})
	}
	return g
}

// ownerGuard is KAI's native plugin for a kind, refusing a pod whose top owner as KAI read it
// is owned by a kind gangmap groups that the pod-grouper may not read (kaiplugin.Hub.UnreadOwner):
// KAI's walk stopped short of the workload, and its plugin would group the pod apart from its gang.
type ownerGuard struct {
	kai grouper.Grouper
	hub *kaiplugin.Hub
}

var _ grouper.Grouper = (*ownerGuard)(nil)

// Name implements grouper.Grouper: KAI's plugin's name.
func (g *ownerGuard) Name() string { return g.kai.Name() }

// GetPodGroupMetadata implements grouper.Grouper.
func (g *ownerGuard) GetPodGroupMetadata(topOwner *unstructured.Unstructured, pod *v1.Pod, otherOwners ...*metav1.PartialObjectMetadata) (*kaipodgroup.Metadata, error) {
	if topOwner != nil {
		if err := g.hub.UnreadOwner(topOwner); err != nil {
			return nil, err
		}
	}
	return g.kai.GetPodGroupMetadata(topOwner, pod, otherOwners...)
}
