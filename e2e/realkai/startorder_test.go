//go:build e2e_kai

package realkai_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gangmap/gangmap/e2e/framework"
	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
	"github.com/gangmap/gangmap/podgrouper/core/kaiadmission"
	"github.com/gangmap/gangmap/podgrouper/core/kaikeys"
)

// Start order on the real KAI scheduler (issue 27): the operator creates a role's pods only when
// its start rule allows, and KAI must admit each phase's pods as soon as they exist, whole, for
// either name order of the roles. KAI takes the first minSubGroup children of a PodGroup by name
// among unsatisfied ones (pkg/scheduler/api/podgroup_info/allocation_info.go
// collectTasksFromSubGroupSet; framework/session_plugins.go, the subgrouporder tie-break), so a
// sub-group with no pending pod among them blocks the gang; both name orders are run.

// rjob is one replicated job of a test JobSet: replicas Jobs of pods pods each, gpus GPUs per pod.
type rjob struct {
	name      string
	pods, gpu int
	dependsOn map[string]string // replicated job -> "Complete" or "Ready"
}

// jobSet is a JobSet of the replicated jobs in spec order, startupPolicyOrder order ("" for none).
func jobSet(name, order string, rjs ...rjob) *unstructured.Unstructured {
	var list []any
	for _, r := range rjs {
		spec := map[string]any{"parallelism": int64(r.pods), "completions": int64(r.pods), "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": r.name, "image": "registry.example/" + r.name + ":1",
				"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": int64(r.gpu)}}}},
		}}}
		rj := map[string]any{"name": r.name, "replicas": int64(1), "template": map[string]any{"spec": spec}}
		var deps []any
		for d, st := range r.dependsOn {
			deps = append(deps, map[string]any{"name": d, "status": st})
		}
		if deps != nil {
			rj["dependsOn"] = deps
		}
		list = append(list, rj)
	}
	spec := map[string]any{"replicatedJobs": list}
	if order != "" {
		spec["startupPolicy"] = map[string]any{"startupPolicyOrder": order}
	}
	js := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "spec": spec}}
	js.SetName(name)
	return js
}

