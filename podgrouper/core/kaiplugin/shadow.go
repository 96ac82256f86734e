package kaiplugin

import (
	"fmt"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// Shadow mode inside KAI's pod-grouper (--gangmap-shadow): KAI's pod-grouper groups every pod as
// stock KAI with the same flags would (its native plugins, then, for every other kind, its hub's
// own answer: the default grouper, or its Karta fallback when --generic-karta-fallback is on), and
// gangmap decides beside it without any effect on the cluster: for a kind gangmap would group
// (Hub.Choose Gangmap), gangmap's grouper still plans the pod (its findings, workload metrics and
// decision metrics count it), Shadow.Compare tells the difference on the workload, and KAI is
// handed its own grouper's result. Pods are never held while the definitions load (Waiting): stock
// KAI would not hold them. It is how to try gangmap's definitions in place before letting them
// write.

// Gang is a PodGroup's gang as shadow mode compares it: its name, minMember (when it has no
// minSubGroup), minSubGroup and its sub-groups' minMembers.
type Gang struct {
	Name        string
	MinMember   int32
	MinSubGroup *int32
	SubGroups   []SubGroupGang
}

// SubGroupGang is one sub-group of a Gang.
type SubGroupGang struct {
	Name      string
	MinMember int32
}

// GangOf is md's Gang.
func GangOf(md *podgroup.Metadata) Gang {
	g := Gang{Name: md.Name, MinMember: md.MinAvailable, MinSubGroup: md.MinSubGroup}
	for _, sg := range md.SubGroups {
		g.SubGroups = append(g.SubGroups, SubGroupGang{Name: sg.Name, MinMember: sg.MinAvailable})
	}
	return g
}

// String is the gang in one phrase: "PodGroup pg-x (minMember 3)" or "PodGroup pg-x (minSubGroup
// 2: coordinator 1, worker 2)".
func (g Gang) String() string {
	if g.MinSubGroup == nil {
		return fmt.Sprintf("PodGroup %s (minMember %d)", g.Name, g.MinMember)
	}
	parts := make([]string, len(g.SubGroups))
	for i, sg := range g.SubGroups {
		parts[i] = fmt.Sprintf("%s %d", sg.Name, sg.MinMember)
	}
	return fmt.Sprintf("PodGroup %s (minSubGroup %d: %s)", g.Name, *g.MinSubGroup, strings.Join(parts, ", "))
}

// Shadow outcomes, the outcome label of gangmap_kai_plugin_shadow_total.
const (
	ShadowSame         = "Same"
	ShadowDifferent    = "Different"
	ShadowGangmapError = "GangmapError"
	ShadowNoPodGroup   = "GangmapNoPodGroup"
)

// maxShadowTold bounds the workloads Shadow remembers telling (then it forgets them all and may
// tell each once more).
const maxShadowTold = 10000

// Shadow tells, in shadow mode, what gangmap would have grouped beside what KAI's grouper did:
// a DryRunPodGroup Event (podgroup.ReasonWouldWrite, as the standalone grouper's --dry-run) on
// the workload when they differ, once per workload and difference, and the counter
// gangmap_kai_plugin_shadow_total per pod. Safe for concurrent use.
type Shadow struct {
	Recorder record.EventRecorder

	mu   sync.Mutex
	told map[types.UID]string
}

// Compare records one pod's two answers: gangmap's (gm, nil when gangmap places the pod in no
// PodGroup; gmErr its error) and KAI's grouper's (its name and the gang it returned, nil for
// none). It returns the outcome.
func (s *Shadow) Compare(owner *unstructured.Unstructured, pod *corev1.Pod, gm *Gang, gmErr error, kaiGrouper string, kai *Gang) string {
	kaiSays := "no PodGroup"
	if kai != nil {
		kaiSays = kai.String()
	}
	var outcome, msg string
	switch {
	case gmErr != nil:
		outcome, msg = ShadowGangmapError, fmt.Sprintf("shadow mode: gangmap could not group pod %s: %v; KAI's grouper %q gave %s", pod.Name, gmErr, kaiGrouper, kaiSays)
	case gm == nil:
		outcome, msg = ShadowNoPodGroup, fmt.Sprintf("shadow mode: gangmap would put pod %s in no PodGroup; KAI's grouper %q gave %s", pod.Name, kaiGrouper, kaiSays)
	case kai != nil && gm.String() == kai.String():
		outcome = ShadowSame
	default:
		outcome, msg = ShadowDifferent, fmt.Sprintf("shadow mode: gangmap would write %s; KAI's grouper %q wrote %s", gm.String(), kaiGrouper, kaiSays)
	}
	shadowOutcomes.WithLabelValues(outcome).Inc()
	if msg != "" && s.Recorder != nil && s.firstTelling(owner.GetUID(), outcome+" "+trimPod(msg, pod.Name)) {
		s.Recorder.Event(owner, corev1.EventTypeNormal, podgroup.ReasonWouldWrite, msg)
	}
	return outcome
}

// trimPod is msg without the pod's name, so that one difference of a workload's many pods is told
// once.
func trimPod(msg, pod string) string { return strings.ReplaceAll(msg, "pod "+pod, "pod") }

// firstTelling reports whether this is the first time what is told of the workload.
func (s *Shadow) firstTelling(uid types.UID, what string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.told == nil || len(s.told) >= maxShadowTold {
		s.told = map[types.UID]string{}
	}
	if s.told[uid] == what {
		return false
	}
	s.told[uid] = what
	return true
}

var shadowOutcomes = withSeries(promauto.With(metrics.Registry).NewCounterVec(prometheus.CounterOpts{
	Name: "gangmap_kai_plugin_shadow_total",
	Help: "Shadow mode (--gangmap-shadow): pods of a kind gangmap would group, by how gangmap's PodGroup compares with the one KAI's own grouper gave and KAI wrote: Same, Different, GangmapNoPodGroup, GangmapError.",
}, []string{"outcome"}), ShadowSame, ShadowDifferent, ShadowGangmapError, ShadowNoPodGroup)
