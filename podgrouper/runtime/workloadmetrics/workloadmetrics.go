// Package workloadmetrics exports the workloads gangmap groups as Prometheus series, in the style
// of kube-state-metrics: one set of series per grouped workload (its status from the definition's
// status mapping, GPUs per workload and role, desired and gang minimum, live pods per role and
// phase, and the conditions KAI wrote on its PodGroups), generated at scrape time from what the
// pod controller last saw. The number of workloads is capped (Tracker.MaxWorkloads); a workload
// beyond the cap gets no series, and gangmap_workload_metrics_dropped_total and a log line say so.
//
// The figures come from the workload's gang plan (gang.Plan: Roles, TotalGPUs, GangGPUs, Status),
// the same values `gangmap get` and `gangmap describe` print.
package workloadmetrics

import (
	"cmp"
	"errors"
	"math"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
	"github.com/gangmap/gangmap/podgrouper/runtime/podbook"
)

// Registered registers t with controller-runtime's registry (the one the manager's metrics
// endpoint serves) unless a Tracker already is, and returns the registered Tracker (t or the
// first one): a second grouper built in the same process (tests) shares the first one's, since
// the registry can serve one set of gangmap_workload_* series.
func Registered(t *Tracker) *Tracker {
	var dup prometheus.AlreadyRegisteredError
	if err := crmetrics.Registry.Register(t); errors.As(err, &dup) {
		return dup.ExistingCollector.(*Tracker)
	} else if err != nil {
		panic(err)
	}
	return t
}

// Workload is what the series of one grouped workload show.
type Workload struct {
	UID       types.UID
	Namespace string
	// Kind is the workload's group and kind as Kind.group (JobSet.jobset.x-k8s.io).
	Kind string
	Name string
	// Status is the matched words of the common status vocabulary (see gang.Plan.Status).
	Status []string
	// GPUs is the desired GPUs (every pod of every role); GangGPUs what the gang minimum needs.
	// Both in devices, fractions as decimals.
	GPUs, GangGPUs float64
	Roles          []Role
	// PodGroups are the names of the workload's planned PodGroups (in its namespace).
	PodGroups []string
	// TopologyIssues counts the topology and segment requests the plan could not honour
	// (gang.Plan.TopologyIssues).
	TopologyIssues int32
}

// Role is one role of a workload with its GPUs (devices; fractions as decimals).
type Role struct {
	Name           string
	GPUs, GangGPUs float64
	// Segments is the number of segment sub-groups the plan writes for the role
	// (kai.scheduler/segment-size; over all its PodGroups), 0 when it is not segmented.
	Segments int32
}

// FromPlan is the Workload of a plan: its roles, GPUs, status and PodGroups.
func FromPlan(p *gang.Plan, uid types.UID, groupKind string) Workload {
	w := Workload{UID: uid, Namespace: p.Workload.Namespace, Kind: groupKind, Name: p.Workload.Name,
		GPUs: p.TotalGPUs.Devices(), GangGPUs: p.GangGPUs().Devices(), TopologyIssues: int32(min(len(p.TopologyIssues), math.MaxInt32))}
	for _, s := range p.Status {
		w.Status = append(w.Status, string(s))
	}
	segments := segmentsOf(p)
	for _, r := range p.Roles {
		w.Roles = append(w.Roles, Role{Name: r.Name, GPUs: r.GPUs.Devices(), GangGPUs: r.GangGPUs.Devices(), Segments: segments[r]})
	}
	for _, pg := range p.PodGroups {
		w.PodGroups = append(w.PodGroups, pg.Name)
	}
	return w
}

