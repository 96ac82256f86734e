//go:build e2e_kai

package realkai_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/e2e/realkai"
	"github.com/gangmap/gangmap/internal/kaisamples"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/decide"
	"github.com/gangmap/gangmap/podgrouper/core/defaultgrouper"
	"github.com/gangmap/gangmap/podgrouper/core/hub"
	"github.com/gangmap/gangmap/podgrouper/core/kaiadmission"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
	"github.com/gangmap/gangmap/podgrouper/core/native"
	"github.com/gangmap/gangmap/podgrouper/core/owners"
	"github.com/gangmap/gangmap/podgrouper/core/ownerskip"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
	"github.com/gangmap/gangmap/podgrouper/core/workloadmap"
)

// The catalog sweep runs every kaisamples sample (the catalog's testdata manifests, the segment
// samples and the e2e CustomJob, with the pods kaisamples synthesizes for them) through gangmap's
// grouper and the real KAI scheduler, and holds KAI to the admission model (kaiadmission) at two
// points: with the gang one pod short, and whole.
const (
	// sweepNodes fake nodes serve every sample (the synthesized pods request nothing; a node
	// has 64 CPUs, 512 GiB and 110 pods: realkai.SetNodeGPUs).
	sweepNodes = 3
	// sweepParallel samples run at once, each in its own namespace, so that the scheduling
	// cycles they wait through overlap.
	sweepParallel = 8
)

// Why a sample's short phase does not run (chooseWithheld).
const (
	// noGangPods: no pod of the sample is in a gang PodGroup.
	noGangPods = "no pod is in a gang PodGroup"
	// unclaimed: no pod of a gang PodGroup is claimed by a role: kaisamples gives a pod the
	// labels of plain label selectors only, so these pods join the gang PodGroup in no
	// sub-group, where KAI never schedules them (job_info.go AddTaskInfo); the whole phase still
	// checks that none is bound, as the model says.
	unclaimed = "no pod of a gang is claimed by a role (kaisamples labels plain label selectors only): they join the gang PodGroup in no sub-group"
	// startsLater: every pending pod is of a role the start order defers while the others run
	// (docs/definitions.md, start order: a role not created yet is not required yet), so no set
	// of pods one short of the gang exists.
	startsLater = "every pending pod is of a role the start order defers (the others run): without them the gang is met"
	// minimumOne: the gang's minimum is one pod, so one pod fewer is no pod: the short phase is
	// vacuous (reported, not a skip).
	minimumOne = "the gang's minimum is one pod: one pod fewer is none"
)

// sweepNotRun are the samples whose short phase does not run, with the reason chooseWithheld
// gives; the sweep fails for any other sample whose short phase does not run (minimumOne
// aside) and for a listed one whose short phase runs.
var sweepNotRun = map[string]string{
	"rayjob-existing-cluster-selector.yaml":                                      noGangPods, // the RayJob submits to an existing RayCluster: no pods
	"sparkapplication-docs-gpu-struct-fragment.yaml":                             startsLater,
	"sparkapplication-dynamic-allocation-min1-max5.yaml":                         startsLater,
	"dynamographdeployment-v1beta1-sglang-disagg-multinode-components-list.yaml": unclaimed,
	"inferenceservice-autoscale-gpu-tf.yaml":                                     unclaimed,
	"inferenceservice-collocation-two-containers.yaml":                           unclaimed,
	"inferenceservice-multinode-workerspec-pp2-tp1.yaml":                         unclaimed,
	"llminferenceservice-v1alpha2-dp-ep-deepseek-pd-worker.yaml":                 unclaimed,
	"llminferenceservice-v1alpha2-pd-qwen-gpu.yaml":                              unclaimed,
	"podcliqueset-autoscale-pcsg-simple1.yaml":                                   unclaimed,
	"podcliqueset-multinode-disagg-pcsg.yaml":                                    unclaimed,
}

