package workloadmap

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaiadmission"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// startSim plays gangmap's pod controller on one workload: each pod is grouped (GroupPod) and
// its PodGroup written over the one written before (podgroup.Desired, what Applier.Apply
// writes), in the order given, as the reconciles of the pods do; then the admission model says
// what KAI does with each PodGroup and the pods, labelled as the controller labels them.
type startSim struct {
	t       *testing.T
	g       *Grouper
	written map[string]*v2alpha2.PodGroup
}

func newStartSim(t *testing.T) *startSim {
	return &startSim{t: t, g: newGrouper(t), written: map[string]*v2alpha2.PodGroup{}}
}

// simPod is a pod of the phase: its labels (as the operator sets them) and its state.
type simPod struct {
	name   string
	labels map[string]string
	state  kaiadmission.State
}

func (p simPod) pod() *corev1.Pod {
	out := pod(p.name, p.labels)
	switch p.state {
	case kaiadmission.Bound:
		out.Spec.NodeName, out.Status.Phase = "node-1", corev1.PodRunning
	case kaiadmission.Succeeded:
		out.Spec.NodeName, out.Status.Phase = "node-1", corev1.PodSucceeded
	default:
		out.Status.Phase = corev1.PodPending
	}
	return out
}

// phase reconciles every pod of the phase (pods of the same PodGroup in the order given) and
// returns the model's verdict per PodGroup name.
func (s *startSim) phase(obj *unstructured.Unstructured, pods []simPod) map[string]*kaiadmission.Verdict {
	s.t.Helper()
	byPG := map[string][]kaiadmission.Pod{}
	for _, p := range pods {
		md, err := s.g.GetPodGroupMetadata(context.Background(), obj, p.pod())
		require.NoError(s.t, err, p.name)
		s.written[md.Name] = podgroup.Desired(md, s.written[md.Name])
		sg := ""
		if found := md.FindSubGroupForPod("bench", p.name); found != nil {
			sg = found.Name
		}
		byPG[md.Name] = append(byPG[md.Name], kaiadmission.Pod{Name: p.name, SubGroup: sg, State: p.state})
	}
	out := map[string]*kaiadmission.Verdict{}
	for name, ps := range byPG {
		out[name] = kaiadmission.Evaluate(s.written[name], ps, nil)
	}
	return out
}

// only returns the single verdict of a one-PodGroup phase.
func only(t *testing.T, vs map[string]*kaiadmission.Verdict) *kaiadmission.Verdict {
	t.Helper()
	require.Len(t, vs, 1)
	for _, v := range vs {
		return v
	}
	return nil
}

// admittedWhole asserts KAI admits the phase's gang in one commit with exactly want pods bound
// then (never fewer), and no pod stranded.
func admittedWhole(t *testing.T, v *kaiadmission.Verdict, want int, msg string) {
	t.Helper()
	assert.True(t, v.Admitted, "%s: admitted (%s: %s)", msg, v.Blocking, v.Reason)
	assert.False(t, v.Partial, "%s: no partial commit (steps %v)", msg, v.Steps)
	assert.Equal(t, want, v.BoundAtAdmission, "%s: pods bound when the gang's minimum is met", msg)
	assert.Empty(t, v.Stranded, msg)
}

// notAdmitted asserts KAI binds nothing of the phase's pods yet.
func notAdmitted(t *testing.T, v *kaiadmission.Verdict, msg string) {
	t.Helper()
	assert.False(t, v.Admitted, msg)
	assert.Empty(t, v.Steps, "%s: nothing bound", msg)
}

func jobSetPod(name, rjob string, index int, s kaiadmission.State) simPod {
	return simPod{name: name, state: s, labels: map[string]string{
		"jobset.sigs.k8s.io/replicatedjob-name": rjob, "jobset.sigs.k8s.io/job-index": fmt.Sprint(index)}}
}

func jobSetPods(rjob string, n int, s kaiadmission.State) []simPod {
	out := make([]simPod, n)
	for i := range out {
		out[i] = jobSetPod(fmt.Sprintf("%s-0-%d", rjob, i), rjob, 0, s)
	}
	return out
}

