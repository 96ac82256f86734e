package gang_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
)

// TestJQAndCELDefinitionsPlanAlike: the catalog JobSet and LeaderWorkerSet definitions (jq) and
// the same definitions written in CEL (testdata/cel) give identical plans on every real manifest
// of those kinds in testdata, and on variants that exercise the startup policies.
func TestJQAndCELDefinitionsPlanAlike(t *testing.T) {
	r := registry(t)
	cel, err := definitions.LoadPaths([]string{"testdata/cel"}, definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	require.NoError(t, err)
	celByKind := map[string]*definitions.Compiled{}
	for _, l := range cel {
		c, err := definitions.Compile(l, r.Compiler())
		require.NoError(t, err)
		celByKind[c.RootGVK().Kind] = c
	}
	files, err := filepath.Glob("testdata/*.yaml")
	require.NoError(t, err)
	tested := 0
	for _, f := range files {
		objs, err := manifest.ReadFile(f)
		require.NoError(t, err)
		obj := objs[0]
		celDef := celByKind[obj.GetKind()]
		if celDef == nil || r.Lookup(obj.GroupVersionKind()) == nil {
			continue
		}
		for _, v := range variants(obj) {
			name := filepath.Base(f) + v.name
			t.Run(name, func(t *testing.T) {
				jqPlan, err := gang.Build(context.Background(), r.Lookup(obj.GroupVersionKind()), v.obj)
				require.NoError(t, err)
				celPlan, err := gang.Build(context.Background(), celDef, v.obj)
				require.NoError(t, err)
				jqPlan.Definition, celPlan.Definition = gang.DefinitionRef{}, gang.DefinitionRef{}
				want, err := json.Marshal(strip(jqPlan))
				require.NoError(t, err)
				got, err := json.Marshal(strip(celPlan))
				require.NoError(t, err)
				assert.JSONEq(t, string(want), string(got))
			})
			tested++
		}
	}
	assert.GreaterOrEqual(t, tested, 10, "JobSet and LWS manifests with their variants")
	_, err = os.Stat("testdata/cel")
	require.NoError(t, err)
}

type variant struct {
	name string
	obj  *unstructured.Unstructured
}

func variants(obj *unstructured.Unstructured) []variant {
	out := []variant{{"", obj}}
	switch obj.GetKind() {
	case "JobSet":
		o := obj.DeepCopy()
		_ = unstructured.SetNestedField(o.Object, "InOrder", "spec", "startupPolicy", "startupPolicyOrder")
		out = append(out, variant{"/InOrder", o})
		// The start sequence as status.replicatedJobsStatus tells it: the first k replicated
		// jobs succeeded, the next one ready, in both start orders.
		rjobs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "replicatedJobs")
		for k := range rjobs {
			var st []any
			for i, rj := range rjobs {
				reps, found, _ := unstructured.NestedInt64(rj.(map[string]any), "replicas")
				if !found {
					reps = 1
				}
				name, _, _ := unstructured.NestedString(rj.(map[string]any), "name")
				switch {
				case i < k:
					st = append(st, map[string]any{"name": name, "succeeded": reps})
				case i == k:
					st = append(st, map[string]any{"name": name, "ready": reps})
				}
			}
			for suffix, base := range map[string]*unstructured.Unstructured{"": obj, "/InOrder": o} {
				b := base.DeepCopy()
				_ = unstructured.SetNestedSlice(b.Object, st, "status", "replicatedJobsStatus")
				out = append(out, variant{fmt.Sprintf("/step%d%s", k, suffix), b})
			}
		}
	case "LeaderWorkerSet":
		o := obj.DeepCopy()
		_ = unstructured.SetNestedField(o.Object, "LeaderReady", "spec", "startupPolicy")
		out = append(out, variant{"/LeaderReady", o})
	}
	return out
}

// strip keeps what a plan decides; notes quote the expression text, which differs by language.
func strip(p *gang.Plan) *gang.Plan {
	c := gang.Plan{Workload: p.Workload, PodGroups: p.PodGroups, Roles: p.Roles, TotalGPUs: p.TotalGPUs, Overrides: p.Overrides}
	var notes []string
	for _, n := range p.Notes {
		if !strings.Contains(n, "resolved to nothing") {
			notes = append(notes, n)
		}
	}
	c.Notes = notes
	return &c
}

// TestJQAndCELPlacePodsAlike: the pod-side selectors of both languages place pods alike.
func TestJQAndCELPlacePodsAlike(t *testing.T) {
	r := registry(t)
	cel, err := definitions.LoadPaths([]string{"testdata/cel"}, definitions.SourceFile, definitions.DecodeOptions{Strict: true})
	require.NoError(t, err)
	pods := map[string][]map[string]string{
		"LeaderWorkerSet": {
			{"leaderworkerset.sigs.k8s.io/group-index": "1", "leaderworkerset.sigs.k8s.io/worker-index": "0"},
			{"leaderworkerset.sigs.k8s.io/group-index": "0", "leaderworkerset.sigs.k8s.io/worker-index": "3"},
		},
		"JobSet": {{"jobset.sigs.k8s.io/replicatedjob-name": "workers"}, {"jobset.sigs.k8s.io/replicatedjob-name": "leader"}},
	}
	for _, l := range cel {
		celDef, err := definitions.Compile(l, r.Compiler())
		require.NoError(t, err)
		jqDef := r.Lookup(celDef.RootGVK().GVK())
		for _, labels := range pods[celDef.RootGVK().Kind] {
			ls := map[string]any{}
			for k, v := range labels {
				ls[k] = v
			}
			pod := map[string]any{"metadata": map[string]any{"labels": ls}}
			want, err := jqDef.PlacePod(context.Background(), pod)
			require.NoError(t, err)
			got, err := celDef.PlacePod(context.Background(), pod)
			require.NoError(t, err)
			assert.Equal(t, want.Component.Name, got.Component.Name, "%v", labels)
			assert.Equal(t, want.InstanceID, got.InstanceID, "%v", labels)
			assert.Equal(t, want.ReplicaKeys, got.ReplicaKeys, "%v", labels)
		}
	}
}
