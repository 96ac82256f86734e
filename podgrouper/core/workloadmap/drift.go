package workloadmap

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
)

// ReasonPathMiss is the reason of the Warning Event on a cluster Karta whose path resolved to
// nothing on a live workload of its kind.
const ReasonPathMiss = "DefinitionPathMiss"

// PathMissesTotal counts, by definition and definition field path, the paths that resolved to
// nothing on a live workload: drift between a definition and the framework it describes (a
// renamed field, a typo). It is incremented once per plan build (a workload's plan is rebuilt
// when the workload or the definition changes), never per pod.
var PathMissesTotal = promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
	Name: "gangmap_definition_path_misses_total",
	Help: "Definition paths that resolved to nothing on a live workload, counted once per plan build, by definition and path.",
}, []string{"definition", "path"})

// driftReporter reports path misses: the metric for every definition, and a Warning Event on
// the Karta for a definition from the cluster, once per definition version, workload and path.
// It also remembers the refused overrides reported (Grouper.reportOverrides).
type driftReporter struct {
	once     sync.Once
	reported *lru.Cache
}

// reportedSize bounds the remembered (definition version, workload, path) triples and refused
// overrides (workload version, annotation, value).
const reportedSize = 4096

// seen reports whether key was reported before, remembering it otherwise.
func (d *driftReporter) seen(key string) bool {
	d.once.Do(func() { d.reported = lru.New(reportedSize) })
	if _, ok := d.reported.Get(key); ok {
		return true
	}
	d.reported.Add(key, struct{}{})
	return false
}

// reportMisses counts and reports the misses of a freshly built plan of topOwner.
func (g *Grouper) reportMisses(c *definitions.Compiled, topOwner *unstructured.Unstructured, plan *gang.Plan) {
	misses := plan.Misses
	for _, m := range misses {
		PathMissesTotal.WithLabelValues(c.Name(), m.Path).Inc()
	}
	if len(misses) == 0 || g.Recorder == nil || c.Loaded == nil || c.Loaded.Source != definitions.SourceCluster {
		return
	}
	md := c.Loaded.Karta.Metadata
	karta := &corev1.ObjectReference{APIVersion: definitions.APIVersion, Kind: definitions.Kind, Name: md.Name, UID: types.UID(md.UID)}
	for _, m := range misses {
		key := fmt.Sprintf("%s|%s|%s|%s", md.UID, md.ResourceVersion, topOwner.GetUID(), m.Path)
		if g.drift.seen(key) {
			continue
		}
		g.Recorder.Eventf(karta, corev1.EventTypeWarning, ReasonPathMiss,
			"%s (%s) resolved to nothing on %s %s/%s: the framework may have renamed the field, or the definition has a typo",
			m.Path, m.Expression, topOwner.GetKind(), topOwner.GetNamespace(), topOwner.GetName())
	}
}
