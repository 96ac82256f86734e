package gang_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
)

func registry(t testing.TB) *definitions.Registry {
	t.Helper()
	c, err := expr.NewCompiler(expr.DefaultLimits())
	require.NoError(t, err)
	r := definitions.NewRegistry(c)
	require.NoError(t, catalog.Register(r))
	require.Empty(t, r.Problems())
	return r
}

func load(t testing.TB, file string) *unstructured.Unstructured {
	t.Helper()
	objs, err := manifest.ReadFile("testdata/" + file)
	require.NoError(t, err)
	require.NotEmpty(t, objs)
	return objs[0]
}

func plan(t testing.TB, r *definitions.Registry, obj *unstructured.Unstructured) *gang.Plan {
	t.Helper()
	c := r.Lookup(obj.GroupVersionKind())
	require.NotNil(t, c, "definition for %s", obj.GroupVersionKind())
	p, err := gang.Build(context.Background(), c, obj)
	require.NoError(t, err)
	return p
}

type wantSub struct {
	name string
	min  int32
}

func subGroups(pg *gang.PodGroup) []wantSub {
	var out []wantSub
	for _, sg := range pg.SubGroups {
		out = append(out, wantSub{sg.Name, *sg.MinMember})
	}
	return out
}

type wantRole struct {
	name                         string
	replicas, min, pods, gangPod int64
	gpusPerPod                   gang.GPUs
}

func roles(p *gang.Plan) []wantRole {
	var out []wantRole
	for _, r := range p.Roles {
		out = append(out, wantRole{r.Name, r.Replicas, r.MinReplicas, r.Pods, r.GangPods, r.GPUsPerPod})
	}
	return out
}

// The seed example: leader 1 replica and workers 2 replicas, parallelism 1 (one pod per Job),
// 4 GPUs a pod: one JobSet is one workload and one gang of 3 pods, 12 GPUs.
func TestSeedJobSet(t *testing.T) {
	p := plan(t, registry(t), load(t, "jobset-leader-workers.yaml"))
	require.Len(t, p.PodGroups, 1)
	pg := p.PodGroups[0]
	assert.Equal(t, "pg-train-llm-jobset", pg.Name)
	assert.Nil(t, pg.MinMember)
	assert.Equal(t, ptr.To[int32](2), pg.MinSubGroup)
	assert.Equal(t, []wantSub{{"leader", 1}, {"workers", 2}}, subGroups(pg))
	assert.Equal(t, []wantRole{{"leader", 1, 1, 1, 1, gang.WholeGPUs(4)}, {"workers", 2, 2, 2, 2, gang.WholeGPUs(4)}}, roles(p))
	assert.Equal(t, gang.WholeGPUs(12), p.TotalGPUs)
	assert.Equal(t, gang.WholeGPUs(12), pg.GPUs)
}

// JobSet docs: replicas default 1; a Job runs min(parallelism, completions) pods at once.
func TestJobSetParallelism(t *testing.T) {
	r := registry(t)
	p := plan(t, r, load(t, "jobset-paralleljobs-two-rjobs.yaml"))
	// workers: replicas omitted (1) × parallelism 4; driver: 1 × 1.
	assert.Equal(t, []wantRole{{"workers", 1, 1, 4, 4, 0}, {"driver", 1, 1, 1, 1, 0}}, roles(p))
	assert.Equal(t, []wantSub{{"workers", 4}, {"driver", 1}}, subGroups(p.PodGroups[0]))

	// TPU multislice: replicas 2 × parallelism 4 = 8 pods; TPUs are not GPUs.
	p = plan(t, r, load(t, "jobset-tpu-multislice-replicas2.yaml"))
	require.Len(t, p.Roles, 1)
	assert.Equal(t, int64(8), p.Roles[0].Pods)
	assert.Equal(t, gang.GPUs(0), p.TotalGPUs)
}

