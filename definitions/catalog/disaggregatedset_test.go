package catalog_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/gang"
)

// DisaggregatedSet (LWS project, disaggregatedset.x-k8s.io/v1): a new multi-role serving kind of
// a project the catalog covers (issue 14 item 4). Samples: the LWS repository's
// config/samples (unchanged). Semantics: one LeaderWorkerSet per role per slice
// (lws_manager.go Create), spec.replicas groups per slice, size pods a group (a leader and
// size − 1 workers); one PodGroup per slice, all roles required.

func TestDisaggregatedSet(t *testing.T) {
	cases := map[string]planWant{
		// slices 2; prefill and decode, replicas 2 each, size 1 (leaders only): per slice 2 + 2
		// pods; across the set 4 prefill and 4 decode groups.
		"disaggregatedset-slices2-prefill-decode.yaml": {
			podGroups: []podGroupWant{
				{name: "pg-disaggregatedset-sample-slice-0", minSubGroup: 2, pods: 4, subGroups: []subGroupWant{{"prefill", 2, 2}, {"decode", 2, 2}}},
				{name: "pg-disaggregatedset-sample-slice-1", minSubGroup: 2, pods: 4, subGroups: []subGroupWant{{"prefill", 2, 2}, {"decode", 2, 2}}},
			},
			roles: []roleWant{
				{"prefill", 4, 4, 4, 4, 0}, // 2 replicas × 2 slices, one leader each
				{"decode", 4, 4, 4, 4, 0},
				{"prefill-worker", 4, 4, 0, 0, 0}, // size 1: no workers
				{"decode-worker", 4, 4, 0, 0, 0},
			},
		},
		// One slice (default); prefill replicas 4 × size 2 (leader + 1 worker from the worker
		// template: no leaderTemplate), decode and encode replicas 2 × size 1.
		"disaggregatedset-3role-prefill-size2.yaml": {
			podGroups: []podGroupWant{{
				name: "pg-disaggregatedset-3role-sample-slice-0", minSubGroup: 4, pods: 12,
				subGroups: []subGroupWant{{"prefill", 4, 4}, {"decode", 2, 2}, {"encode", 2, 2}, {"prefill-worker", 4, 4}},
			}},
			roles: []roleWant{
				{"prefill", 4, 4, 4, 4, 0},
				{"decode", 2, 2, 2, 2, 0},
				{"encode", 2, 2, 2, 2, 0},
				{"prefill-worker", 4, 4, 4, 4, 0}, // 4 groups × (2 − 1)
				{"decode-worker", 2, 2, 0, 0, 0},
				{"encode-worker", 2, 2, 0, 0, 0},
			},
		},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) { checkPlan(t, file, want) })
	}
}

// disaggregatedSetPlan plans the 3-role sample after edit.
func disaggregatedSetPlan(t *testing.T, edit func(obj *unstructured.Unstructured)) *gang.Plan {
	t.Helper()
	obj := workloadOf(t, "disaggregatedset-3role-prefill-size2.yaml")
	edit(obj)
	p, err := gang.Build(context.Background(), catalogRegistry(t).Lookup(obj.GroupVersionKind()), obj)
	require.NoError(t, err)
	return p
}

// The 3-role sample made multi-node GPU serving, values changed in the test: prefill groups of
// size 4 with 8 GPUs in the worker template (no leaderTemplate: the leader runs it too) and the
// LWS startupPolicy LeaderReady; 2 slices. Per slice: 4 prefill leaders + 4 × 3 workers = 16
// prefill pods × 8 GPUs; the prefill workers are created only after their leader is Ready
// (LeaderReady), so their sub-group is held: minSubGroup counts prefill, decode, encode.
func TestDisaggregatedSetLeaderReadyAndGPUs(t *testing.T) {
	p := disaggregatedSetPlan(t, func(obj *unstructured.Unstructured) {
		roles, _, _ := unstructured.NestedSlice(obj.Object, "spec", "roles")
		prefill := roles[0].(map[string]any)
		require.NoError(t, unstructured.SetNestedField(prefill, "LeaderReady", "spec", "startupPolicy"))
		require.NoError(t, unstructured.SetNestedField(prefill, int64(4), "spec", "leaderWorkerTemplate", "size"))
		containers, _, _ := unstructured.NestedSlice(prefill, "spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers")
		require.NoError(t, unstructured.SetNestedField(containers[0].(map[string]any), "8", "resources", "limits", "nvidia.com/gpu"))
		require.NoError(t, unstructured.SetNestedSlice(prefill, containers, "spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers"))
		require.NoError(t, unstructured.SetNestedSlice(obj.Object, roles, "spec", "roles"))
		require.NoError(t, unstructured.SetNestedField(obj.Object, int64(2), "spec", "slices"))
	})
	require.Len(t, p.PodGroups, 2)
	for i, pg := range p.PodGroups {
		assert.Equal(t, []string{"pg-disaggregatedset-3role-sample-slice-0", "pg-disaggregatedset-3role-sample-slice-1"}[i], pg.Name)
		assert.Equal(t, int64(4+12+2+2), pg.Pods, pg.Name) // prefill 4 + 4×3, decode 2, encode 2
		if assert.NotNil(t, pg.MinSubGroup, pg.Name) {
			assert.Equal(t, int32(3), *pg.MinSubGroup, "%s: prefill-worker held by LeaderReady", pg.Name)
		}
	}
	got := map[string][2]int64{}
	for _, r := range p.Roles {
		got[r.Name] = [2]int64{r.Pods, r.GangPods}
		if r.Name == "prefill" || r.Name == "prefill-worker" {
			assert.InDelta(t, 8, r.GPUsPerPod.Devices(), 1e-9, r.Name)
		}
	}
	assert.Equal(t, [2]int64{8, 8}, got["prefill"])         // 4 groups × 2 slices
	assert.Equal(t, [2]int64{24, 0}, got["prefill-worker"]) // 8 groups × 3 workers, held
	assert.Equal(t, [2]int64{4, 4}, got["decode"])
	assert.InDelta(t, 32*8, p.TotalGPUs.Devices(), 1e-9) // 2 slices × 16 prefill pods × 8
}

