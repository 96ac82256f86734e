package definitions_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/definitions"
)

// TestRegistryUnusableKinds: a kind whose definitions are all invalid, refused (a path its CRD
// says cannot resolve) or in conflict has no active definition (Lookup nil) and is Unusable, with
// the problem naming the definition, so that gangmap holds its pods rather than leave them to
// KAI's default grouping one by one; a kind whose broken cluster definition a file definition
// replaces, or that no definition names, is not.
func TestRegistryUnusableKinds(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "e2e.example.com", Version: "v1", Kind: "CustomJob"}
	cluster := func(t *testing.T, name string) *definitions.Loaded {
		l, err := decodeOne(t, strings.Replace(customJob, "name: customjob}", "name: "+name+"}", 1), true)
		require.NoError(t, err)
		l.Source, l.Origin = definitions.SourceCluster, "cluster:"+name
		return l
	}
	invalid := func(t *testing.T) *definitions.Loaded {
		l := cluster(t, "bad")
		l.Karta.Spec.StructureDefinition.ChildComponents[0].OwnerRef = nil
		return l
	}
	for name, tc := range map[string]struct {
		load func(t *testing.T, r *definitions.Registry)
		want string // part of Unusable's answer; "" none
	}{
		"invalid": {load: func(t *testing.T, r *definitions.Registry) {
			r.SetSource(definitions.SourceCluster, []*definitions.Loaded{invalid(t)})
		}, want: `definition "bad" (cluster:bad) is invalid: spec.structureDefinition.childComponents[0].ownerRef`},
		"refused": {load: func(t *testing.T, r *definitions.Registry) {
			l := cluster(t, "lint")
			r.SetSource(definitions.SourceCluster, []*definitions.Loaded{l})
			r.Refuse(map[string]string{definitions.RefusalKey(l): "spec.worker: the CRD schema has no field"})
		}, want: `definition "lint" (cluster:lint) is not used (PathCannotResolve): spec.worker: the CRD schema has no field`},
		"conflict": {load: func(t *testing.T, r *definitions.Registry) {
			r.SetSource(definitions.SourceCluster, []*definitions.Loaded{cluster(t, "one"), cluster(t, "two")})
		}, want: `definition "one" (cluster:one) is not used (Conflict): 2 cluster definitions for CustomJob.e2e.example.com/v1`},
		"invalid cluster, valid file": {load: func(t *testing.T, r *definitions.Registry) {
			file, err := decodeOne(t, customJob, true)
			require.NoError(t, err)
			r.SetSource(definitions.SourceFile, []*definitions.Loaded{file})
			r.SetSource(definitions.SourceCluster, []*definitions.Loaded{invalid(t)})
			require.NotNil(t, r.Lookup(gvk), "the file definition takes over")
		}},
		"nothing loaded": {load: func(*testing.T, *definitions.Registry) {}},
	} {
		t.Run(name, func(t *testing.T) {
			r := definitions.NewRegistry(compiler(t))
			tc.load(t, r)
			got := r.Unusable(gvk)
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Nil(t, r.Lookup(gvk), "no active definition")
			assert.Contains(t, got, tc.want)
			assert.Empty(t, r.Unusable(schema.GroupVersionKind{Group: "e2e.example.com", Version: "v1", Kind: "OtherJob"}), "another kind")
		})
	}
}

// TestRefuseLintedKeepsWhatItDidNotLint: a lint of some definitions (the CRD linter's LintAll)
// sets the verdict of those only: a definition the Vetter refused on load while the lint was
// reading CRDs (not in its snapshot), or one whose CRD it could not read, stays refused, instead
// of being used until the next lint (the review of the Vetter); a linted key's refusal is lifted
// when the lint finds nothing, and a refusal of a definition no source holds any more is dropped.
func TestRefuseLintedKeepsWhatItDidNotLint(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "e2e.example.com", Version: "v1", Kind: "CustomJob"}
	l, err := decodeOne(t, customJob, true)
	require.NoError(t, err)
	l.Source, l.Origin = definitions.SourceCluster, "cluster:customjob"
	key := definitions.RefusalKey(l)
	r := definitions.NewRegistry(compiler(t))
	r.SetVetter(func([]*definitions.Loaded) map[string]string {
		return map[string]string{key: "spec.worker: the CRD schema has no field"}
	})
	r.SetSource(definitions.SourceCluster, []*definitions.Loaded{l})
	require.Nil(t, r.Lookup(gvk), "refused on load")

	assert.False(t, r.RefuseLinted(map[string]string{}, map[string]bool{"another-key": true}), "a lint that did not see it changes nothing")
	assert.Nil(t, r.Lookup(gvk), "still refused")

	assert.True(t, r.RefuseLinted(map[string]string{}, map[string]bool{key: true}), "linted and found right: lifted")
	assert.NotNil(t, r.Lookup(gvk))

	require.True(t, r.Refuse(map[string]string{key: "spec.worker: the CRD schema has no field"}))
	r.SetSource(definitions.SourceCluster, nil)
	r.RefuseLinted(map[string]string{}, map[string]bool{})
	r.SetVetter(nil)
	r.SetSource(definitions.SourceCluster, []*definitions.Loaded{l})
	assert.NotNil(t, r.Lookup(gvk), "the refusal of a definition gone was dropped")
}