// LWS docs: replicas groups of size pods (leader + size-1 workers); the all-or-nothing unit is a
// group. replicas 2, size 4, 8 GPUs a pod in limits: 2 PodGroups of leader 1 + worker 3, 32 GPUs
// each, 64 in total — never size × replicas × size.
func TestLeaderWorkerSetPerGroup(t *testing.T) {
	p := plan(t, registry(t), load(t, "lws-replicas2-size4-8gpu-limits.yaml"))
	require.Len(t, p.PodGroups, 2)
	for i, pg := range p.PodGroups {
		assert.Equal(t, []string{"pg-sglang-large-group-0", "pg-sglang-large-group-1"}[i], pg.Name)
		assert.Equal(t, ptr.To[int32](2), pg.MinSubGroup)
		assert.Nil(t, pg.MinMember)
		assert.Equal(t, []wantSub{{"leader", 1}, {"worker", 3}}, subGroups(pg))
		assert.Equal(t, int64(4), pg.Pods)
		assert.Equal(t, gang.WholeGPUs(32), pg.GPUs)
	}
	assert.Equal(t, gang.WholeGPUs(64), p.TotalGPUs)
}

// LWS docs: without a leaderTemplate the leader uses the worker template.
func TestLeaderWorkerSetNoLeaderTemplate(t *testing.T) {
	p := plan(t, registry(t), load(t, "lws-volcano-worker-only-size4.yaml"))
	obj := load(t, "lws-volcano-worker-only-size4.yaml")
	replicas, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	require.Len(t, p.PodGroups, int(replicas))
	assert.Equal(t, []wantSub{{"leader", 1}, {"worker", 3}}, subGroups(p.PodGroups[0]))
	assert.Equal(t, p.Roles[1].GPUsPerPod, p.Roles[0].GPUsPerPod, "leader uses the worker template")
}

// LWS startupPolicy LeaderReady: workers are created after the leader is ready, so the gang must
// not wait for them (it would deadlock): worker minimum 0, minSubGroup 1.
func TestLeaderReadyDoesNotWaitForWorkers(t *testing.T) {
	obj := load(t, "lws-replicas2-size4-8gpu-limits.yaml")
	require.NoError(t, unstructured.SetNestedField(obj.Object, "LeaderReady", "spec", "startupPolicy"))
	p := plan(t, registry(t), obj)
	for _, pg := range p.PodGroups {
		// The workers' sub-group keeps its size − 1 = 3 (they start together once the leader is
		// ready), but only the leader's sub-group is required.
		assert.Equal(t, []wantSub{{"leader", 1}, {"worker", 3}}, subGroups(pg))
		assert.Equal(t, ptr.To[int32](1), pg.MinSubGroup)
	}
	assert.Contains(t, strings.Join(p.Notes, "\n"), "role worker is kept out of the gang minimum")
}

// JobSet startupPolicyOrder InOrder: the controller creates a replicated job only after every one
// before it has all Jobs started (ready + failed + succeeded == replicas), so before any status
// only the first counts towards the gang; once the leader's Job is ready, both do.
func TestJobSetInOrder(t *testing.T) {
	obj := load(t, "jobset-leader-workers.yaml")
	require.NoError(t, unstructured.SetNestedField(obj.Object, "InOrder", "spec", "startupPolicy", "startupPolicyOrder"))
	p := plan(t, registry(t), obj)
	assert.Equal(t, []wantSub{{"leader", 1}, {"workers", 2}}, subGroups(p.PodGroups[0]))
	assert.Equal(t, ptr.To[int32](1), p.PodGroups[0].MinSubGroup)
	require.NoError(t, unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"name": "leader", "ready": int64(1)}}, "status", "replicatedJobsStatus"))
	p = plan(t, registry(t), obj)
	assert.Equal(t, []wantSub{{"leader", 1}, {"workers", 2}}, subGroups(p.PodGroups[0]))
	assert.Equal(t, ptr.To[int32](2), p.PodGroups[0].MinSubGroup)
}

