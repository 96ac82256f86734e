// Package bothgroupers tells the admin when KAI's own pod-grouper and gangmap both group a kind:
// a Karta in the cluster that KAI v0.17's Karta hub can see (definitions.Karta.KAIHubSees: its
// run.ai/karta-group, -version and -kind labels) covers a kind gangmap groups (no native KAI
// plugin, a definition gangmap uses). KAI's pod-grouper then groups, by its own reading of the
// Karta, every pod of that kind gangmap's admission webhook missed (no skip annotation on the pod
// or its owners), and its PodGroup can differ from gangmap's (KAI's Karta fallback counts and
// names differently on most real manifests). It is said once per Karta: a Warning Event on the
// Karta, a log line, the gauge gangmap_kinds_grouped_by_both, and in `gangmap definitions`.
package bothgroupers

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/definitions"
)

// Reason is the Event reason on the Karta.
const Reason = "KAIGroupsKindToo"

var kinds = promauto.With(metrics.Registry).NewGauge(prometheus.GaugeOpts{
	Name: "gangmap_kinds_grouped_by_both",
	Help: "Kinds gangmap groups for which a Karta in the cluster is visible to KAI's own Karta fallback (labels run.ai/karta-group, -version, -kind): KAI's pod-grouper groups the pods gangmap's webhook missed too.",
})

// Overlap is one Karta KAI's hub can see for a kind gangmap groups.
type Overlap struct {
	Karta string
	UID   string
	// Origin is the definition's origin in the registry (definitions.Loaded.Origin).
	Origin string
	Kind   schema.GroupVersionKind
}

// Message says what the overlap means, for the Event, the log and the CLI.
func (o Overlap) Message() string {
	return fmt.Sprintf("KAI's pod-grouper (v0.17+ Karta fallback) can see this Karta (labels %s, %s, %s) and groups %s pods too: "+
		"every pod gangmap's webhook missed (no kai.scheduler/skip-podgrouper on it or its owners) may be grouped by both, in PodGroups that differ; "+
		"gangmap marks the workloads it groups so KAI leaves their later pods. Remove the three labels to leave the kind to gangmap alone",
		definitions.KAIKartaGroupLabel, definitions.KAIKartaVersionLabel, definitions.KAIKartaKindLabel, o.Kind.Kind)
}

// Find lists the cluster definitions KAI's hub can see whose kind gangmap groups: grouped(gvk)
// says gangmap groups the kind (not native in KAI, with an active definition).
func Find(cluster []*definitions.Loaded, grouped func(schema.GroupVersionKind) bool) []Overlap {
	var out []Overlap
	for _, l := range cluster {
		gvk, ok := l.Karta.KAIHubSees()
		if !ok || !grouped(gvk) {
			continue
		}
		out = append(out, Overlap{Karta: l.Karta.Metadata.Name, UID: l.Karta.Metadata.UID, Origin: l.Origin, Kind: gvk})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Karta < out[j].Karta })
	return out
}

// Notifier checks the registry's cluster definitions after each change and reports each new
// overlap once.
type Notifier struct {
	Registry *definitions.Registry
	// Grouped says whether gangmap groups a kind.
	Grouped func(schema.GroupVersionKind) bool
	// KAIHasKartaFallback is false on a KAI release without the Karta fallback (before v0.17):
	// then nothing is reported.
	KAIHasKartaFallback bool
	Recorder            record.EventRecorder

	mu   sync.Mutex
	told map[string]bool
}

// Check reports the overlaps not reported yet and sets the gauge to the number of kinds
// concerned.
func (n *Notifier) Check(ctx context.Context) {
	if !n.KAIHasKartaFallback {
		kinds.Set(0)
		return
	}
	found := Find(n.Registry.Source(definitions.SourceCluster), n.Grouped)
	seen := map[schema.GroupVersionKind]bool{}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.told == nil {
		n.told = map[string]bool{}
	}
	for _, o := range found {
		seen[o.Kind] = true
		key := o.UID + "|" + o.Kind.String()
		if n.told[key] {
			continue
		}
		n.told[key] = true
		ctrl.LoggerFrom(ctx).Info("KAI's pod-grouper and gangmap both group a kind", "karta", o.Karta, "kind", o.Kind.String(), "why", o.Message())
		if n.Recorder != nil {
			k := &corev1.ObjectReference{APIVersion: definitions.APIVersion, Kind: definitions.Kind, Name: o.Karta, UID: types.UID(o.UID)}
			n.Recorder.Event(k, corev1.EventTypeWarning, Reason, o.Message())
		}
	}
	kinds.Set(float64(len(seen)))
}