// segmentsOf counts each segmented role's segment sub-groups (gang.SubGroup.Segment set) over
// the plan's PodGroups: a role's segments are its sub-group's children (KAI pytorch_grouper.go
// buildWorkerSubGroups' worker-<i>), a led role's the top-level segment-<k> (lws_grouper.go
// createSegmentSubgroups).
func segmentsOf(p *gang.Plan) map[*gang.Role]int32 {
	out := map[*gang.Role]int32{}
	for _, pg := range p.PodGroups {
		for _, m := range pg.Members() {
			s := m.Role.Segments
			if s == nil || m.SubGroup == nil {
				continue
			}
			for _, sg := range pg.SubGroups {
				switch {
				case sg.Segment == nil:
				case s.Leader != "" && sg.Parent == nil, s.Leader == "" && sg.Parent != nil && *sg.Parent == m.SubGroup.Name:
					out[m.Role]++
				}
			}
		}
	}
	return out
}

// DefaultMaxWorkloads is the default cap on tracked workloads (--max-workload-metrics).
const DefaultMaxWorkloads = 10000

// Tracker holds the workloads and pods gangmap grouped, and is the prometheus.Collector of their
// series. Safe for concurrent use. The zero value is not usable: set MaxWorkloads (0 tracks none).
type Tracker struct {
	// MaxWorkloads caps the workloads that have series; 0 turns the workload series off.
	MaxWorkloads int
	// Reader, when set, reads the workloads' PodGroups (the manager's cache) at scrape time for
	// their KAI conditions.
	Reader client.Reader
	// Owners, when set, gives a workload's own PodGroups by its UID (strays.OwnerIndex), so that
	// a scrape finds the PodGroups of a planned name with a key placeholder among them, not among
	// every PodGroup of the namespace (podgroup.ActualNames).
	Owners podgroup.OwnerLister
	// Log reports the first workload dropped for the cap, and every 1000th after.
	Log logr.Logger
	// Pods, when set, is where each pod's role and phase are kept (the Book the pod controller
	// shares with the findings); nil: a Book of the Tracker's own.
	Pods *podbook.Book

	mu        sync.Mutex
	workloads map[types.UID]*entry
	// serial numbers the entries, so that a pod counted under a forgotten entry (its record stays
	// in the Book until the pod goes) is never taken off a newer entry of the same UID.
	serial uint64
	// gone remembers the last goneSize deleted workloads' UIDs, so that a late update (a pod
	// reconciled from a stale cache) does not bring their series back.
	gone     *lru.Cache
	dropped  prometheus.Counter
	droppedN int
	once     sync.Once
}

// goneSize is how many forgotten workloads a Tracker remembers.
const goneSize = 4096

// podState is a pod's role and phase.
type podState struct{ role, phase string }

// entry is one tracked workload: its Workload and its pods' counts.
type entry struct {
	Workload
	serial uint64
	// pods counts the workload's pods per role and phase (nil: none); no count is 0.
	pods map[podState]int
}

// count adds n pods of the state (a count that reaches 0 is dropped).
func (e *entry) count(s podState, n int) {
	if e.pods == nil {
		if n <= 0 {
			return
		}
		e.pods = map[podState]int{}
	}
	if e.pods[s] += n; e.pods[s] <= 0 {
		delete(e.pods, s)
	}
}

var _ prometheus.Collector = (*Tracker)(nil)

func (t *Tracker) init() {
	t.once.Do(func() {
		t.workloads = map[types.UID]*entry{}
		if t.Pods == nil {
			t.Pods = podbook.New()
		}
		t.gone = lru.New(goneSize)
		t.dropped = prometheus.NewCounter(prometheus.CounterOpts{Name: "gangmap_workload_metrics_dropped_total",
			Help: "Updates of workloads that got no gangmap_workload_* series because --max-workload-metrics workloads already have them."})
	})
}

// SetWorkload records (or replaces) w. It returns false, counting and logging the drop, when w is
// not tracked yet and MaxWorkloads workloads already are. The Tracker keeps w's lists (Status,
// Roles, PodGroups): they must not be changed after.
func (t *Tracker) SetWorkload(w Workload) bool {
	t.init()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.setWorkloadLocked(w) != nil
}