// A role with scaling.mode External takes its replicas from its DisaggregatedSetRoleScaler
// (HPA): the definition reads the controller's status.roleStatuses (value changed in the test:
// decode External, status 3 groups), else the scaler's seed 1.
func TestDisaggregatedSetExternalScaling(t *testing.T) {
	external := func(obj *unstructured.Unstructured) {
		roles, _, _ := unstructured.NestedSlice(obj.Object, "spec", "roles")
		require.NoError(t, unstructured.SetNestedField(roles[1].(map[string]any), "External", "scaling", "mode"))
		require.NoError(t, unstructured.SetNestedSlice(obj.Object, roles, "spec", "roles"))
	}
	decode := func(p *gang.Plan) int64 {
		for _, r := range p.Roles {
			if r.Name == "decode" {
				return r.Pods
			}
		}
		t.Fatal("no decode role")
		return 0
	}
	assert.Equal(t, int64(1), decode(disaggregatedSetPlan(t, external)), "no status yet: the scaler's seed")
	assert.Equal(t, int64(3), decode(disaggregatedSetPlan(t, func(obj *unstructured.Unstructured) {
		external(obj)
		require.NoError(t, unstructured.SetNestedSlice(obj.Object, []any{
			map[string]any{"name": "prefill", "replicas": int64(4)},
			map[string]any{"name": "decode", "replicas": int64(3)},
		}, "status", "roleStatuses"))
	})))
}

// TestDisaggregatedSetPodLabels places pods with the labels the DisaggregatedSet controller
// merges into its LWS pod templates (lws_manager.go Create, utils.go GenerateLabels) plus the
// LWS group-index/worker-index labels. A pod from before slices (no slice label) is slice 0.
func TestDisaggregatedSetPodLabels(t *testing.T) {
	pod := func(set, role, slice, workerIndex string) map[string]string {
		l := map[string]string{
			"app":                                      set + "-" + slice + "-" + role,
			"disaggregatedset.x-k8s.io/name":           set,
			"disaggregatedset.x-k8s.io/role":           role,
			"disaggregatedset.x-k8s.io/revision":       "6d5f8c7b9",
			"leaderworkerset.sigs.k8s.io/group-index":  "0",
			"leaderworkerset.sigs.k8s.io/worker-index": workerIndex,
		}
		if slice != "" {
			l["disaggregatedset.x-k8s.io/slice"] = slice
		}
		return l
	}
	const two = "disaggregatedset-slices2-prefill-decode.yaml"
	const three = "disaggregatedset-3role-prefill-size2.yaml"
	assertOperatorPods(t, map[string]operatorPod{
		"slice 1 decode leader":  {two, pod("disaggregatedset-sample", "decode", "1", "0"), "pg-disaggregatedset-sample-slice-1", "decode", true},
		"slice 0 prefill leader": {two, pod("disaggregatedset-sample", "prefill", "0", "0"), "pg-disaggregatedset-sample-slice-0", "prefill", true},
		"pre-slices pod":         {two, pod("disaggregatedset-sample", "prefill", "", "0"), "pg-disaggregatedset-sample-slice-0", "prefill", true},
		"prefill worker":         {three, pod("disaggregatedset-3role-sample", "prefill", "0", "1"), "pg-disaggregatedset-3role-sample-slice-0", "prefill-worker", true},
		"encode leader":          {three, pod("disaggregatedset-3role-sample", "encode", "0", "0"), "pg-disaggregatedset-3role-sample-slice-0", "encode", true},
	})
	_, err := assignPod(t, three, map[string]string{"leaderworkerset.sigs.k8s.io/worker-index": "0"})
	assert.Error(t, err, "a pod without the role label matches no role")
}

// Two LeaderReady roles wait each for its own leaders: their worker roles get release keys of
// their own (gang.Role.ReleaseKey, the holds reason names the role), so a prefill worker pod
// never releases decode's workers, which its operator creates only once decode's leaders are
// Ready.
func TestDisaggregatedSetLeaderReadyRolesReleaseApart(t *testing.T) {
	p := disaggregatedSetPlan(t, func(obj *unstructured.Unstructured) {
		roles, _, _ := unstructured.NestedSlice(obj.Object, "spec", "roles")
		for _, i := range []int{0, 1} {
			role := roles[i].(map[string]any)
			require.NoError(t, unstructured.SetNestedField(role, "LeaderReady", "spec", "startupPolicy"))
			require.NoError(t, unstructured.SetNestedField(role, int64(3), "spec", "leaderWorkerTemplate", "size"))
		}
		require.NoError(t, unstructured.SetNestedSlice(obj.Object, roles, "spec", "roles"))
	})
	keys := map[string]string{}
	for _, r := range p.Roles {
		if r.StartupHold != "" {
			keys[r.Name] = r.ReleaseKey()
		}
	}
	require.Len(t, keys, 2, "prefill-worker and decode-worker are held: %v", keys)
	assert.NotEqual(t, keys["prefill-worker"], keys["decode-worker"])
	assert.Contains(t, keys["prefill-worker"], "role prefill's workers")
}