func TestOverrides(t *testing.T) {
	r := registry(t)
	def := flatDefinition(t, r)
	obj := load(t, "jobset-leader-workers.yaml")
	cases := map[string]struct {
		ann     map[string]string
		want    int32
		applied bool
	}{
		"no override":             {nil, 3, false},
		"gangmap override":        {map[string]string{gang.AnnotationMinMember: "2"}, 2, true},
		"gangmap wins over KAI":   {map[string]string{gang.AnnotationMinMember: "1", gang.AnnotationKAIBatchMinMember: "2"}, 1, true},
		"KAI override":            {map[string]string{gang.AnnotationKAIBatchMinMember: "2"}, 2, true},
		"below 1 refused":         {map[string]string{gang.AnnotationMinMember: "0"}, 3, false},
		"above the pods refused":  {map[string]string{gang.AnnotationMinMember: "4"}, 3, false},
		"not a number is refused": {map[string]string{gang.AnnotationMinMember: "all"}, 3, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := obj.DeepCopy()
			o.SetAnnotations(tc.ann)
			p, err := gang.Build(context.Background(), def, o)
			require.NoError(t, err)
			require.Len(t, p.PodGroups, 1)
			assert.Equal(t, ptr.To(tc.want), p.PodGroups[0].MinMember)
			if tc.ann != nil {
				require.Len(t, p.Overrides, 1)
				assert.Equal(t, tc.applied, p.Overrides[0].Applied, p.Overrides[0].Reason)
			}
		})
	}
}

// flatDefinition is the catalog JobSet definition without sub-groups (minMember form).
func flatDefinition(t *testing.T, r *definitions.Registry) *definitions.Compiled {
	js := r.Lookup(load(t, "jobset-leader-workers.yaml").GroupVersionKind())
	k := *js.Loaded.Karta
	pg := *k.Spec.OptimizationInstructions.GangScheduling.PodGroup
	pg.SubGroups = nil
	k.Spec.OptimizationInstructions.GangScheduling = &definitions.GangSchedulingInstruction{PodGroup: &pg}
	c, err := definitions.Compile(&definitions.Loaded{Karta: &k, Source: definitions.SourceFile, Origin: "test"}, r.Compiler())
	require.NoError(t, err)
	return c
}

// A missing role or spec is zero pods, never a crash, and no PodGroup gets a made-up size.
func TestMissingSpecAndZeroReplicas(t *testing.T) {
	r := registry(t)
	obj := load(t, "jobset-leader-workers.yaml")
	unstructured.RemoveNestedField(obj.Object, "spec")
	p := plan(t, r, obj)
	assert.Empty(t, p.PodGroups)
	assert.Empty(t, p.Roles)

	obj = load(t, "lws-replicas2-size4-8gpu-limits.yaml")
	require.NoError(t, unstructured.SetNestedField(obj.Object, int64(0), "spec", "replicas"))
	p = plan(t, r, obj)
	assert.Empty(t, p.PodGroups, "zero groups: nothing to group")
}

func TestBadReplicaValues(t *testing.T) {
	r := registry(t)
	for name, v := range map[string]any{"negative": int64(-1), "string": "two", "beyond int32": int64(1) << 40} {
		t.Run(name, func(t *testing.T) {
			obj := load(t, "lws-replicas2-size4-8gpu-limits.yaml")
			require.NoError(t, unstructured.SetNestedField(obj.Object, v, "spec", "replicas"))
			_, err := gang.Build(context.Background(), r.Lookup(obj.GroupVersionKind()), obj)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "replicasPath", "the error names the field path")
		})
	}
}

func TestAssign(t *testing.T) {
	r := registry(t)
	obj := load(t, "lws-replicas2-size4-8gpu-limits.yaml")
	c := r.Lookup(obj.GroupVersionKind())
	p := plan(t, r, obj)
	pod := map[string]any{"metadata": map[string]any{"labels": map[string]any{
		"leaderworkerset.sigs.k8s.io/group-index": "1", "leaderworkerset.sigs.k8s.io/worker-index": "2"}}}
	pl, err := c.PlacePod(context.Background(), pod)
	require.NoError(t, err)
	a, err := p.Assign(pl)
	require.NoError(t, err)
	assert.Equal(t, "pg-sglang-large-group-1", a.PodGroup.Name)
	assert.Equal(t, "worker", a.SubGroup.Name)

	pod["metadata"].(map[string]any)["labels"].(map[string]any)["leaderworkerset.sigs.k8s.io/group-index"] = "7"
	pl, err = c.PlacePod(context.Background(), pod)
	require.NoError(t, err)
	_, err = p.Assign(pl)
	assert.ErrorContains(t, err, `replica "7"`)
	var nip *gang.NotInPlanError
	require.ErrorAs(t, err, &nip, "a replica the plan does not count is outside the plan")
	assert.ErrorIs(t, err, gang.ErrNotInPlan)
	assert.Equal(t, "worker replica 7", nip.Instance, "worker-index 2 is a worker pod of group 7")
}

