package gang_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
)

// alphaLWS is the catalog LeaderWorkerSet definition with its gang in the alpha podGroups form,
// as upstream's Workload Map catalog writes it: one group whose member is the per-group component,
// grouped by the pod's group-index label.
func alphaLWS(t *testing.T, groups []definitions.PodGroupDefinition) *definitions.Compiled {
	t.Helper()
	r := registry(t)
	lws := r.Lookup(load(t, "lws-replicas2-size4-8gpu-limits.yaml").GroupVersionKind())
	k := *lws.Loaded.Karta
	k.Spec.OptimizationInstructions.GangScheduling = &definitions.GangSchedulingInstruction{PodGroups: groups}
	k.Spec.Gangmap = nil
	c, err := definitions.Compile(&definitions.Loaded{Karta: &k, Source: definitions.SourceFile, Origin: "test"}, r.Compiler())
	require.NoError(t, err)
	return c
}

func buildPlan(t *testing.T, c *definitions.Compiled, obj *unstructured.Unstructured) *gang.Plan {
	t.Helper()
	p, err := gang.Build(context.Background(), c, obj)
	require.NoError(t, err)
	return p
}

func podGroupNames(p *gang.Plan) []string {
	var out []string
	for _, pg := range p.PodGroups {
		out = append(out, pg.Name)
	}
	return out
}

// lwsPod is a pod of the LeaderWorkerSet sglang-large as the LWS controller labels it
// (leaderworkerset.sigs.k8s.io/name, group-index, worker-index: LWS pkg/controllers and
// pkg/webhooks/pod_webhook.go), as normalized JSON for PlacePod.
func lwsPod(group, worker string) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": "sglang-large-" + group + "-" + worker, "labels": map[string]any{
		"leaderworkerset.sigs.k8s.io/name":         "sglang-large",
		"leaderworkerset.sigs.k8s.io/group-index":  group,
		"leaderworkerset.sigs.k8s.io/worker-index": worker,
	}}, "spec": map[string]any{}}
}

// assignName places pod and returns the name of the PodGroup the plan puts it in.
func assignName(t *testing.T, c *definitions.Compiled, p *gang.Plan, pod map[string]any) string {
	t.Helper()
	pl, err := c.PlacePod(context.Background(), pod)
	require.NoError(t, err)
	a, err := p.Assign(pl)
	require.NoError(t, err)
	return a.Name
}

func gangPods(p *gang.Plan) int32 {
	var n int64
	for _, r := range p.Roles {
		n += r.GangPods
	}
	return int32(n)
}