// TestCatalogSweep: every kaisamples sample on the real KAI scheduler, with gangmap's grouper
// grouping every sample's kind (every kind of the native table removed: --native-kinds-remove),
// each in its own namespace, the pods on fake nodes with room for all of them (the model assumes
// room: resources, quotas and topology are KAI's business; the segment samples' Topology exists):
//   - short: the workload and its pods but the fewest pending pods of one sub-group of a gang
//     PodGroup (chooseWithheld: usually one pod of a role the PodGroup requires) without which
//     the model does not admit the PodGroup gangmap writes; pods of roles a start rule does not
//     hold are created first, bound (kaisamples' started pods). After holdPeriod (10 cycles at
//     --schedule-period=1s) the pods KAI bound (spec.nodeName) must be exactly those the model
//     binds, PodGroup by PodGroup: none of the short gang's. What KAI does there:
//     actions/allocate/allocate.go skips a job that is not ready (actions/utils/input_jobs.go
//     FilterUnready: subgroup_info SubGroupSet.IsReadyForScheduling, a leaf short of its
//     minMember of alive pods) and, for a ready one, podgroup_info/allocation_info.go
//     collectTasksFromSubGroupSet takes the first minSubGroup children by name; a child with no
//     pending pod gives no task and nothing is allocated.
//   - whole: the left-out pods are created; KAI must bind exactly what the model binds: every pod
//     of a gang the model admits (allocate.go commits a job's statement only once its gang is
//     placed, then binds its further pods one at a time), none of one it holds (pods capped at
//     kaisamples.MaxPodsPerRole below the gang's minimum, pods no role claims: job_info.go
//     AddTaskInfo leaves a pod whose sub-group the PodGroup lacks unscheduled). Pods of a role in
//     no gang are in KAI's default PodGroup (minMember 1: job_info.go setSubGroups' "default"
//     leaf) and bound alone, as the samples define them.
//
// The model's verdicts are taken on the PodGroups gangmap wrote, read back from the API server.
// A disagreement, a PodGroup the model admits one pod short, or one the model says KAI binds
// part of, fails the sample with the PodGroups and KAI's log lines naming its namespace
// (Cluster.Report). One line per sample gives its PodGroups and both phases' verdicts.
func TestCatalogSweep(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	reg, err := kaisamples.Registry("../testdata/customjob-karta.yaml")
	require.NoError(t, err)
	samples := sweepSamples(t, ctx, reg)
	for _, gvk := range sampleKinds(samples) {
		require.NoError(t, kai.EnsureServed(ctx, gvk))
	}
	groupEveryKind(t, ctx)
	b := sweepBed(t, ctx)

	results := make([]sweepResult, len(samples))
	sem := make(chan struct{}, sweepParallel)
	var wg sync.WaitGroup
	for i, s := range samples {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = runSample(ctx, b, fmt.Sprintf("sweep-%02d", i), s, reg)
		}()
	}
	wg.Wait()

	pods, agree, short, admitted := 0, 0, 0, 0
	notRun := map[string][]string{}
	for _, r := range results {
		t.Log(r.line())
		pods += r.pods
		for _, p := range r.problems {
			t.Errorf("%s: %s", r.name, p)
		}
		if len(r.problems) == 0 {
			agree++
		}
		if r.short.ran {
			short++
		}
		if len(r.whole.blocked) == 0 && len(r.whole.want) > 0 {
			admitted++
		}
		if r.skip != "" {
			notRun[r.skip] = append(notRun[r.skip], r.name)
		}
		if want := sweepNotRun[r.name]; want != "" || r.skip != minimumOne {
			assert.Equal(t, want, r.skip, "%s: why the short phase did not run (\"\": it ran)", r.name)
		}
	}
	t.Logf("%d samples, %d pods, in %v: real KAI and the model agree on %d; short phase run on %d; every gang admitted whole on %d",
		len(results), pods, time.Since(start).Round(time.Second), agree, short, admitted)
	for why, names := range notRun {
		t.Logf("short phase not run (%s): %d: %v", why, len(names), names)
	}
}

