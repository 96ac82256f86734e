package workloadmetrics

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

var update = flag.Bool("update", false, "rewrite testdata/scrape.golden.txt from the current exposition")

// podGroupStore is a stand-in of the manager's cache reader for PodGroups, by namespace and name:
// Get and List hand out shallow copies of the stored objects (slices shared), as
// controller-runtime's cache reader does with client.UnsafeDisableDeepCopy.
type podGroupStore struct {
	client.Reader
	pgs map[types.NamespacedName]*v2alpha2.PodGroup
}

func (s *podGroupStore) add(ns, name string, status v2alpha2.PodGroupStatus) {
	if s.pgs == nil {
		s.pgs = map[types.NamespacedName]*v2alpha2.PodGroup{}
	}
	pg := &v2alpha2.PodGroup{Status: status}
	pg.Namespace, pg.Name = ns, name
	s.pgs[types.NamespacedName{Namespace: ns, Name: name}] = pg
}

func (s *podGroupStore) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	stored, ok := s.pgs[key]
	if !ok {
		return fmt.Errorf("podgroup %s not found", key)
	}
	*obj.(*v2alpha2.PodGroup) = *stored
	return nil
}

func (s *podGroupStore) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	var o client.ListOptions
	o.ApplyOptions(opts)
	out := list.(*v2alpha2.PodGroupList)
	for key, pg := range s.pgs {
		if key.Namespace == o.Namespace {
			out.Items = append(out.Items, *pg)
		}
	}
	return nil
}

// exposition is the text a scrape of the tracker returns (every family, the registry's order),
// gathered by a pedantic registry, which also checks each series against its Desc.
func exposition(t *testing.T, tr *Tracker) []byte {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(tr))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		require.NoError(t, enc.Encode(mf))
	}
	return buf.Bytes()
}

// exhibitTracker tracks workloads of every shape the series take: the scale benchmark's
// CustomJob, a workload past both caps (40 roles summed into OtherRoles, 40 PodGroups), one whose
// planned PodGroup name has a {key} placeholder, one with pods in more (role, phase) states than
// the counts' list holds and a pod of no role, fractional GPUs, label values the text format
// escapes, KAI conditions (duplicated, and a scheduling condition), an unreadable PodGroup and a
// workload with nothing but its identity.
func exhibitTracker(t *testing.T) *Tracker {
	t.Helper()
	store := &podGroupStore{}
	tr := &Tracker{MaxWorkloads: 100, Reader: store}
	pod := func(uid types.UID, ns, name, role, phase string) {
		setPod(tr, uid, types.NamespacedName{Namespace: ns, Name: name}, role, phase)
	}
	require.True(t, tr.SetWorkload(Workload{UID: "a-custom", Namespace: "scale", Kind: "CustomJob.e2e.example.com", Name: "w00001",
		Status: []string{"running"}, GPUs: 10, GangGPUs: 10, PodGroups: []string{"pg-w00001"},
		Roles: []Role{{Name: "coordinator", GPUs: 1, GangGPUs: 1}, {Name: "worker", GPUs: 9, GangGPUs: 9}}}))
	store.add("scale", "pg-w00001", v2alpha2.PodGroupStatus{
		Conditions:           []v2alpha2.PodGroupCondition{{Type: "Ready", Status: corev1.ConditionFalse}, {Type: "Ready", Status: corev1.ConditionFalse}, {Type: "Stale", Status: corev1.ConditionTrue}},
		SchedulingConditions: []v2alpha2.SchedulingCondition{{Type: "UnschedulableOnNodePool", NodePool: "a"}, {Type: "UnschedulableOnNodePool", NodePool: "b"}, {Type: ""}}})
	pod("a-custom", "scale", "c-0", "coordinator", "Running")
	for i := range 9 {
		pod("a-custom", "scale", fmt.Sprintf("w-%d", i), "worker", []string{"Pending", "Running"}[i%2])
	}

	many := Workload{UID: "b-many", Namespace: "team-a", Kind: "AppWrapper.workload.codeflare.dev", Name: "many", GPUs: 40, GangGPUs: 20,
		Status: []string{"degraded", "running"}}
	for i := range 40 {
		many.Roles = append(many.Roles, Role{Name: fmt.Sprintf("r-%02d", i), GPUs: 1, GangGPUs: 0.5})
		many.PodGroups = append(many.PodGroups, fmt.Sprintf("pg-%02d", 39-i))
		store.add("team-a", fmt.Sprintf("pg-%02d", i), v2alpha2.PodGroupStatus{
			Conditions: []v2alpha2.PodGroupCondition{{Type: "Ready", Status: corev1.ConditionStatus([]string{"True", "False"}[i%2])}}})
	}
	require.True(t, tr.SetWorkload(many))
	for i := range 40 {
		pod("b-many", "team-a", fmt.Sprintf("p%02d", i), fmt.Sprintf("r-%02d", i), []string{"Running", "Pending", "Failed"}[i%3])
	}

	require.True(t, tr.SetWorkload(Workload{UID: "c-keyed", Namespace: "team-b", Kind: "Job.batch", Name: "keyed",
		Status: []string{"initializing"}, GPUs: 0.25, GangGPUs: 0.125, PodGroups: []string{"keyed-{.metadata.labels.slice}", "missing"},
		Roles: []Role{{Name: `odd "role"\ with` + "\nnewline", GPUs: 0.25, GangGPUs: 0.125}}}))
	store.add("team-b", "keyed-s1", v2alpha2.PodGroupStatus{Conditions: []v2alpha2.PodGroupCondition{{Type: "Ready", Status: corev1.ConditionTrue}}})
	store.add("team-b", "keyed-s2", v2alpha2.PodGroupStatus{})
	store.add("team-b", "other", v2alpha2.PodGroupStatus{Conditions: []v2alpha2.PodGroupCondition{{Type: "Ready", Status: corev1.ConditionTrue}}})
	pod("c-keyed", "team-b", "k-0", `odd "role"\ with`+"\nnewline", "Running")

	states := Workload{UID: "d-states", Namespace: "team-b", Kind: "Job.batch", Name: "states", GPUs: 3, GangGPUs: 1}
	for i := range 3 {
		states.Roles = append(states.Roles, Role{Name: fmt.Sprintf("s%d", i), GPUs: 1, GangGPUs: 1.0 / 3})
	}
	require.True(t, tr.SetWorkload(states))
	for i := range 15 {
		pod("d-states", "team-b", fmt.Sprintf("s-%d", i), fmt.Sprintf("s%d", i%3), []string{"Pending", "Running", "Succeeded", "Failed", "Unknown"}[i%5])
	}
	pod("d-states", "team-b", "stray", "", "Running")

	require.True(t, tr.SetWorkload(Workload{UID: "e-bare", Namespace: "team-c", Kind: "Pod", Name: "bare"}))
	require.True(t, tr.SetWorkload(Workload{UID: "f-gone", Namespace: "team-c", Kind: "Pod", Name: "gone"}))
	pod("f-gone", "team-c", "g-0", "", "Running")
	tr.ForgetWorkload("f-gone")
	return tr
}