// KAI's Karta fallback names an alpha-form PodGroup by the top owner's UID and the pod's own
// grouping-key values only: KAI pkg/podgrouper/podgrouper/plugins/karta/grouper.go
// getPodGroupMetadataAlpha evaluates the effective member's groupByKeyPaths on the pod (Karta
// pkg/resource/pod_querier.go ExtractGroupKeys: one non-empty result each, formatted "%v") and
// calcPodGroupName gives "pg-<UID>" + "-" + strings.Join(keys, "-"), or "pg-<UID>" without keys.
// gangmap names every pod's PodGroup the same, so a pod KAI grouped first is in the same object.
func TestAlphaFormNamedAsKAI(t *testing.T) {
	const uid = types.UID("0b8f3c1e-5d2a-4f6b-9c7d-1e2f3a4b5c6d")
	base := "pg-" + string(uid)
	groupIndex := definitions.JQExpr(`.metadata.labels["leaderworkerset.sigs.k8s.io/group-index"]`)
	lwsName := definitions.JQExpr(`.metadata.labels["leaderworkerset.sigs.k8s.io/name"]`)
	obj := load(t, "lws-replicas2-size4-8gpu-limits.yaml")
	obj.SetUID(uid)

	t.Run("grouped by the group index: one PodGroup per group, named by the key value", func(t *testing.T) {
		c := alphaLWS(t, []definitions.PodGroupDefinition{{Name: "lws-group", Members: []definitions.PodGroupMemberDefinition{{ComponentName: "group", GroupByKeyPaths: []definitions.Expr{groupIndex}}}}})
		p := buildPlan(t, c, obj)
		assert.Equal(t, []string{base + "-0", base + "-1"}, podGroupNames(p))
		assert.Equal(t, base+"-1", assignName(t, c, p, lwsPod("1", "2")))
	})

	t.Run("grouping keys without a per-replica split: the pod's key value is in the name", func(t *testing.T) {
		// The LWS name label is the same on every pod of the workload: one PodGroup of every
		// pod, named "pg-<UID>-sglang-large" by KAI for each of them.
		c := alphaLWS(t, []definitions.PodGroupDefinition{{Name: "all", Members: []definitions.PodGroupMemberDefinition{{ComponentName: "leaderworkerset", GroupByKeyPaths: []definitions.Expr{lwsName}}}}})
		p := buildPlan(t, c, obj)
		require.Len(t, p.PodGroups, 1)
		assert.Equal(t, base+`-{.metadata.labels["leaderworkerset.sigs.k8s.io/name"]}`, p.PodGroups[0].Name, "the plan cannot read an operator-set label before the pods exist")
		assert.Equal(t, gangPods(p), *p.PodGroups[0].MinMember)
		assert.Equal(t, base+"-sglang-large", assignName(t, c, p, lwsPod("0", "0")))
		assert.Equal(t, base+"-sglang-large", assignName(t, c, p, lwsPod("1", "3")))
	})

	t.Run("several keys are joined with -, numbers formatted as %v", func(t *testing.T) {
		c := alphaLWS(t, []definitions.PodGroupDefinition{{Name: "lws-group", Members: []definitions.PodGroupMemberDefinition{{ComponentName: "group",
			GroupByKeyPaths: []definitions.Expr{lwsName, definitions.JQExpr(`.metadata.labels["leaderworkerset.sigs.k8s.io/group-index"] | tonumber`)}}}}})
		p := buildPlan(t, c, obj)
		assert.Equal(t, base+"-sglang-large-1", assignName(t, c, p, lwsPod("1", "0")))
	})

	t.Run("a key the pod does not give: no PodGroup, as in KAI", func(t *testing.T) {
		c := alphaLWS(t, []definitions.PodGroupDefinition{{Name: "all", Members: []definitions.PodGroupMemberDefinition{{ComponentName: "leaderworkerset", GroupByKeyPaths: []definitions.Expr{definitions.JQExpr(`.metadata.labels["absent"]`)}}}}})
		p := buildPlan(t, c, obj)
		pl, err := c.PlacePod(context.Background(), lwsPod("0", "0"))
		require.NoError(t, err)
		_, err = p.Assign(pl)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `spec.optimizationInstructions.gangScheduling.podGroups[0].members[0].groupByKeyPaths[0] (.metadata.labels["absent"]): expected a non-empty value on the pod`)
	})

	t.Run("no grouping keys: pg-<UID>", func(t *testing.T) {
		c := alphaLWS(t, []definitions.PodGroupDefinition{{Name: "all", Members: []definitions.PodGroupMemberDefinition{{ComponentName: "leaderworkerset"}}}})
		p := buildPlan(t, c, obj)
		assert.Equal(t, []string{base}, podGroupNames(p))
		assert.Equal(t, base, assignName(t, c, p, lwsPod("1", "1")))
	})

	t.Run("two keyless gangs: one PodGroup, as KAI merges them, requiring both", func(t *testing.T) {
		c := alphaLWS(t, []definitions.PodGroupDefinition{
			{Name: "leaders", Members: []definitions.PodGroupMemberDefinition{{ComponentName: "leader"}}},
			{Name: "workers", Members: []definitions.PodGroupMemberDefinition{{ComponentName: "worker"}}},
		})
		p := buildPlan(t, c, obj)
		assert.Equal(t, []string{base}, podGroupNames(p))
		require.NotNil(t, p.PodGroups[0].MinMember)
		assert.Equal(t, gangPods(p), *p.PodGroups[0].MinMember, "every pod of both gangs")
		assert.Empty(t, p.PodGroups[0].SubGroups, "KAI's alpha path writes no sub-groups")
		assert.Equal(t, base, assignName(t, c, p, lwsPod("0", "0")))
		assert.Equal(t, base, assignName(t, c, p, lwsPod("0", "1")))
		assert.True(t, hasNote(p, `alpha pod groups "leaders" and "workers" are one PodGroup, `+base), "%v", p.Notes)
	})

	t.Run("roles of one gang with different key values: one PodGroup per value, said", func(t *testing.T) {
		role := definitions.JQExpr(`if .metadata.labels["leaderworkerset.sigs.k8s.io/worker-index"] == "0" then "leader" else "worker" end`)
		c := alphaLWS(t, []definitions.PodGroupDefinition{{Name: "by-role", Members: []definitions.PodGroupMemberDefinition{{ComponentName: "leaderworkerset", GroupByKeyPaths: []definitions.Expr{role}}}}})
		p := buildPlan(t, c, obj)
		assert.Equal(t, []string{base + "-leader", base + "-worker"}, podGroupNames(p))
		assert.Equal(t, base+"-leader", assignName(t, c, p, lwsPod("1", "0")))
		assert.Equal(t, base+"-worker", assignName(t, c, p, lwsPod("1", "2")))
		assert.True(t, hasNote(p, `alpha pod group "by-role" is 2 PodGroups`), "%v", p.Notes)
	})
}

// The current podGroup form keeps "pg-<UID>-<podGroup.name>[-<replica>]", KAI's v2 name.
func TestPodGroupFormNamedAsKAI(t *testing.T) {
	obj := load(t, "lws-replicas2-size4-8gpu-limits.yaml")
	obj.SetUID("u-1")
	p := plan(t, registry(t), obj)
	assert.Equal(t, []string{"pg-u-1-group-0", "pg-u-1-group-1"}, podGroupNames(p))
}

func TestAlphaPodGroupName(t *testing.T) {
	// KAI's calcPodGroupName, used as it is when it is a DNS-1123 subdomain.
	assert.Equal(t, "pg-u", gang.AlphaPodGroupName("u"))
	assert.Equal(t, "pg-u-a-b", gang.AlphaPodGroupName("u", "a", "b"))
	assert.Equal(t, "pg-u-a.b", gang.AlphaPodGroupName("u", "a.b"))
	// KAI refuses these (validatePodGroupNameFromGroupingKeys): gangmap fits them.
	assert.Equal(t, "pg-u-Frontend", gang.KAIAlphaName("u", "Frontend"))
	fitted := gang.AlphaPodGroupName("u", "Frontend")
	assert.Regexp(t, `^pg-u-frontend-[0-9a-f]{8}$`, fitted)
	assert.NotEqual(t, fitted, gang.AlphaPodGroupName("u", "frontend-"), "distinct KAI names stay distinct")
	long := gang.AlphaPodGroupName("u", strings.Repeat("k", 300))
	assert.Len(t, long, 253, "cut to a DNS-1123 subdomain")
	assert.Empty(t, validation.IsDNS1123Subdomain(long))
	assert.Empty(t, validation.IsDNS1123Subdomain(fitted))
}

func hasNote(p *gang.Plan, sub string) bool {
	for _, n := range p.Notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}
