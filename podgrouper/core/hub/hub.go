// Package hub decides, per top-owner kind, whether gangmap groups a pod: only kinds with no
// native KAI plugin (native wins) and an active Workload Map definition, or definitions none of
// which is usable (definitions.Registry.Unusable): gangmap then holds the kind's pods and reports
// the definition rather than leave them to be grouped one by one.
package hub

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/podgrouper/core/grouper"
	"github.com/gangmap/gangmap/podgrouper/core/native"
)

// Hub maps a top owner's kind to gangmap's grouper.
type Hub struct {
	Native   *native.Table
	Registry *definitions.Registry
	// Grouper is the grouper returned for kinds gangmap groups.
	Grouper grouper.Grouper
}

// Decision says why a kind is or is not gangmap's.
type Decision string

// The decisions of Hub.Decide.
const (
	// Grouped: the kind has no native KAI plugin and an active definition, or only unusable
	// ones (invalid, refused, in conflict), in which case its grouper fails each pod's decision
	// naming the definition's problem (workloadmap.ErrDefinitionUnusable).
	Grouped Decision = "Grouped"
	// Native: KAI groups the kind with a native plugin; gangmap leaves it alone.
	Native Decision = "Native"
	// NoDefinition: no active definition for the kind; KAI's default grouper handles it.
	NoDefinition Decision = "NoDefinition"
)

// Decide says whether gangmap groups pods whose top owner has kind gvk.
func (h *Hub) Decide(gvk schema.GroupVersionKind) Decision {
	switch {
	case h.Native.Has(gvk):
		return Native
	case h.Registry.Lookup(gvk) == nil && h.Registry.Unusable(gvk) == "":
		return NoDefinition
	default:
		return Grouped
	}
}

// GetPodGrouperPlugin returns gangmap's grouper for gvk, or nil when gangmap does not group the
// kind. The nil is a literal nil interface, never a nil pointer inside a non-nil interface (the
// KAI v0.17 Karta hub bug): callers may test the result with == nil.
func (h *Hub) GetPodGrouperPlugin(gvk schema.GroupVersionKind) grouper.Grouper {
	if h.Decide(gvk) != Grouped || h.Grouper == nil {
		return nil
	}
	return h.Grouper
}