// TestAssignOutsidePlan: the seed JobSet (replicatedJobs leader and workers) has no instance
// "evaluator"; a pod the JobSet controller labels jobset.sigs.k8s.io/replicatedjob-name:
// evaluator (a replicated job added since the plan, or one the definition does not list) is
// outside the plan, ErrNotInPlan naming the instance, and not ErrNotGrouped (its role is not a
// known role outside every gang).
func TestAssignOutsidePlan(t *testing.T) {
	r := registry(t)
	obj := load(t, "jobset-leader-workers.yaml")
	c := r.Lookup(obj.GroupVersionKind())
	p := plan(t, r, obj)
	pod := map[string]any{"metadata": map[string]any{"labels": map[string]any{
		"jobset.sigs.k8s.io/replicatedjob-name": "evaluator", "jobset.sigs.k8s.io/job-index": "0"}}}
	pl, err := c.PlacePod(context.Background(), pod)
	require.NoError(t, err)
	_, err = p.Assign(pl)
	var nip *gang.NotInPlanError
	require.ErrorAs(t, err, &nip)
	assert.ErrorIs(t, err, gang.ErrNotInPlan)
	assert.NotErrorIs(t, err, gang.ErrNotGrouped)
	assert.Equal(t, `component "replicatedjob" has no instance "evaluator" in the plan`, err.Error())
}

// JobSet TPU multislice: replicas 2 × parallelism 4. Each Job is a slice whose 4 pods belong
// together, so the replicated job gets a parent sub-group requiring both Jobs and a leaf of 4 pods
// per Job; a pod joins the leaf of its jobset.sigs.k8s.io/job-index.
func TestPerReplicaLeavesForMultiPodReplicas(t *testing.T) {
	r := registry(t)
	obj := load(t, "jobset-tpu-multislice-replicas2.yaml")
	p := plan(t, r, obj)
	require.Len(t, p.PodGroups, 1)
	pg := p.PodGroups[0]
	require.Len(t, pg.SubGroups, 3)
	parent := pg.SubGroups[0]
	assert.Equal(t, "slice", parent.Name)
	assert.Nil(t, parent.MinMember)
	assert.Equal(t, ptr.To[int32](2), parent.MinSubGroup)
	for i, leaf := range pg.SubGroups[1:] {
		assert.Equal(t, fmt.Sprintf("slice-%d", i), leaf.Name)
		assert.Equal(t, ptr.To("slice"), leaf.Parent)
		assert.Equal(t, ptr.To[int32](4), leaf.MinMember)
	}
	assert.Equal(t, ptr.To[int32](1), pg.MinSubGroup, "one top-level sub-group")

	c := r.Lookup(obj.GroupVersionKind())
	pod := map[string]any{"metadata": map[string]any{"labels": map[string]any{
		"jobset.sigs.k8s.io/replicatedjob-name": "slice", "jobset.sigs.k8s.io/job-index": "1"}}}
	pl, err := c.PlacePod(context.Background(), pod)
	require.NoError(t, err)
	a, err := p.Assign(pl)
	require.NoError(t, err)
	assert.Equal(t, "slice-1", a.SubGroup.Name)

	delete(pod["metadata"].(map[string]any)["labels"].(map[string]any), "jobset.sigs.k8s.io/job-index")
	pl, err = c.PlacePod(context.Background(), pod)
	require.NoError(t, err)
	_, err = p.Assign(pl)
	assert.ErrorContains(t, err, "job-index")
}