// renameReplicatedJobs renames replicated jobs (and the dependsOn entries naming them), so that
// a test runs with either name order.
func renameReplicatedJobs(names map[string]string) func(*unstructured.Unstructured) {
	return func(obj *unstructured.Unstructured) {
		rjs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "replicatedJobs")
		for _, rj := range rjs {
			m := rj.(map[string]any)
			if n, ok := names[m["name"].(string)]; ok {
				m["name"] = n
			}
			deps, _ := m["dependsOn"].([]any)
			for _, d := range deps {
				dm := d.(map[string]any)
				if n, ok := names[dm["name"].(string)]; ok {
					dm["name"] = n
				}
			}
		}
		_ = unstructured.SetNestedSlice(obj.Object, rjs, "spec", "replicatedJobs")
	}
}

func withStatus(obj *unstructured.Unstructured, rv string, status ...any) *unstructured.Unstructured {
	o := obj.DeepCopy()
	o.SetResourceVersion(rv)
	if len(status) > 0 {
		_ = unstructured.SetNestedSlice(o.Object, status, "status", "replicatedJobsStatus")
	}
	return o
}

func rjs(name string, ready, succeeded int64) map[string]any {
	return map[string]any{"name": name, "ready": ready, "succeeded": succeeded, "active": ready}
}

// JobSet dependsOn, in the order the JobSet controller goes through it (jobset
// pkg/controllers/jobset_controller.go createJobs with depends_on.go dependencyReachedStatus: the
// launcher's Job is created once the initializer's Job is Complete, the worker's once the
// launcher's is Ready; the Job controller then creates each Job's parallelism pods), with the
// real-scheduler deadlock's names and with the initializer sorting last: at every phase KAI
// (the model) admits the pods that exist as one gang, and never a part of a phase's gang.
func TestStartPhasesJobSetDependsOn(t *testing.T) {
	for _, names := range []map[string]string{nil, {"initializer": "z-initializer", "worker": "a-worker"}} {
		n := func(s string) string {
			if v, ok := names[s]; ok {
				return v
			}
			return s
		}
		t.Run(fmt.Sprint(names), func(t *testing.T) {
			s := newStartSim(t)
			js := workload(t, "jobset-depends-on-initializer-launcher-worker.yaml", renameReplicatedJobs(names))
			init, launcher, worker := n("initializer"), "launcher", n("worker")

			v := only(t, s.phase(js, jobSetPods(init, 1, kaiadmission.Pending)))
			admittedWhole(t, v, 1, "created: the initializer alone")

			js2 := withStatus(js, "2", rjs(init, 0, 1), rjs(launcher, 0, 0))
			ps := append(jobSetPods(init, 1, kaiadmission.Succeeded), jobSetPods(launcher, 1, kaiadmission.Pending)...)
			v = only(t, s.phase(js2, ps))
			admittedWhole(t, v, 1, "initializer complete: the launcher")

			js3 := withStatus(js, "3", rjs(init, 0, 1), rjs(launcher, 1, 0), rjs(worker, 0, 0))
			ps = append(jobSetPods(init, 1, kaiadmission.Succeeded), jobSetPods(launcher, 1, kaiadmission.Bound)...)
			v = only(t, s.phase(js3, append(ps, jobSetPods(worker, 2, kaiadmission.Pending)...)))
			notAdmitted(t, v, "launcher ready, 2 of the 4 workers created")
			v = only(t, s.phase(js3, append(ps, jobSetPods(worker, 4, kaiadmission.Pending)...)))
			admittedWhole(t, v, 5, "launcher ready: the 4 workers together, beside the running launcher")
			assert.Equal(t, [][]string{{worker + "-0-0", worker + "-0-1", worker + "-0-2", worker + "-0-3"}}, v.Steps)
		})
	}
}