// setWorkloadLocked is SetWorkload under the lock: it returns w's entry, nil when w is dropped.
func (t *Tracker) setWorkloadLocked(w Workload) *entry {
	if e, ok := t.workloads[w.UID]; ok {
		e.Workload = w
		return e
	}
	if _, gone := t.gone.Get(w.UID); gone {
		return nil
	}
	if len(t.workloads) >= t.MaxWorkloads {
		t.dropped.Inc()
		t.droppedN++
		n := t.droppedN
		if n == 1 || n%1000 == 0 {
			t.Log.Info("Workload metrics cap reached: this workload gets no gangmap_workload_* series (raise --max-workload-metrics)",
				"workload", w.Namespace+"/"+w.Name, "kind", w.Kind, "cap", t.MaxWorkloads, "dropped", n)
		}
		return nil
	}
	t.serial++
	e := &entry{Workload: w, serial: t.serial}
	t.workloads[w.UID] = e
	return e
}

// Tracked reports whether the workload has series.
func (t *Tracker) Tracked(uid types.UID) bool {
	t.init()
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.workloads[uid]
	return ok
}

// live returns the entry a pod's record counts under, nil when that entry is gone.
func (t *Tracker) live(m podbook.Metric) *entry {
	if e := t.workloads[m.Owner]; e != nil && e.serial == m.Serial {
		return e
	}
	return nil
}

// TrackPod records a grouped pod and its workload: the workload's plan (nil: none), and the pod's
// role in it and phase (Pending when it has none). A pod with no role ("": no component claims
// it, or its instance is not in the plan) is not counted under any role, and one counted before
// is forgotten. It reports whether the pod has a role. The pod controller and gangmap inside
// KAI's pod-grouper both call it.
func (t *Tracker) TrackPod(uid types.UID, groupKind string, plan *gang.Plan, pod types.NamespacedName, role string, phase corev1.PodPhase) bool {
	if plan == nil || role == "" {
		t.ForgetPod(pod)
		if plan != nil {
			t.SetWorkload(FromPlan(plan, uid, groupKind))
		}
		return false
	}
	w := FromPlan(plan, uid, groupKind)
	t.init()
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.setWorkloadLocked(w); e != nil {
		t.setPodLocked(e, pod, role, string(cmp.Or(phase, corev1.PodPending)))
	}
	return true
}

// setPodLocked records a pod of the tracked workload e with its role and phase.
func (t *Tracker) setPodLocked(e *entry, pod types.NamespacedName, role, phase string) {
	t.swapPodLocked(pod, &podbook.Metric{Owner: e.UID, Serial: e.serial, Role: role, Phase: phase})
	e.count(podState{role: role, phase: phase}, 1)
}

// ForgetPod drops a pod (deleted, or no longer gangmap's).
func (t *Tracker) ForgetPod(pod types.NamespacedName) {
	t.init()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.swapPodLocked(pod, nil)
}

// swapPodLocked records the pod's record m (nil: none), taking its previous one off its entry.
func (t *Tracker) swapPodLocked(pod types.NamespacedName, m *podbook.Metric) {
	if old, had := t.Pods.SwapMetric(pod, m); had {
		if e := t.live(old); e != nil {
			e.count(podState{role: old.Role, phase: old.Phase}, -1)
		}
	}
}

// ForgetWorkload drops a deleted workload and its pods: its series are gone from the next scrape.
func (t *Tracker) ForgetWorkload(uid types.UID) {
	t.init()
	t.mu.Lock()
	defer t.mu.Unlock()
	// Its pods' records stay in the Book until the pods go; they no longer count (serial).
	delete(t.workloads, uid)
	t.gone.Add(uid, nil)
}