// runJobSetController plays the JobSet controller (framework.StepJobSet, every 300 ms) until the
// test ends.
func runJobSetController(t *testing.T, namespace, name string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if _, err := kai.StepJobSet(ctx, namespace, name); err != nil && ctx.Err() == nil {
				t.Logf("JobSet controller step: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func rjSelector(jobset, rj string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{framework.LabelJobSetName: jobset, framework.LabelReplicatedJobName: rj})
}

// TestJobSetDependsOnComplete: workers (3 pods, 2 GPUs each) dependsOn an initializer (1 pod, 1
// GPU) reaching Complete, on one 4-GPU node. The JobSet controller creates the workers' Job only
// when the initializer's Jobs all succeeded (jobset pkg/controllers/jobset_controller.go
// reconcileReplicatedJobs, depends_on.go: Complete = succeeded Jobs == replicas). So KAI must
// admit the initializer alone, and once it completed, the 3 workers all or none: none while only
// 4 GPUs are there (2 of the 3 would fit), all 3 once a second 4-GPU node is added
// (admitAllOrNothing). The initializer is named to sort before ("aa-init") and after ("zz-init")
// the workers.
func TestJobSetDependsOnComplete(t *testing.T) {
	for _, initName := range []string{"aa-init", "zz-init"} {
		t.Run("initializer="+initName, func(t *testing.T) {
			ctx := context.Background()
			b := newBed(t, "depends-on-"+initName, 1, 4)
			js := jobSet("train", "",
				rjob{name: initName, pods: 1, gpu: 1},
				rjob{name: "workers", pods: 3, gpu: 2, dependsOn: map[string]string{initName: "Complete"}})
			b.pin(js)
			require.NoError(t, kai.Client.Create(ctx, js))
			runJobSetController(t, b.ns, js.GetName())

			p, err := kai.WaitAllBound(ctx, b.ns, rjSelector("train", initName), 1, admitTimeout)
			require.NoError(t, err, "KAI admits the initializer, the only pod the JobSet controller created")
			w, err := kai.Place(ctx, b.ns, rjSelector("train", "workers"))
			require.NoError(t, err)
			assert.Empty(t, append(w.Bound, w.Pending...), "no worker exists before the initializer completes")

			// The initializer's container exits 0: its Job succeeds and the controller creates the workers.
			require.NoError(t, kai.FinishPod(ctx, b.ns, p.Bound[0].Name))
			admitAllOrNothing(t, b, rjSelector("train", "workers"), 3, 4)
		})
	}
}

// TestJobSetInOrder: startupPolicyOrder InOrder with a leader (1 pod, 1 GPU) before the workers
// (3 pods, 2 GPUs each) in spec order, on one 4-GPU node. The JobSet controller goes through the
// replicated jobs in spec order and creates the first one not started yet, then waits until it has
// started (jobset_controller.go reconcileReplicatedJobs returns after createJobs under InOrder;
// startup_policy.go allReplicasStarted: ready + failed + succeeded == replicas). So KAI must admit
// the leader alone, and once it is Ready (kwok marks a bound pod Ready), the 3 workers all or
// none, with the leader still running: none while 3 GPUs are free (1 worker would fit), all 3
// once a second 4-GPU node is added. The leader is named to sort before ("aa-leader") and after
// ("zz-leader") the workers.
func TestJobSetInOrder(t *testing.T) {
	for _, leader := range []string{"aa-leader", "zz-leader"} {
		t.Run("leader="+leader, func(t *testing.T) {
			ctx := context.Background()
			b := newBed(t, "in-order-"+leader, 1, 4)
			js := jobSet("serve", "InOrder", rjob{name: leader, pods: 1, gpu: 1}, rjob{name: "workers", pods: 3, gpu: 2})
			b.pin(js)
			require.NoError(t, kai.Client.Create(ctx, js))
			runJobSetController(t, b.ns, js.GetName())

			_, err := kai.WaitAllBound(ctx, b.ns, rjSelector("serve", leader), 1, admitTimeout)
			require.NoError(t, err, "KAI admits the leader, the first replicated job, created alone")
			admitAllOrNothing(t, b, rjSelector("serve", "workers"), 3, 4)
			l, err := kai.Place(ctx, b.ns, rjSelector("serve", leader))
			require.NoError(t, err)
			require.Len(t, l.Bound, 1)
			assert.Equal(t, corev1.PodRunning, l.Bound[0].Status.Phase, "the leader still runs")
		})
	}
}

// TestJobSetDependsOnExample: JobSet's own dependsOn example (jobset
// site/static/examples/depends-on/depends-on.yaml, e2e/testdata): the launcher dependsOn the
// initializer Complete, the 4 workers dependsOn the launcher Ready. KAI must admit the initializer
// alone; once it completed, the launcher alone; once the launcher is Ready (kwok), the 4 workers
// together while the launcher keeps running (depends_on.go: Ready = ready + failed + succeeded
// Jobs == replicas).
func TestJobSetDependsOnExample(t *testing.T) {
	ctx := context.Background()
	b := newBed(t, "depends-on-example", 1, 8)
	js := b.readWorkload(t, "../testdata/jobset-depends-on-initializer-launcher-worker.yaml")
	require.NoError(t, kai.Client.Create(ctx, js))
	runJobSetController(t, b.ns, js.GetName())
	name := js.GetName()

	p, err := kai.WaitAllBound(ctx, b.ns, rjSelector(name, "initializer"), 1, admitTimeout)
	require.NoError(t, err, "KAI admits the initializer, created alone")
	require.NoError(t, kai.FinishPod(ctx, b.ns, p.Bound[0].Name))
	l, err := kai.WaitAllBound(ctx, b.ns, rjSelector(name, "launcher"), 1, admitTimeout)
	require.NoError(t, err, "KAI admits the launcher once the initializer completed")
	_, err = kai.WaitAllBound(ctx, b.ns, rjSelector(name, "worker"), 4, admitTimeout)
	require.NoError(t, err, "KAI admits the 4 workers once the launcher is Ready")
	require.NoError(t, kai.Client.Get(ctx, client.ObjectKeyFromObject(&l.Bound[0]), &l.Bound[0]))
	assert.Equal(t, corev1.PodRunning, l.Bound[0].Status.Phase, "the launcher still runs")
}

// admitAllOrNothing waits until the n pods of sel exist, checks that KAI binds none of them for
// holdPeriod (the bed's GPUs must not hold them all), adds a node of gpus GPUs and waits until KAI
// binds all n.
func admitAllOrNothing(t *testing.T, b *bed, sel labels.Selector, n, gpus int) {
	t.Helper()
	ctx := context.Background()
	err := framework.WaitFor(ctx, admitTimeout, func(ctx context.Context) (bool, error) {
		p, err := kai.Place(ctx, b.ns, sel)
		return err == nil && len(p.Bound)+len(p.Pending) >= n, nil
	})
	require.NoError(t, err, "the operator created %d pods of %s\n%s", n, sel, kai.Report(ctx, b.ns))
	_, err = kai.AssertNoneBound(ctx, b.ns, sel, holdPeriod)
	require.NoError(t, err, "too few GPUs for the %d pods of %s: KAI binds none", n, sel)
	b.addNodes(t, 1, gpus)
	_, err = kai.WaitAllBound(ctx, b.ns, sel, n, admitTimeout)
	require.NoError(t, err, "enough GPUs: KAI binds all %d pods of %s together", n, sel)
}

// TestLeaderWorkerSetLeaderReady: a LeaderWorkerSet with startupPolicy LeaderReady, 2 groups of
// size 3 (leader and workers 2 GPUs each), on two 8-GPU nodes. The LWS controller creates a
// group's worker StatefulSet only once its leader pod is Ready (lws pkg/controllers/pod_controller.go
// Reconcile: "defer the creation of the worker statefulset because leader pod is not ready"). So
// KAI must admit each leader alone, and once it is Ready, its group's workers together.
func TestLeaderWorkerSetLeaderReady(t *testing.T) {
	ctx := context.Background()
	b := newBed(t, "lws-leader-ready", 2, 8)
	tpl := func(name string) map[string]any {
		return map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": name, "image": "registry.example/sglang:1",
			"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": int64(2)}}}}}}
	}
	lws := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"spec": map[string]any{"replicas": int64(2), "startupPolicy": "LeaderReady", "leaderWorkerTemplate": map[string]any{
			"size": int64(3), "leaderTemplate": tpl("leader"), "workerTemplate": tpl("worker")}}}}
	lws.SetName("sglang")
	b.pin(lws)
	require.NoError(t, kai.Client.Create(ctx, lws))
	stop := make(chan struct{})
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		for {
			if _, err := kai.StepLeaderWorkerSet(ctx, b.ns, "sglang"); err != nil {
				t.Logf("LWS controller step: %v", err)
			}
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-stepped })

	for g := 0; g < 2; g++ {
		group := labels.Set{framework.LabelLWSName: "sglang", framework.LabelGroupIndex: fmt.Sprint(g)}
		leaderSel := labels.SelectorFromSet(labels.Merge(group, labels.Set{framework.LabelWorkerIndex: "0"}))
		_, err := kai.WaitAllBound(ctx, b.ns, leaderSel, 1, admitTimeout)
		require.NoError(t, err, "KAI admits group %d's leader, created before its workers", g)
		_, err = kai.WaitAllBound(ctx, b.ns, labels.SelectorFromSet(group), 3, admitTimeout)
		require.NoError(t, err, "KAI admits group %d's 2 workers together once the leader is Ready", g)
	}
}

