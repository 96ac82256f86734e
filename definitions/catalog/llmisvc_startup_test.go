package catalog_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
)

// variableRegistry is a registry of the catalog in which the spec.variables entry name of the
// definition def is the CEL expression value (as an admin edits a catalog definition's option).
func variableRegistry(t *testing.T, def, name, value string) *definitions.Registry {
	t.Helper()
	ls, err := catalog.Load()
	require.NoError(t, err)
	edited := 0
	for _, l := range ls {
		if l.Karta.Metadata.Name != def {
			continue
		}
		for i, v := range l.Karta.Spec.Variables {
			if v.Name == name {
				l.Karta.Spec.Variables[i].Expression = value
				edited++
			}
		}
	}
	require.Equal(t, 1, edited, "%s carries the variable %s", def, name)
	compiler, err := expr.NewCompiler(expr.Limits{})
	require.NoError(t, err)
	r := definitions.NewRegistry(compiler)
	r.SetSource(definitions.SourceCatalog, ls)
	return r
}

// planWith plans the testdata manifest file with the definition reg holds for its kind.
func planWith(t *testing.T, reg *definitions.Registry, file string) (*gang.Plan, error) {
	t.Helper()
	objs, err := manifest.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	def := reg.Lookup(objs[0].GroupVersionKind())
	require.NotNil(t, def, "%s: no definition for %s", file, objs[0].GroupVersionKind())
	return gang.Build(context.Background(), def, objs[0])
}

// TestLLMInferenceServiceStartupPolicy: KServe writes its multi-node LeaderWorkerSets' startup
// policy itself (pkg/controller/v1alpha{1,2}/llmisvc/workload_multi_node.go,
// expectedMainMultiNodeLWS and expectedPrefillMultiNodeLWS):
//   - LeaderCreated in every release with LLMInferenceService (v0.16.0 to v0.20.x and master,
//     since commit ad05338f1, PR #4666): the LWS controller (lws pkg/controllers/pod_controller.go
//     Reconcile) creates the worker StatefulSet as soon as the leader pod exists, so the workers
//     are required with their leaders: minSubGroup 4 on the real DP/EP manifest (main, main-worker,
//     prefill, prefill-worker each 1 pod);
//   - LeaderReady in pre-release builds before that commit: the LWS controller defers the workers
//     until the leader is Ready, so only main and prefill are required (minSubGroup 2); the worker
//     sub-groups keep their size (1 pod each).
func TestLLMInferenceServiceStartupPolicy(t *testing.T) {
	const file = "llminferenceservice-v1alpha2-dp-ep-deepseek-pd-worker.yaml"
	const def = "serving-kserve-io-llminferenceservice-v1alpha2"
	cases := map[string]struct {
		reg         *definitions.Registry
		minSubGroup int32
		held        []string
	}{
		"catalog default (LeaderCreated, every KServe release)": {catalogRegistry(t), 4, nil},
		"LeaderCreated":                    {variableRegistry(t, def, "multiNodeStartupPolicy", "'LeaderCreated'"), 4, nil},
		"LeaderReady (pre-release KServe)": {variableRegistry(t, def, "multiNodeStartupPolicy", "'LeaderReady'"), 2, []string{"main-worker", "prefill-worker"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := planWith(t, c.reg, file)
			require.NoError(t, err)
			require.Len(t, p.PodGroups, 1)
			pg := p.PodGroups[0]
			require.NotNil(t, pg.MinSubGroup)
			assert.Equal(t, c.minSubGroup, *pg.MinSubGroup)
			var held []string
			for _, r := range p.Roles {
				if r.StartupHold != "" {
					held = append(held, r.Name)
					assert.Equal(t, int64(1), r.HeldPods, "%s keeps its own minimum", r.Name)
				}
			}
			assert.Equal(t, c.held, held)
			for _, sg := range pg.SubGroups {
				require.NotNil(t, sg.MinMember, sg.Name)
				assert.Equal(t, int32(1), *sg.MinMember, "sub-group %s: one pod, required whole", sg.Name)
			}
		})
	}
	t.Run("unknown policy", func(t *testing.T) {
		_, err := planWith(t, variableRegistry(t, def, "multiNodeStartupPolicy", "'LeaderWhenever'"), file)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `spec.variables multiNodeStartupPolicy: want "LeaderCreated" or "LeaderReady", got LeaderWhenever`)
	})
}