// The exposition of every shape is the golden one (testdata/scrape.golden.txt, written by the
// series as they were built with prometheus.MustNewConstMetric before the scrape was slimmed),
// byte for byte, through a pedantic registry; and the same on a second scrape.
func TestExpositionIsGolden(t *testing.T) {
	tr := exhibitTracker(t)
	got := exposition(t, tr)
	const golden = "testdata/scrape.golden.txt"
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
	assert.Equal(t, string(want), string(exposition(t, tr)), "second scrape")
}

// A series' Write allocates nothing: its labels and value are the scrape's, shared.
func TestSeriesWriteAllocatesNothing(t *testing.T) {
	tr := exhibitTracker(t)
	ch := make(chan prometheus.Metric, 1000)
	tr.Collect(ch)
	close(ch)
	var series []prometheus.Metric
	for m := range ch {
		if _, ok := m.(*gauge); ok {
			series = append(series, m)
		}
	}
	require.Len(t, series, 188, "the golden exposition's samples but the two of the tracker itself")
	var out dto.Metric
	assert.Zero(t, testing.AllocsPerRun(10, func() {
		for _, m := range series {
			_ = m.Write(&out)
		}
	}))
}

// A role name that is not valid UTF-8 (data of a definition) does not fail the scrape: its
// invalid bytes are replaced by U+FFFD (prometheus.MustNewConstMetric, before session 7, panicked
// in the registry's collecting goroutine, which ended the process).
func TestInvalidUTF8RoleKeepsTheScrape(t *testing.T) {
	tr := &Tracker{MaxWorkloads: 10}
	require.True(t, tr.SetWorkload(Workload{UID: "u1", Namespace: "ns", Kind: "Job.batch", Name: "j", Roles: []Role{{Name: "bad\xffrole", GPUs: 1}}}))
	setPod(tr, "u1", types.NamespacedName{Namespace: "ns", Name: "p"}, "bad\xffrole", "Running")
	byName := collectByName(t, tr)
	assert.Equal(t, map[string]float64{"bad\uFFFDrole": 1}, labelValues(byName["gangmap_workload_role_gpus"], "role"))
	assert.Equal(t, map[string]float64{"bad\uFFFDrole": 1}, labelValues(byName["gangmap_workload_role_pods"], "role"))
}

