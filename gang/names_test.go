package gang_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

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

// KAI's Karta fallback names an alpha-form PodGroup "pg-<top owner UID>" plus "-<value>" per
// grouping key (KAI plugins/karta/grouper.go calcPodGroupName), never with the group's name;
// gangmap names the same gang the same, so a pod KAI grouped first is in the same object.
func TestAlphaFormNamedAsKAI(t *testing.T) {
	const uid = types.UID("0b8f3c1e-5d2a-4f6b-9c7d-1e2f3a4b5c6d")
	groupIndex := definitions.JQExpr(`.metadata.labels["leaderworkerset.sigs.k8s.io/group-index"]`)

	t.Run("grouped by the group index: one PodGroup per group, named by the key value", func(t *testing.T) {
		c := alphaLWS(t, []definitions.PodGroupDefinition{{Name: "lws-group", Members: []definitions.PodGroupMemberDefinition{{ComponentName: "group", GroupByKeyPaths: []definitions.Expr{groupIndex}}}}})
		obj := load(t, "lws-replicas2-size4-8gpu-limits.yaml")
		obj.SetUID(uid)
		p := buildPlan(t, c, obj)
		assert.Equal(t, []string{"pg-" + string(uid) + "-0", "pg-" + string(uid) + "-1"}, podGroupNames(p))
	})

	t.Run("no grouping keys: pg-<UID>", func(t *testing.T) {
		c := alphaLWS(t, []definitions.PodGroupDefinition{{Name: "all", Members: []definitions.PodGroupMemberDefinition{{ComponentName: "leaderworkerset"}}}})
		obj := load(t, "lws-replicas2-size4-8gpu-limits.yaml")
		obj.SetUID(uid)
		p := buildPlan(t, c, obj)
		assert.Equal(t, []string{"pg-" + string(uid)}, podGroupNames(p))
	})

	t.Run("two keyless gangs: KAI would merge them, gangmap keeps the second apart and says so", func(t *testing.T) {
		c := alphaLWS(t, []definitions.PodGroupDefinition{
			{Name: "leaders", Members: []definitions.PodGroupMemberDefinition{{ComponentName: "leader"}}},
			{Name: "workers", Members: []definitions.PodGroupMemberDefinition{{ComponentName: "worker"}}},
		})
		obj := load(t, "lws-replicas2-size4-8gpu-limits.yaml")
		obj.SetUID(uid)
		p := buildPlan(t, c, obj)
		assert.Equal(t, []string{"pg-" + string(uid), "pg-" + string(uid) + "-workers"}, podGroupNames(p))
		assert.Contains(t, p.Notes, `alpha pod group "workers" would share PodGroup pg-`+string(uid)+` with another gang (KAI merges them); gangmap names it pg-`+string(uid)+`-workers`)
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
	assert.Equal(t, "pg-u", gang.AlphaPodGroupName("u"))
	assert.Equal(t, "pg-u-a-b", gang.AlphaPodGroupName("u", "a", "b"))
	long := gang.AlphaPodGroupName("u", strings.Repeat("k", 300))
	assert.Len(t, long, 253, "cut to a DNS-1123 subdomain")
}