// sweepBed creates the sweep's fake nodes (no namespace: each sample has its own), all in one zone
// and rack of the KAI Topology the segment samples name (kai.scheduler/topology
// "cluster-topology", levels topology.kubernetes.io/zone and cloud.provider.com/topology-rack: KAI
// docs/topology/segments.md), so that a segment's required placement can be met.
func sweepBed(t *testing.T, ctx context.Context) *bed {
	t.Helper()
	const zone, rack = "topology.kubernetes.io/zone", "cloud.provider.com/topology-rack"
	if err := kai.CreateTopology(ctx, "cluster-topology", zone, rack); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	b := &bed{ns: "catalog-sweep", nodes: sweepNodes}
	var names []string
	for i := 0; i < sweepNodes; i++ {
		names = append(names, fmt.Sprintf("%s-%d", b.ns, i))
	}
	require.NoError(t, kai.CreateGPUNodes(ctx, realkai.NodeSpec{Names: names, GPUs: 8, Labels: map[string]string{benchLabel: b.ns, zone: "z1", rack: "r1"}}))
	return b
}

// sweepResult is one sample's run.
type sweepResult struct {
	name string
	pods int
	// podGroups describe the PodGroups gangmap wrote (describe).
	podGroups []string
	// withheld are the pods left out in the short phase; skip says why there was none.
	withheld []string
	skip     string
	// short and whole are the model's and KAI's bound pods at the end of each phase.
	short, whole phase
	problems     []string
}

// phase is what the model binds (want) and what KAI bound (bound) at the end of a phase, of the
// sample's pods; blocked are the PodGroups the model does not admit, with its reason, and
// groupOf each pod's PodGroup.
type phase struct {
	want, bound      map[string]bool
	blocked, groupOf map[string]string
	ran              bool
}

// why lists the PodGroups the model does not admit, with the reason.
func (p phase) why() []string {
	var out []string
	for name, reason := range p.blocked {
		out = append(out, name+": "+reason)
	}
	sort.Strings(out)
	return out
}

func (p phase) String() string {
	if !p.ran {
		return "not run"
	}
	s := fmt.Sprintf("model binds %d, KAI bound %d", len(p.want), len(p.bound))
	if len(p.blocked) > 0 {
		s += fmt.Sprintf(" (model: %s)", strings.Join(p.why(), "; "))
	}
	return s
}

func (r sweepResult) line() string {
	verdict := "agree"
	if len(r.problems) > 0 {
		verdict = fmt.Sprintf("%d PROBLEMS", len(r.problems))
	}
	short := "short: " + r.short.String()
	if r.skip != "" {
		short = "short: not run: " + r.skip
	} else if len(r.withheld) > 0 {
		short = fmt.Sprintf("short (without %v): %s", r.withheld, r.short)
	}
	return fmt.Sprintf("%s: %d pods, PodGroups %v; %s; whole: %s; %s", r.name, r.pods, r.podGroups, short, r.whole, verdict)
}

// sweepSamples are kaisamples' samples (its doc comment: the catalog's testdata, the segment
// samples and the e2e CustomJob), each named (a workload with only a generateName gets its
// stem as name, and its pods that prefix).
func sweepSamples(t *testing.T, ctx context.Context, reg *definitions.Registry) []kaisamples.Sample {
	t.Helper()
	all, err := kaisamples.Load(ctx, "../../definitions/catalog/testdata", "sweep", reg)
	require.NoError(t, err)
	segs, err := kaisamples.Load(ctx, "../../internal/kaisamples/testdata/segments", "sweep", reg)
	require.NoError(t, err)
	cj, ok, err := kaisamples.LoadFile(ctx, "../testdata/customjob.yaml", "sweep", reg)
	require.NoError(t, err)
	require.True(t, ok)
	all = append(append(all, segs...), cj)
	require.GreaterOrEqual(t, len(all), 70, "the catalog's samples, the segment samples and the CustomJob")
	for _, s := range all {
		if s.Workload.GetName() != "" {
			continue
		}
		stem := strings.TrimSuffix(s.Workload.GetGenerateName(), "-")
		s.Workload.SetName(stem)
		for _, p := range s.Pods {
			p.Name = stem + p.Name
			p.OwnerReferences[0].Name = stem
		}
	}
	return all
}