// KAI before v0.15 has no minSubGroup (kai-releases.md §3): the seed JobSet becomes one flat
// gang of its 3 pods (leader 1 + workers 2), no sub-groups; roles and GPUs stay. The TPU
// multislice (replicas 2 × parallelism 4, per-replica leaves) becomes minMember 8; a pod is then
// assigned no sub-group.
func TestFlatten(t *testing.T) {
	r := registry(t)
	p := plan(t, r, load(t, "jobset-leader-workers.yaml"))
	p.Flatten("flat for KAI v0.14")
	pg := p.PodGroups[0]
	assert.Equal(t, ptr.To[int32](3), pg.MinMember)
	assert.Nil(t, pg.MinSubGroup)
	assert.Empty(t, pg.SubGroups)
	assert.Equal(t, gang.WholeGPUs(12), pg.GPUs)
	assert.Equal(t, []wantRole{{"leader", 1, 1, 1, 1, gang.WholeGPUs(4)}, {"workers", 2, 2, 2, 2, gang.WholeGPUs(4)}}, roles(p))
	assert.Contains(t, p.Notes, "flat for KAI v0.14")
	for _, m := range pg.Members() {
		assert.Nil(t, m.SubGroup)
	}

	obj := load(t, "jobset-tpu-multislice-replicas2.yaml")
	p = plan(t, r, obj)
	p.Flatten("")
	assert.Equal(t, ptr.To[int32](8), p.PodGroups[0].MinMember)
	assert.Empty(t, p.Notes)
	c := r.Lookup(obj.GroupVersionKind())
	pl, err := c.PlacePod(context.Background(), map[string]any{"metadata": map[string]any{"labels": map[string]any{
		"jobset.sigs.k8s.io/replicatedjob-name": "slice", "jobset.sigs.k8s.io/job-index": "1"}}})
	require.NoError(t, err)
	a, err := p.Assign(pl)
	require.NoError(t, err)
	assert.Nil(t, a.SubGroup)

	// LeaderReady: workers out of the gang minimum: minMember is the leader alone, per group.
	obj = load(t, "lws-replicas2-size4-8gpu-limits.yaml")
	require.NoError(t, unstructured.SetNestedField(obj.Object, "LeaderReady", "spec", "startupPolicy"))
	p = plan(t, r, obj)
	p.Flatten("flattened for the test")
	for _, pg := range p.PodGroups {
		assert.Equal(t, ptr.To[int32](1), pg.MinMember)
	}
	assert.Equal(t, 1, strings.Count(strings.Join(p.Notes, "\n"), "flattened for the test"))
}

// The min-member annotations on a PodGroup with sub-groups (JobSet: leader 1 pod, workers 2):
// kai.scheduler/batch-min-member counts sub-groups as KAI's JobSet plugin does
// (computePodGroupMinSubGroup: minSubGroup = min(value, replicated jobs), leaf minima kept);
// gangmap.io/min-member counts pods: a flat minMember, sub-groups kept for placement at 0.
func TestOverridesOnSubGroups(t *testing.T) {
	obj := load(t, "jobset-leader-workers.yaml")
	cases := map[string]struct {
		ann         map[string]string
		minMember   *int32
		minSubGroup *int32
		subs        []wantSub
		applied     bool
	}{
		"none":                     {nil, nil, ptr.To[int32](2), []wantSub{{"leader", 1}, {"workers", 2}}, false},
		"KAI: one replicated job":  {map[string]string{gang.AnnotationKAIBatchMinMember: "1"}, nil, ptr.To[int32](1), []wantSub{{"leader", 1}, {"workers", 2}}, true},
		"KAI: capped at the count": {map[string]string{gang.AnnotationKAIBatchMinMember: "5"}, nil, ptr.To[int32](2), []wantSub{{"leader", 1}, {"workers", 2}}, true},
		"KAI: below 1 refused":     {map[string]string{gang.AnnotationKAIBatchMinMember: "0"}, nil, ptr.To[int32](2), []wantSub{{"leader", 1}, {"workers", 2}}, false},
		"gangmap: 2 pods":          {map[string]string{gang.AnnotationMinMember: "2"}, ptr.To[int32](2), nil, []wantSub{{"leader", 0}, {"workers", 0}}, true},
		"gangmap wins over KAI":    {map[string]string{gang.AnnotationMinMember: "3", gang.AnnotationKAIBatchMinMember: "1"}, ptr.To[int32](3), nil, []wantSub{{"leader", 0}, {"workers", 0}}, true},
		"gangmap: above the pods":  {map[string]string{gang.AnnotationMinMember: "4"}, nil, ptr.To[int32](2), []wantSub{{"leader", 1}, {"workers", 2}}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := obj.DeepCopy()
			o.SetAnnotations(tc.ann)
			p := plan(t, registry(t), o)
			require.Len(t, p.PodGroups, 1)
			pg := p.PodGroups[0]
			assert.Equal(t, tc.minMember, pg.MinMember)
			assert.Equal(t, tc.minSubGroup, pg.MinSubGroup)
			assert.Equal(t, tc.subs, subGroups(pg))
			if tc.ann != nil {
				require.Len(t, p.Overrides, 1)
				assert.Equal(t, tc.applied, p.Overrides[0].Applied, p.Overrides[0].Reason)
				assert.Equal(t, tc.applied, p.Overrides[0].Effect != "", "an applied override says what it set")
			}
		})
	}
}