// The workers' pods may exist before gangmap sees the JobSet status that releases them (the
// controller writes the status after it creates the Job): their PodGroup then lacks their
// sub-group, KAI leaves them unscheduled (job_info.go AddTaskInfo), and the first of them to be
// grouped writes it, with its minimum: never a part of the workers.
func TestStartPhasesJobSetPodsBeforeStatus(t *testing.T) {
	s := newStartSim(t)
	js := workload(t, "jobset-depends-on-initializer-launcher-worker.yaml", nil)
	stale := withStatus(js, "2", rjs("initializer", 0, 1), rjs("launcher", 0, 0)) // the launcher not Ready yet
	ps := append(jobSetPods("initializer", 1, kaiadmission.Succeeded), jobSetPods("launcher", 1, kaiadmission.Bound)...)
	v := only(t, s.phase(stale, ps))
	assert.True(t, v.AlreadyMet)

	v = only(t, s.phase(stale, append(ps, jobSetPods("worker", 3, kaiadmission.Pending)...)))
	notAdmitted(t, v, "3 of 4 workers, status not seen yet")
	v = only(t, s.phase(stale, append(ps, jobSetPods("worker", 4, kaiadmission.Pending)...)))
	admittedWhole(t, v, 5, "4 workers, status not seen yet")
}

// startupPolicyOrder InOrder (jobset startup_policy.go allReplicasStarted, createJobs: a
// replicated job is created once every one before it has all its Jobs ready), with the sample's
// names (the held driver sorts first) and swapped.
func TestStartPhasesJobSetInOrder(t *testing.T) {
	for _, names := range []map[string]string{nil, {"driver": "z-driver"}} {
		t.Run(fmt.Sprint(names), func(t *testing.T) {
			driver := "driver"
			if v, ok := names["driver"]; ok {
				driver = v
			}
			s := newStartSim(t)
			js := workload(t, "jobset-paralleljobs-two-rjobs.yaml", func(o *unstructured.Unstructured) {
				renameReplicatedJobs(names)(o)
				_ = unstructured.SetNestedField(o.Object, "InOrder", "spec", "startupPolicy", "startupPolicyOrder")
			})
			v := only(t, s.phase(js, jobSetPods("workers", 4, kaiadmission.Pending)))
			admittedWhole(t, v, 4, "created: the workers' Job alone")

			js2 := withStatus(js, "2", rjs("workers", 1, 0))
			ps := append(jobSetPods("workers", 4, kaiadmission.Bound), jobSetPods(driver, 1, kaiadmission.Pending)...)
			v = only(t, s.phase(js2, ps))
			admittedWhole(t, v, 5, "workers ready: the driver")
		})
	}
}

func lwsPod(group, worker int, s kaiadmission.State) simPod {
	return simPod{name: fmt.Sprintf("lws-%d-%d", group, worker), state: s, labels: map[string]string{
		"leaderworkerset.sigs.k8s.io/group-index": fmt.Sprint(group), "leaderworkerset.sigs.k8s.io/worker-index": fmt.Sprint(worker)}}
}

// LeaderWorkerSet startupPolicy LeaderReady (lws pkg/controllers/pod_controller.go: a group's
// worker StatefulSet is created once its leader pod is Ready), one PodGroup per group: the
// leader alone first, then its 3 workers together, never 2 of them; a group that starts over
// (LWS recreates the whole group, RecreateGroupOnPodRestart) admits its new leader alone again.
func TestStartPhasesLeaderWorkerSetLeaderReady(t *testing.T) {
	s := newStartSim(t)
	lws := workload(t, "lws-replicas2-size4-8gpu-limits.yaml", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, "LeaderReady", "spec", "startupPolicy")
	})
	vs := s.phase(lws, []simPod{lwsPod(0, 0, kaiadmission.Pending), lwsPod(1, 0, kaiadmission.Pending)})
	require.Len(t, vs, 2)
	for name, v := range vs {
		admittedWhole(t, v, 1, name+": the leader alone")
	}
	g0 := []simPod{lwsPod(0, 0, kaiadmission.Bound), lwsPod(0, 1, kaiadmission.Pending), lwsPod(0, 2, kaiadmission.Pending)}
	notAdmitted(t, only(t, s.phase(lws, g0)), "leader ready, 2 of 3 workers")
	g0 = append(g0, lwsPod(0, 3, kaiadmission.Pending))
	v := only(t, s.phase(lws, g0))
	admittedWhole(t, v, 4, "leader ready: its 3 workers")
	// The leader's own reconcile after its workers' does not take their sub-group back.
	v = only(t, s.phase(lws, []simPod{lwsPod(0, 1, kaiadmission.Bound), lwsPod(0, 2, kaiadmission.Bound), lwsPod(0, 3, kaiadmission.Bound), lwsPod(0, 0, kaiadmission.Bound)}))
	assert.True(t, v.AlreadyMet)
	assert.Empty(t, v.Stranded)

	v = only(t, s.phase(lws, []simPod{lwsPod(0, 0, kaiadmission.Pending)}))
	admittedWhole(t, v, 1, "group 0 recreated: the new leader alone")
}