var (
	wl          = []string{"namespace", "kind", "name"}
	descStatus  = prometheus.NewDesc("gangmap_workload_status", "Status of a workload gangmap groups, from its definition's status mapping (one series per matched status word: initializing, running, completed, failed, degraded, suspended, suspending, resuming, undefined), always 1.", append(wl, "status"), nil)
	descInfo    = prometheus.NewDesc("gangmap_workload_info", "A workload gangmap groups, always 1; podgroups counts its planned PodGroups.", wl, nil)
	descGPUs    = prometheus.NewDesc("gangmap_workload_gpus", "GPUs the workload's pods request when every role runs all its replicas, in devices (fractions as decimals).", wl, nil)
	descGangGPU = prometheus.NewDesc("gangmap_workload_gang_min_gpus", "GPUs the workload's gang minimum requires, in devices (fractions as decimals).", wl, nil)
	descRoleGPU = prometheus.NewDesc("gangmap_workload_role_gpus", "GPUs of one role of the workload when all its replicas run, in devices (fractions as decimals).", append(wl, "role"), nil)
	descRoleMin = prometheus.NewDesc("gangmap_workload_role_gang_min_gpus", "GPUs of one role of the workload that the gang minimum requires, in devices (fractions as decimals).", append(wl, "role"), nil)
	descSegs    = prometheus.NewDesc("gangmap_workload_role_segments", "Segment sub-groups gangmap writes for one role of the workload (kai.scheduler/segment-size: ceil(pods / size), each with the segment topology constraint); only roles in segments.", append(wl, "role"), nil)
	descTopoBad = prometheus.NewDesc("gangmap_workload_topology_unresolved", "Topology and segment requests of the workload its plan could not honour (each a TopologyUnresolved finding; the PodGroup is written without them); only workloads with some.", wl, nil)
	descPods    = prometheus.NewDesc("gangmap_workload_role_pods", "Live pods of one role of the workload, by pod phase (Pending, Running, Succeeded, Failed, Unknown).", append(wl, "role", "phase"), nil)
	descPGCond  = prometheus.NewDesc("gangmap_workload_podgroup_condition", "A condition KAI wrote on the workload's PodGroup (status.conditions and status.schedulingConditions, as gangmap reads them), always 1. KAI's v2alpha2 PodGroup has no phase field.", append(wl, "podgroup", "type", "status"), nil)
	descTracked = prometheus.NewDesc("gangmap_workload_metrics_workloads", "Workloads that have gangmap_workload_* series (at most --max-workload-metrics).", nil, nil)
)

// Describe implements prometheus.Collector.
func (t *Tracker) Describe(ch chan<- *prometheus.Desc) {
	t.init()
	for _, d := range []*prometheus.Desc{descStatus, descInfo, descGPUs, descGangGPU, descRoleGPU, descRoleMin, descSegs, descTopoBad, descPods, descPGCond, descTracked} {
		ch <- d
	}
	t.dropped.Describe(ch)
}

// MaxRoleSeries caps the roles one workload has series for: the role list is data of the
// workload (an AppWrapper's or a DisaggregatedSet's author writes up to 1,000 instances), so
// without a cap one author could add thousands of series to every scrape. Roles past the first
// MaxRoleSeries (in plan order) are summed into the role OtherRoles, GPUs and pods alike.
const MaxRoleSeries = 32

// MaxPodGroupSeries caps the PodGroups one workload exports conditions for (the first, by name):
// a workload of per-replica gangs (a LeaderWorkerSet of 1,000 groups) has one PodGroup each.
const MaxPodGroupSeries = 32

// OtherRoles is the role label of the sum of a workload's roles past MaxRoleSeries.
const OtherRoles = "_other"

// boundedRoles returns at most MaxRoleSeries+1 roles: the first MaxRoleSeries, then OtherRoles
// summing the rest; kept holds the names of the roles that keep their own series (nil when all do).
func boundedRoles(roles []Role) (out []Role, kept map[string]bool) {
	if len(roles) <= MaxRoleSeries {
		return roles, nil
	}
	kept = make(map[string]bool, MaxRoleSeries)
	out = append(make([]Role, 0, MaxRoleSeries+1), roles[:MaxRoleSeries]...)
	other := Role{Name: OtherRoles}
	for _, r := range roles[:MaxRoleSeries] {
		kept[r.Name] = true
	}
	for _, r := range roles[MaxRoleSeries:] {
		other.GPUs += r.GPUs
		other.GangGPUs += r.GangGPUs
		other.Segments += r.Segments
	}
	return append(out, other), kept
}