// TestJobSetTwoDependentsReleasedTogether: the race of two replicated jobs created on one event.
// JobSet's dependsOn example (e2e/testdata) with the worker depending, like the launcher, on the
// initializer (1 pod, 1 GPU); launcher 1 pod of 2 GPUs, workers 4 pods of 1 GPU; one 4-GPU node.
// The JobSet controller creates the launcher's and the worker's Jobs in one reconcile
// (jobset_controller.go createJobs) and writes the JobSet's status after it, so the launcher's
// pods can exist while status.replicatedJobsStatus still says the initializer has not reached
// its status and the worker's pods do not exist yet.
//
// KAI must then bind no launcher pod: room for the launcher alone is there (2 of 3 or 4 GPUs
// free), so only the gang keeps it pending: the PodGroup has the worker sub-group (minMember 4, no
// pod) among the minSubGroup it requires, a sub-group with fewer alive pods than its minimum is
// not ready for scheduling (subgroup_info/podset.go IsReadyForScheduling), so neither is the
// PodGroup (subgroupset.go IsReadyForScheduling: fewer ready children than minSubGroup) and
// allocate skips it (job_info.go IsReadyForScheduling). Once the worker's pods and the status
// exist, KAI binds the launcher and the 4 workers all or none (allocation_info.go
// collectTasksFromSubGroupSet takes every required child's tasks in one attempt): none while
// only the one node is there (6 GPUs needed), all 5 once a second 4-GPU node is added, their
// bind requests all made in one scheduling session.
//
// Both dependsOn statuses are run. Complete: the initializer's pod has finished and, the status
// being stale, its sub-group still asks for its pod, which KAI never counts (pod_status.go
// aliveStatuses), so the PodGroup would not be ready even without the worker's sub-group (the
// model check below says so). Ready: the initializer's pod runs and meets its sub-group, so a
// PodGroup of the initializer and the launcher alone would be admitted, launcher alone (the model
// check says so, and gangmap before a35a8f4 did it on this KAI: see the commit adding this test).
// The initializer is named to sort before ("aa-init") and after ("zz-init") its dependents.
func TestJobSetTwoDependentsReleasedTogether(t *testing.T) {
	for _, dep := range []string{"Complete", "Ready"} {
		for _, initName := range []string{"aa-init", "zz-init"} {
			t.Run(dep+"/initializer="+initName, func(t *testing.T) {
				twoDependentsReleasedTogether(t, dep, initName)
			})
		}
	}
}