// Every catalog definition and sample manifest, at the phase where the operator has created
// the pods of every role its PodGroups write now (no status yet: what a fresh workload gets):
// KAI admits each PodGroup whole with exactly its written minimum, and a written role missing
// one pod of its minimum blocks it (never fewer). The pods are placed by sub-group label, as
// the controller labels them.
func TestEveryCatalogSampleAdmittedWhole(t *testing.T) {
	g := newGrouper(t)
	checked := 0
	for _, f := range sampleFiles(t) {
		obj := workload(t, f, nil)
		if g.Registry.Lookup(obj.GroupVersionKind()) == nil {
			continue
		}
		plan, _, err := g.Plan(context.Background(), obj)
		if err != nil {
			continue // a sample that plans to an error is another test's subject
		}
		for _, pg := range plan.PodGroups {
			md := &podgroup.Metadata{Name: pg.Name, Annotations: map[string]string{}, Labels: map[string]string{}}
			fillGang(md, ptrMeta(newPodGroupMeta(plan, pg)), assignmentOf(pg), "")
			written := podgroup.Build(md)
			pods, want := podsForWritten(written)
			if want == 0 {
				continue
			}
			name := f + " " + pg.Name
			v := kaiadmission.Evaluate(written, pods, nil)
			admittedWhole(t, v, want, name)
			if short := withoutOne(written, pods); short != nil {
				notAdmitted(t, kaiadmission.Evaluate(written, short, nil), name+": one pod short")
			}
			checked++
		}
	}
	assert.Greater(t, checked, 40, "PodGroups checked")
}

func ptrMeta(m podGroupMeta) *podGroupMeta { return &m }

func sampleFiles(t *testing.T) []string {
	t.Helper()
	entries, err := readDir("../../../gang/testdata")
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e, ".yaml") {
			out = append(out, e)
		}
	}
	sort.Strings(out)
	return out
}

// podsForWritten makes, for every written leaf, as many pending pods as its minimum (one for a
// leaf of minimum 0 is not made: such a role has no pod required), and returns them with the
// number the gang requires.
func podsForWritten(pg *v2alpha2.PodGroup) ([]kaiadmission.Pod, int) {
	var pods []kaiadmission.Pod
	if len(pg.Spec.SubGroups) == 0 {
		n := int(*pg.Spec.MinMember)
		for i := 0; i < n; i++ {
			pods = append(pods, kaiadmission.Pod{Name: fmt.Sprintf("p-%d", i), State: kaiadmission.Pending})
		}
		return pods, n
	}
	parents := map[string]bool{}
	for _, sg := range pg.Spec.SubGroups {
		if sg.Parent != nil {
			parents[*sg.Parent] = true
		}
	}
	for _, sg := range pg.Spec.SubGroups {
		if parents[sg.Name] || sg.MinMember == nil {
			continue
		}
		for i := 0; i < int(*sg.MinMember); i++ {
			pods = append(pods, kaiadmission.Pod{Name: fmt.Sprintf("%s-%d", sg.Name, i), SubGroup: sg.Name, State: kaiadmission.Pending})
		}
	}
	return pods, len(pods)
}

// withoutOne drops the last pod (of a leaf that requires pods), or returns nil when there is
// none to drop.
func withoutOne(_ *v2alpha2.PodGroup, pods []kaiadmission.Pod) []kaiadmission.Pod {
	if len(pods) == 0 {
		return nil
	}
	return pods[:len(pods)-1]
}

func assignmentOf(pg *gang.PodGroup) *gang.Assignment {
	return &gang.Assignment{PodGroup: pg, Name: pg.Name}
}

func readDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