// TestNegativeComputedCountNamesTheExpression: the DisaggregatedSet definition counts a role's
// workers as leaderWorkerTemplate.size − 1 (a LeaderWorkerSet group is a leader and size − 1
// workers). A workload with size -5 makes that -6; the error names the expression that
// computed it and the field it reads, not only the computed value the user never wrote (found by
// the new-user review: "size: -5 ... got -6").
func TestNegativeComputedCountNamesTheExpression(t *testing.T) {
	r := registry(t)
	objs, err := manifest.ReadFile("../definitions/catalog/testdata/disaggregatedset-slices2-prefill-decode.yaml")
	require.NoError(t, err)
	obj := objs[0]
	roles, _, err := unstructured.NestedSlice(obj.Object, "spec", "roles")
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(roles[0].(map[string]any), int64(-5), "spec", "leaderWorkerTemplate", "size"))
	require.NoError(t, unstructured.SetNestedSlice(obj.Object, roles, "spec", "roles"))
	_, err = gang.Build(context.Background(), r.Lookup(obj.GroupVersionKind()), obj)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `spec.gangmap.components[worker].podsPerReplicaPath (instance "prefill-worker"): expected a count >= 0, got -6 from .spec.roles[]? | (.spec.leaderWorkerTemplate.size // 1) - 1 on the workload (check the workload fields it reads)`)
}

// TestGPUSumOutOfRangeIsAnError (issue 28): 8 pods of 9 × 10^11 devices each (each pod within
// range, their sum past gang.MaxGPUs) make the plan fail with an error naming the role, never
// a negative gangmap.io/gpus or GPU metric; 8 devices a pod stay exact.
func TestGPUSumOutOfRangeIsAnError(t *testing.T) {
	r := registry(t)
	obj := load(t, "lws-replicas2-size4-8gpu-limits.yaml")
	p := plan(t, r, obj)
	assert.Equal(t, gang.WholeGPUs(64), p.TotalGPUs)
	for _, tpl := range []string{"leaderTemplate", "workerTemplate"} {
		ctrs, _, err := unstructured.NestedSlice(obj.Object, "spec", "leaderWorkerTemplate", tpl, "spec", "containers")
		require.NoError(t, err)
		ctrs[0].(map[string]any)["resources"] = map[string]any{"limits": map[string]any{"nvidia.com/gpu": "900000000000"}}
		require.NoError(t, unstructured.SetNestedSlice(obj.Object, ctrs, "spec", "leaderWorkerTemplate", tpl, "spec", "containers"))
	}
	_, err := gang.Build(context.Background(), r.Lookup(obj.GroupVersionKind()), obj)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is more than gangmap counts")
	assert.Contains(t, err.Error(), "role ")
}
