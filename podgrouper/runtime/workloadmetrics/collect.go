package workloadmetrics

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// scraped is one tracked workload during a scrape: what reading its PodGroups' conditions needs.
type scraped struct {
	uid       types.UID
	namespace string
	podGroups []string
	// workload is the label slice of its kind, name and namespace.
	workload []*dto.LabelPair
}

// Collect implements prometheus.Collector: the series of every tracked workload, generated now,
// in no particular order (the registry sorts them). The series of each workload are built under
// the lock straight from its entry (series.go: label pairs and values shared, nothing copied);
// its PodGroups' conditions are read afterwards, without the lock.
func (t *Tracker) Collect(ch chan<- prometheus.Metric) {
	t.init()
	t.dropped.Collect(ch)
	var s scrape
	t.mu.Lock()
	all := make([]scraped, 0, len(t.workloads))
	for uid, e := range t.workloads {
		all = append(all, scraped{uid: uid, namespace: e.Namespace, podGroups: e.PodGroups, workload: s.workload(e)})
	}
	t.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descTracked, prometheus.GaugeValue, float64(len(all)))
	sent := s.send(ch, 0)
	if t.Reader == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ConditionsTimeout)
	defer cancel()
	var r conditionReader
	for _, w := range all {
		if len(w.podGroups) > 0 {
			r.series(ctx, t.Reader, t.Owners, &s, w)
			sent = s.send(ch, sent)
		}
	}
}

// ConditionsTimeout bounds the reads of the tracked workloads' PodGroups in one scrape (from the
// manager's cache: microseconds each once it has synced; before, a read waits for the sync). It
// is Prometheus' default scrape timeout; PodGroups not read in time export no conditions in that
// scrape.
const ConditionsTimeout = 10 * time.Second

// workload adds the series of a tracked workload but its PodGroups' conditions, from the entry
// (read under the tracker's lock): info, status words, GPUs, each role's GPUs (at most
// MaxRoleSeries roles and OtherRoles) and its pods per phase. It returns the label slice of the
// workload's kind, name and namespace.
func (s *scrape) workload(e *entry) []*dto.LabelPair {
	wl := s.labels(nil, s.shared(&labelKind, e.Kind), s.pair(&labelName, e.Name), s.shared(&labelNamespace, e.Namespace))
	s.add(descInfo, wl, 1)
	s.add(descGPUs, wl, e.GPUs)
	s.add(descGangGPU, wl, e.GangGPUs)
	for _, st := range e.Status {
		s.add(descStatus, s.labels(wl, s.shared(&labelStatus, st)), 1)
	}
	roles, kept := boundedRoles(e.Roles)
	for _, r := range roles {
		l := s.labels(wl, s.shared(&labelRole, r.Name))
		s.add(descRoleGPU, l, r.GPUs)
		s.add(descRoleMin, l, r.GangGPUs)
		if r.Segments > 0 {
			s.add(descSegs, l, float64(r.Segments))
		}
	}
	if e.TopologyIssues > 0 {
		s.add(descTopoBad, wl, float64(e.TopologyIssues))
	}
	for st, n := range boundedStates(e.pods, kept) {
		s.add(descPods, s.labels(wl, s.shared(&labelPhase, st.phase), s.shared(&labelRole, st.role)), float64(n))
	}
	return wl
}

// boundedStates returns the workload's pod counts per (role, phase) with the roles outside kept
// summed under OtherRoles (kept nil: every role keeps its own, and counts is returned as it is).
func boundedStates(counts map[podState]int, kept map[string]bool) map[podState]int {
	if kept == nil {
		return counts
	}
	out := make(map[podState]int, len(kept)+1)
	for s, n := range counts {
		if !kept[s.role] {
			s.role = OtherRoles
		}
		out[s] += n
	}
	return out
}

// condition is one condition of a PodGroup as exported: its type and status.
type condition struct{ podGroup, typ, status string }

// conditionReader reads the conditions of workloads' PodGroups during one scrape, reusing its
// PodGroup and its list of conditions from one workload to the next.
type conditionReader struct {
	pg    v2alpha2.PodGroup
	conds []condition
}

// series adds to the scrape the series of the conditions KAI wrote on the workload's PodGroups
// (the first MaxPodGroupSeries by name), read from the reader.
func (r *conditionReader) series(ctx context.Context, reader client.Reader, owners podgroup.OwnerLister, s *scrape, w scraped) {
	r.conds = r.conds[:0]
	for _, name := range actualPodGroups(ctx, reader, owners, w.namespace, w.uid, w.podGroups) {
		r.read(ctx, reader, w.namespace, name)
	}
	var pg *dto.LabelPair
	for i, c := range r.conds {
		if i == 0 || c.podGroup != r.conds[i-1].podGroup {
			pg = s.pair(&labelPodGroup, c.podGroup)
		}
		s.add(descPGCond, s.labels(w.workload, pg, s.shared(&labelStatus, c.status), s.shared(&labelType, c.typ)), 1)
	}
}

// read appends the conditions of a PodGroup (from the cache) to r.conds: its conditions' type
// and status and its scheduling conditions' type (status True), each (type, status) once, none
// when it cannot be read. The PodGroup is read without a deep copy (client.UnsafeDisableDeepCopy:
// its slices are the cached object's) and only read here.
func (r *conditionReader) read(ctx context.Context, reader client.Reader, ns, name string) {
	r.pg = v2alpha2.PodGroup{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &r.pg, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	start := len(r.conds)
	for _, c := range r.pg.Status.Conditions {
		if c.Type != "" {
			r.conds = append(r.conds, condition{podGroup: name, typ: string(c.Type), status: string(c.Status)})
		}
	}
	for _, c := range r.pg.Status.SchedulingConditions {
		if c.Type != "" {
			r.conds = append(r.conds, condition{podGroup: name, typ: string(c.Type), status: "True"})
		}
	}
	r.pg = v2alpha2.PodGroup{} // the cached object's slices are not kept past the read
	own := r.conds[start:]
	slices.SortFunc(own, func(a, b condition) int { return cmp.Or(cmp.Compare(a.typ, b.typ), cmp.Compare(a.status, b.status)) })
	r.conds = append(r.conds[:start], slices.Compact(own)...)
}

// actualPodGroups returns the names of the workload's PodGroups, at most MaxPodGroupSeries (the
// first by name): its planned names, where an alpha name with a {key} placeholder stands for the
// PodGroups its pods' values named (podgroup.ActualNames), so their conditions are exported under
// their real names. Planned names without a placeholder are returned as they are (not copied, so
// not to be changed) when there are at most MaxPodGroupSeries.
func actualPodGroups(ctx context.Context, reader client.Reader, owners podgroup.OwnerLister, ns string, uid types.UID, planned []string) []string {
	names := planned
	if slices.ContainsFunc(planned, func(n string) bool { return strings.IndexByte(n, '{') >= 0 }) {
		names, _, _ = podgroup.ActualNames(ctx, reader, owners, ns, uid, planned)
	}
	if len(names) > MaxPodGroupSeries {
		names = slices.Clone(names)
		slices.Sort(names)
		names = names[:MaxPodGroupSeries]
	}
	return names
}