// Past maxShared distinct label values and gauge values in one scrape, series get pairs and
// values of their own: every workload's series still carry its own namespace and GPUs.
func TestScrapePastTheSharedTables(t *testing.T) {
	const n = maxShared + 500
	tr := &Tracker{MaxWorkloads: n}
	for i := range n {
		require.True(t, tr.SetWorkload(Workload{UID: types.UID(fmt.Sprint(i)), Namespace: fmt.Sprintf("ns-%d", i), Kind: "Job.batch", Name: "j",
			GPUs: float64(i) + 0.5, Roles: []Role{{Name: fmt.Sprintf("r-%d", i), GPUs: float64(i)}}}))
	}
	byName := collectByName(t, tr)
	gpus := labelValues(byName["gangmap_workload_gpus"], "namespace")
	roles := labelValues(byName["gangmap_workload_role_gpus"], "role")
	require.Len(t, gpus, n)
	require.Len(t, roles, n)
	for i := range n {
		require.Equal(t, float64(i)+0.5, gpus[fmt.Sprintf("ns-%d", i)])
		require.Equal(t, float64(i), roles[fmt.Sprintf("r-%d", i)])
	}
}

// Scrapes run while pods and workloads change (under -race: no data race between the series a
// scrape hands out and the tracker's entries), each scrape succeeds, and once the changes are
// undone the exposition is the golden one again.
func TestScrapesWhileWorkloadsChange(t *testing.T) {
	tr := exhibitTracker(t)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(tr))
	done := make(chan struct{})
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			var err error
			for err == nil {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				_, err = reg.Gather()
			}
			errs <- err
		}()
	}
	for i := range 200 {
		uid := types.UID(fmt.Sprintf("z-%d", i))
		require.True(t, tr.SetWorkload(Workload{UID: uid, Namespace: "scale", Kind: "CustomJob.e2e.example.com", Name: fmt.Sprintf("z%d", i),
			Roles: []Role{{Name: "worker", GPUs: 1}}}))
		pod := types.NamespacedName{Namespace: "scale", Name: fmt.Sprintf("z%d-0", i)}
		setPod(tr, uid, pod, "worker", "Pending")
		setPod(tr, uid, pod, "worker", "Running")
		setPod(tr, "a-custom", types.NamespacedName{Namespace: "scale", Name: "c-0"}, "coordinator", []string{"Pending", "Running"}[i%2])
		tr.ForgetPod(pod)
		tr.ForgetWorkload(uid)
	}
	close(done)
	for range 2 {
		require.NoError(t, <-errs)
	}
	want, err := os.ReadFile("testdata/scrape.golden.txt")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(exposition(t, tr)))
}

// noListStore is a podGroupStore whose List fails: a scrape that reads the workloads' own
// PodGroups from an owner index never lists a namespace.
type noListStore struct{ *podGroupStore }

func (noListStore) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return fmt.Errorf("noListStore: a namespace was listed")
}

// ownedPodGroups is an owner index (podgroup.OwnerLister) over given PodGroups.
type ownedPodGroups map[types.UID][]*v2alpha2.PodGroup

func (o ownedPodGroups) Owned(ns string, uid types.UID) ([]*v2alpha2.PodGroup, error) {
	var out []*v2alpha2.PodGroup
	for _, pg := range o[uid] {
		if ns == "" || pg.Namespace == ns {
			out = append(out, pg)
		}
	}
	return out, nil
}

// With an owner index (Tracker.Owners), the keyed workload's PodGroups (keyed-s1, keyed-s2 of
// team-b, owned by c-keyed) are found in it, the namespace is not listed, and the exposition is
// the golden one byte for byte: a PodGroup of the name pattern owned by another workload
// (keyed-s3) and one of another namespace (team-c/keyed-s4) are not the workload's.
func TestExpositionIsGoldenThroughOwners(t *testing.T) {
	tr := exhibitTracker(t)
	store := tr.Reader.(*podGroupStore)
	store.add("team-b", "keyed-s3", v2alpha2.PodGroupStatus{Conditions: []v2alpha2.PodGroupCondition{{Type: "Stale", Status: corev1.ConditionTrue}}})
	store.add("team-c", "keyed-s4", v2alpha2.PodGroupStatus{Conditions: []v2alpha2.PodGroupCondition{{Type: "Stale", Status: corev1.ConditionTrue}}})
	pg := func(ns, name string) *v2alpha2.PodGroup {
		return store.pgs[types.NamespacedName{Namespace: ns, Name: name}]
	}
	tr.Reader = noListStore{store}
	tr.Owners = ownedPodGroups{
		"c-keyed": {pg("team-b", "keyed-s2"), pg("team-c", "keyed-s4"), pg("team-b", "keyed-s1")},
		"d-other": {pg("team-b", "keyed-s3")},
	}
	want, err := os.ReadFile("testdata/scrape.golden.txt")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(exposition(t, tr)))
}