// sampleKinds are the samples' workload kinds, sorted.
func sampleKinds(samples []kaisamples.Sample) []schema.GroupVersionKind {
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	for _, s := range samples {
		if gvk := s.Workload.GroupVersionKind(); !seen[gvk] {
			seen[gvk] = true
			out = append(out, gvk)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// groupEveryKind replaces the suite's grouper, for the test, by one with every kind of KAI
// v0.17's native table removed, so that every sample's kind is grouped by its definition; the
// suite's grouper is started again afterwards.
func groupEveryKind(t *testing.T, ctx context.Context) {
	t.Helper()
	require.NoError(t, gm.Stop())
	all, err := kai.StartGangmap(ctx, grouperBin, "--native-kinds-remove="+strings.Join(native.DefaultTable().Entries(), ","), "--stray-podgroup-grace=5s")
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = all.Stop()
		if err := gm.Start(ctx); err != nil {
			t.Errorf("restarting the suite's grouper: %v", err)
		}
	})
}

// sampleDecider is the standalone grouper's decision for the sample's pods (as
// kaiplugin's samegangs test builds it): on a fake API holding the workload as the grouper
// leaves it (marked for KAI's pod-grouper to skip) and its pods, every kind gangmap's.
func sampleDecider(reg *definitions.Registry, s kaisamples.Sample) (*decide.Decider, error) {
	w := markedWorkload(s.Workload)
	c, err := kaisamples.FakeAPI(w, s.Pods)
	if err != nil {
		return nil, err
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(w.GroupVersionKind(), meta.RESTScopeNamespace)
	table := native.DefaultTable()
	for _, e := range table.Entries() {
		if err := table.Remove(e); err != nil {
			return nil, err
		}
	}
	wm := &workloadmap.Grouper{Registry: reg, Defaults: &defaultgrouper.Grouper{}}
	return &decide.Decider{Client: c, APIReader: c, Walker: &owners.Walker{Reader: c, Mapper: mapper},
		Hub: &hub.Hub{Native: table, Registry: reg, Grouper: wm}, SchedulerName: kaisamples.SchedulerName}, nil
}

// markedWorkload is a copy of w with the mark the standalone grouper puts on a workload it
// groups (--mark-workloads): KAI's pod-grouper skips it, and gangmap gives its pods in no gang
// KAI's default PodGroup.
func markedWorkload(w *unstructured.Unstructured) *unstructured.Unstructured {
	m := w.DeepCopy()
	ann := m.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[kaikeys.SkipPodGrouper], ann[ownerskip.SetBy] = "true", ownerskip.SetByValue
	m.SetAnnotations(ann)
	return m
}

// predicted is what gangmap writes for a sample's pods created one after the other: each gang
// PodGroup (podgroup.Desired over the PodGroup the earlier pods left, as the grouper's Applier
// writes it; deferred sub-groups of roles with no pod yet left out) and the model's view of its
// pods, in the order the PodGroups first appear.
type predicted struct {
	order   []string
	pgs     map[string]*v2alpha2.PodGroup
	members map[string][]kaiadmission.Pod
}

// predict decides pods in order with d. A pod in no gang (KAI's default PodGroup, named by no
// plan) is left out.
func predict(ctx context.Context, d *decide.Decider, pods []*corev1.Pod) (predicted, error) {
	p := predicted{pgs: map[string]*v2alpha2.PodGroup{}, members: map[string][]kaiadmission.Pod{}}
	for _, pod := range pods {
		dec, err := d.Decide(ctx, pod.DeepCopy())
		if err != nil {
			return p, fmt.Errorf("pod %s: %w", pod.Name, err)
		}
		if dec == nil || !contains(dec.Planned, dec.Metadata.Name) {
			continue
		}
		name := dec.Metadata.Name
		if p.pgs[name] == nil {
			p.order = append(p.order, name)
		}
		p.pgs[name] = podgroup.Desired(dec.Metadata, p.pgs[name])
		p.members[name] = append(p.members[name], kaiadmission.Pod{Name: pod.Name, SubGroup: dec.SubGroup, State: kaiadmission.StateOf(pod)})
	}
	return p, nil
}

// chooseWithheld picks the pods the short phase leaves out: in the first gang PodGroup (in the
// order of the sample's pods) where some exist, the fewest pending pods of one sub-group (the last
// ones) without which the model does not admit the PodGroup that gangmap writes for the pods
// that are then created (the start order's deferred sub-groups included: a role whose pods do not
// exist yet is not required yet, by design). pods are in creation order. It returns why there
// are none when no gang PodGroup has such pods.
func chooseWithheld(ctx context.Context, reg *definitions.Registry, s kaisamples.Sample, pods []*corev1.Pod) ([]string, string, error) {
	d, err := sampleDecider(reg, s)
	if err != nil {
		return nil, "", err
	}
	all, err := predict(ctx, d, pods)
	if err != nil {
		return nil, "", err
	}
	claimed, vanished, met := false, false, false
	for _, name := range all.order {
		for _, group := range subGroupsOf(all.members[name]) {
			if group.sub == "" && len(all.pgs[name].Spec.SubGroups) > 0 {
				continue // unclaimed pods: in no sub-group of the PodGroup
			}
			claimed = true
			for k := 1; k <= len(group.pending); k++ {
				drop := group.pending[len(group.pending)-k:]
				short, err := predict(ctx, d, withoutPods(pods, drop))
				if err != nil {
					return nil, "", err
				}
				if short.pgs[name] == nil {
					vanished = true // no pod of the PodGroup is left
					continue
				}
				v := kaiadmission.Evaluate(short.pgs[name], short.members[name], nil)
				if !v.Admitted {
					return drop, "", nil
				}
				met = met || v.AlreadyMet
			}
		}
	}
	switch {
	case len(all.order) == 0:
		return nil, noGangPods, nil
	case !claimed:
		return nil, unclaimed, nil
	case vanished:
		return nil, minimumOne, nil
	case met:
		return nil, startsLater, nil
	}
	return nil, "the model admits every gang whatever pending pods of one sub-group are left out", nil
}

// subGroup is the pending pods of one sub-group of a PodGroup.
type subGroup struct {
	sub     string
	pending []string
}

// subGroupsOf groups pods by sub-group, in the order the sub-groups first appear.
func subGroupsOf(pods []kaiadmission.Pod) []subGroup {
	var out []subGroup
	at := map[string]int{}
	for _, p := range pods {
		i, ok := at[p.SubGroup]
		if !ok {
			i = len(out)
			at[p.SubGroup] = i
			out = append(out, subGroup{sub: p.SubGroup})
		}
		if p.State == kaiadmission.Pending {
			out[i].pending = append(out[i].pending, p.Name)
		}
	}
	return out
}

func withoutPods(pods []*corev1.Pod, drop []string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if !contains(drop, p.Name) {
			out = append(out, p)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// runSample runs one sample in namespace ns (see TestCatalogSweep) and deletes what it created.
func runSample(ctx context.Context, b *bed, ns string, s kaisamples.Sample, reg *definitions.Registry) (r sweepResult) {
	r = sweepResult{name: s.Name, pods: len(s.Pods)}
	fail := func(format string, args ...any) sweepResult {
		r.problems = append(r.problems, fmt.Sprintf(format, args...)+"\n"+kai.Report(ctx, ns))
		return r
	}
	// In the operator's order: the pods of roles a start rule does not hold first (bound), then
	// the held roles' pods.
	var inOrder []*corev1.Pod
	for _, started := range []bool{true, false} {
		for _, p := range s.Pods {
			if (p.Spec.NodeName == kaisamples.StartedNode) == started {
				inOrder = append(inOrder, p)
			}
		}
	}
	withheld, skip, err := chooseWithheld(ctx, reg, s, inOrder)
	if err != nil {
		return fail("choosing the pods to leave out: %v", err)
	}
	r.withheld, r.skip = withheld, skip
	if err := kai.CreateNamespace(ctx, ns); err != nil {
		return fail("namespace: %v", err)
	}
	w := markedWorkload(s.Workload)
	b.pin(w)
	w.SetNamespace(ns)
	w.SetUID("")
	w.SetResourceVersion("")
	defer cleanUp(ctx, ns, w)
	if err := kai.Client.Create(ctx, w); err != nil {
		return fail("creating the workload: %v", err)
	}
	var started, short, rest []*corev1.Pod
	for _, p := range inOrder {
		p = samplePod(p, ns, w, b.ns)
		switch {
		case p.Spec.NodeName != "":
			started = append(started, p)
		case contains(withheld, p.Name):
			rest = append(rest, p)
		default:
			short = append(short, p)
		}
	}
	// The started pods are grouped before the held roles' pods exist.
	pending := map[string]bool{}
	for _, set := range [][]*corev1.Pod{started, short} {
		if err := createGrouped(ctx, set); err != nil {
			return fail("%v", err)
		}
	}
	for _, p := range short {
		pending[p.Name] = true
	}
	if skip == "" {
		if r.short, err = observe(ctx, ns, pending, holdPeriod); err != nil {
			return fail("short phase: %v", err)
		}
	}
	if err := createGrouped(ctx, rest); err != nil {
		return fail("%v", err)
	}
	pending = map[string]bool{}
	for _, p := range rest {
		pending[p.Name] = true
	}
	if skip != "" { // the whole sample was created at once
		for _, p := range short {
			pending[p.Name] = true
		}
	}
	if r.whole, err = observe(ctx, ns, pending, 0); err != nil {
		return fail("whole phase: %v", err)
	}
	pgs := &v2alpha2.PodGroupList{}
	if err := kai.Client.List(ctx, pgs, client.InNamespace(ns)); err != nil {
		return fail("PodGroups: %v", err)
	}
	for i := range pgs.Items {
		r.podGroups = append(r.podGroups, fmt.Sprintf("%s: %s", strings.TrimPrefix(pgs.Items[i].Name, "pg-"+string(w.GetUID())+"-"), describe(&pgs.Items[i])))
	}
	var problems []string
	for _, ph := range []struct {
		name string
		p    phase
	}{{"short", r.short}, {"whole", r.whole}} {
		if d := diff(ph.p); ph.p.ran && d != "" {
			problems = append(problems, fmt.Sprintf("%s: real KAI and the model disagree: %s", ph.name, d))
		}
	}
	shortGroups := map[string]bool{}
	for _, pg := range r.short.groupOf {
		shortGroups[pg] = true
	}
	for _, name := range withheld {
		if pg := r.whole.groupOf[name]; r.short.ran && shortGroups[pg] && r.short.blocked[pg] == "" {
			problems = append(problems, fmt.Sprintf("short: the model admits PodGroup %s, as gangmap wrote it, without %v", pg, withheld))
		}
	}
	if len(problems) > 0 {
		return fail("%s", strings.Join(problems, "\n"))
	}
	return r
}

// samplePod is the sample's pod p for namespace ns and the live workload w: its nodes are the
// bed's (a started pod is bound to the bed's first node), and a queue label it has names the
// test queue.
func samplePod(p *corev1.Pod, ns string, w *unstructured.Unstructured, bedName string) *corev1.Pod {
	p = p.DeepCopy()
	p.Namespace, p.UID = ns, ""
	p.OwnerReferences[0].UID = w.GetUID()
	p.Spec.NodeSelector = map[string]string{benchLabel: bedName}
	if p.Spec.NodeName == kaisamples.StartedNode {
		p.Spec.NodeName = bedName + "-0" // kwok makes it Running
	}
	p.Status = corev1.PodStatus{}
	if _, ok := p.Labels[kaikeys.DefaultQueueLabel]; ok {
		p.Labels[kaikeys.DefaultQueueLabel] = queue
	}
	return p
}

// createGrouped creates pods and waits until each names an existing PodGroup.
func createGrouped(ctx context.Context, pods []*corev1.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	for _, p := range pods {
		if err := kai.Client.Create(ctx, p); err != nil {
			return fmt.Errorf("creating pod %s: %w", p.Name, err)
		}
	}
	if _, err := kai.WaitGrouped(ctx, pods, admitTimeout); err != nil {
		return fmt.Errorf("grouping: %w", err)
	}
	return nil
}

// observe is one phase: the model's verdict on every PodGroup of ns, with the pods of pending
// taken as pending (as they were created) and the others as they are; then KAI's bound pods once
// hold has passed and the pods the model binds are bound (at most admitTimeout), compared with
// the verdict taken again on the PodGroups as they are then (gangmap may still have been writing).
func observe(ctx context.Context, ns string, pending map[string]bool, hold time.Duration) (phase, error) {
	first, err := modelBinds(ctx, ns, pending)
	if err != nil {
		return phase{}, err
	}
	if len(first.blocked) > 0 {
		hold = max(hold, holdPeriod) // watch a gang the model holds back for as many cycles
	}
	if first.bound, err = settle(ctx, ns, first.want, hold); err != nil {
		return phase{}, err
	}
	p, err := modelBinds(ctx, ns, pending)
	if err != nil {
		return phase{}, err
	}
	p.bound = first.bound
	if !subset(p.want, p.bound) {
		if p.bound, err = settle(ctx, ns, p.want, 0); err != nil {
			return phase{}, err
		}
	}
	return p, nil
}

// modelBinds evaluates the model (kaiadmission.Evaluate, KAI v0.17) on every PodGroup the pods of
// ns name: the phase's want are the pods bound once KAI's allocate action is done with them (the
// bound ones and those its commits bind), blocked the PodGroups it does not admit, with why. A
// PodGroup the model says KAI binds part of is an error.
func modelBinds(ctx context.Context, ns string, pending map[string]bool) (phase, error) {
	pods := &corev1.PodList{}
	if err := kai.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
		return phase{}, err
	}
	members := map[string][]kaiadmission.Pod{}
	ph := phase{want: map[string]bool{}, blocked: map[string]string{}, groupOf: map[string]string{}, ran: true}
	want := ph.want
	for i := range pods.Items {
		p := kaiadmission.PodFor(&pods.Items[i])
		if pending[p.Name] {
			p.State = kaiadmission.Pending
		}
		if p.State == kaiadmission.Bound {
			want[p.Name] = true
		}
		pg := pods.Items[i].Annotations[kaikeys.PodGroupName]
		members[pg] = append(members[pg], p)
		ph.groupOf[p.Name] = pg
	}
	for name, ps := range members {
		pg := &v2alpha2.PodGroup{}
		if err := kai.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg); err != nil {
			return phase{}, fmt.Errorf("PodGroup %q: %w", name, err)
		}
		v := kaiadmission.Evaluate(pg, ps, nil)
		if v.Partial {
			return phase{}, fmt.Errorf("the model says KAI binds part of PodGroup %s (%s): %v", name, describe(pg), v.Steps)
		}
		for _, b := range slices.Concat(v.Steps...) {
			want[b] = true
		}
		if !v.Admitted {
			ph.blocked[name] = fmt.Sprintf("%s not admitted: %s", describe(pg), v.Reason)
		}
	}
	return ph, nil
}

// settle waits until hold has passed and every pod of want is bound (spec.nodeName), at most
// admitTimeout, and returns the bound pods of ns.
func settle(ctx context.Context, ns string, want map[string]bool, hold time.Duration) (map[string]bool, error) {
	start := time.Now()
	for {
		if err := kai.CheckRunning(); err != nil {
			return nil, err
		}
		p, err := kai.Place(ctx, ns, labels.Everything())
		if err != nil {
			return nil, err
		}
		bound := map[string]bool{}
		for _, pod := range p.Bound {
			bound[pod.Name] = true
		}
		elapsed := time.Since(start)
		if elapsed >= hold && subset(want, bound) || elapsed > admitTimeout {
			return bound, nil
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func subset(a, b map[string]bool) bool {
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// diff says how KAI's bound pods differ from the model's; "" when they do not.
func diff(p phase) string {
	var extra, missing []string
	for k := range p.bound {
		if !p.want[k] {
			extra = append(extra, k)
		}
	}
	for k := range p.want {
		if !p.bound[k] {
			missing = append(missing, k)
		}
	}
	if len(extra)+len(missing) == 0 {
		return ""
	}
	sort.Strings(extra)
	sort.Strings(missing)
	return fmt.Sprintf("KAI bound %v the model does not bind; the model binds %v KAI did not; model: %v", extra, missing, p.why())
}

// cleanUp deletes the namespace's pods (at once), PodGroups and the workload w, then the
// namespace: no controller-manager runs here to do it.
func cleanUp(ctx context.Context, ns string, w *unstructured.Unstructured) {
	_ = kai.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
	_ = kai.Client.DeleteAllOf(ctx, &v2alpha2.PodGroup{}, client.InNamespace(ns))
	_ = kai.Client.Delete(ctx, w)
	_ = kai.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
}