func twoDependentsReleasedTogether(t *testing.T, dep, initName string) {
	ctx := context.Background()
	b := newBed(t, "two-dependents-"+strings.ToLower(dep)+"-"+initName, 1, 4)
	js := b.readWorkload(t, "../testdata/jobset-depends-on-initializer-launcher-worker.yaml")
	name := js.GetName()
	rjs, _, err := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	require.NoError(t, err)
	gpus := map[string]int64{"initializer": 1, "launcher": 2, "worker": 1}
	for _, item := range rjs {
		rj := item.(map[string]any)
		containers, _, err := unstructured.NestedSlice(rj, "template", "spec", "template", "spec", "containers")
		require.NoError(t, err)
		require.NoError(t, unstructured.SetNestedField(containers[0].(map[string]any), gpus[rj["name"].(string)], "resources", "limits", "nvidia.com/gpu"))
		require.NoError(t, unstructured.SetNestedSlice(rj, containers, "template", "spec", "template", "spec", "containers"))
		if rj["name"] == "initializer" {
			rj["name"] = initName
		} else {
			rj["dependsOn"] = []any{map[string]any{"name": initName, "status": dep}}
		}
	}
	require.NoError(t, unstructured.SetNestedSlice(js.Object, rjs, "spec", "replicatedJobs"))
	require.NoError(t, kai.Client.Create(ctx, js))

	// Phase 1: the JobSet controller creates the initializer alone; KAI admits it; with
	// dependsOn Complete its container exits 0.
	_, err = kai.StepJobSet(ctx, b.ns, name)
	require.NoError(t, err)
	p, err := kai.WaitAllBound(ctx, b.ns, rjSelector(name, initName), 1, admitTimeout)
	require.NoError(t, err, "KAI admits the initializer, created alone")
	if dep == "Complete" {
		require.NoError(t, kai.FinishPod(ctx, b.ns, p.Bound[0].Name))
	}

	// Phase 2, the race: the launcher's pods exist, the status still says nothing of the
	// initializer, the worker's pods are not created yet.
	launcher, err := kai.CreateReplicatedJob(ctx, b.ns, name, "launcher")
	require.NoError(t, err)
	pgs := waitGrouped(t, ctx, launcher)
	_, err = kai.AssertNoneBound(ctx, b.ns, rjSelector(name, "launcher"), holdPeriod)
	require.NoError(t, err, "the worker's sub-group has no pod yet: KAI binds no launcher pod")
	pg := &v2alpha2.PodGroup{}
	for _, g := range pgs {
		require.NoError(t, kai.Client.Get(ctx, client.ObjectKeyFromObject(g), pg))
	}
	t.Logf("PodGroup %s during the race: %s", pg.Name, describe(pg))

	// The model on the PodGroup without the worker's sub-group (what gangmap wrote before
	// a35a8f4, releasing the launcher alone), with the pods that exist now.
	alone := pg.DeepCopy()
	alone.Spec.SubGroups = nil
	for _, sg := range pg.Spec.SubGroups {
		if sg.Name != "worker" && ptr.Deref(sg.Parent, "") != "worker" {
			alone.Spec.SubGroups = append(alone.Spec.SubGroups, sg)
		}
	}
	require.Less(t, len(alone.Spec.SubGroups), len(pg.Spec.SubGroups), "the PodGroup has the worker's sub-group")
	require.NotNil(t, alone.Spec.MinSubGroup)
	alone.Spec.MinSubGroup = ptr.To(*alone.Spec.MinSubGroup - 1)
	pods, err := kai.Pods(ctx, b.ns)
	require.NoError(t, err)
	var members []kaiadmission.Pod
	for i := range pods {
		if pods[i].Annotations[kaikeys.PodGroupName] == pg.Name {
			members = append(members, kaiadmission.PodFor(&pods[i]))
		}
	}
	v := kaiadmission.Evaluate(alone, members, nil)
	t.Logf("model, launcher released alone (%s): admitted %v, binds %v, not ready %v (finished %q): %s", describe(alone), v.Admitted, slices.Concat(v.Steps...), v.NotReady, v.Finished, v.Reason)
	if dep == "Ready" {
		assert.True(t, v.Admitted, "without the worker's sub-group KAI would admit the launcher alone")
		assert.Equal(t, []string{launcher[0].Name}, slices.Concat(v.Steps...))
	} else {
		assert.True(t, v.NotReady, "the initializer's finished pod, asked for by its sub-group, keeps KAI off it anyway")
		assert.Equal(t, initName, v.Finished)
	}

	// Phase 3: the JobSet's status and the worker's pods.
	_, err = kai.StepJobSet(ctx, b.ns, name)
	require.NoError(t, err)
	gang, err := labels.Parse(fmt.Sprintf("%s=%s,%s in (launcher,worker)", framework.LabelJobSetName, name, framework.LabelReplicatedJobName))
	require.NoError(t, err)
	admitAllOrNothing(t, b, gang, 5, 4)

	// In one go: the scheduler created the 5 pods' BindRequests in one session (allocate.go
	// commits a job's statement once its allocation attempt met the gang; cache.go logs each bind
	// request with the session's id).
	sessions := map[string][]string{}
	for _, pr := range kai.Processes() {
		if pr.Name != "scheduler" {
			continue
		}
		for _, line := range pr.Grep(100, "Creating bind request for task <"+b.ns+"/") {
			if m := bindRequestLine.FindStringSubmatch(line); m != nil && !strings.HasPrefix(m[2], name+"-"+initName) {
				sessions[m[1]] = append(sessions[m[1]], m[2])
			}
		}
	}
	assert.Len(t, sessions, 1, "the launcher's and the workers' bind requests, by scheduling session: %v", sessions)
}

// bindRequestLine is KAI's scheduler log line for one bind request (cache/cache.go): the session
// id and the pod's name.
var bindRequestLine = regexp.MustCompile(`\[(\w+)\] \[allocate\] Creating bind request for task <[^/]+/([^>]+)>`)
