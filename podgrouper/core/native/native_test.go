package native

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestDefaultTable(t *testing.T) {
	tbl := DefaultTable()
	// KAI v0.17's hub lists 42 entries (kai-podgrouper.md §4).
	assert.Len(t, tbl.Entries(), 42)
	cases := map[string]struct {
		gvk  schema.GroupVersionKind
		want bool
	}{
		"jobset":                  {schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}, true},
		"core pod":                {schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, true},
		"dynamo wildcard":         {schema.GroupVersionKind{Group: "nvidia.com", Version: "v1beta1", Kind: "DynamoGraphDeployment"}, true},
		"kubevirt VM not native":  {schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachine"}, false},
		"old mpijob v1 is native": {schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "MPIJob"}, true},
		"volcano job":             {schema.GroupVersionKind{Group: "batch.volcano.sh", Version: "v1alpha1", Kind: "Job"}, false},
		"other jobset version":    {schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha3", Kind: "JobSet"}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, tbl.Has(tc.gvk)) })
	}
}

func TestAddRemove(t *testing.T) {
	tbl := DefaultTable()
	js := schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
	require.NoError(t, tbl.Remove("jobset.x-k8s.io/v1alpha2/JobSet"))
	assert.False(t, tbl.Has(js))
	require.NoError(t, tbl.Remove("nvidia.com/*/DynamoGraphDeployment"))
	assert.False(t, tbl.Has(schema.GroupVersionKind{Group: "nvidia.com", Version: "v1alpha1", Kind: "DynamoGraphDeployment"}))
	require.NoError(t, tbl.Add("example.com/*/Thing"))
	assert.True(t, tbl.Has(schema.GroupVersionKind{Group: "example.com", Version: "v9", Kind: "Thing"}))
	assert.Error(t, tbl.Add("JobSet"))
	_, err := ForRelease("v0.11")
	assert.ErrorContains(t, err, "v0.17")
	var nilTable *Table
	assert.False(t, nilTable.Has(js))
}

// Per release, the kinds KAI groups natively follow kai-releases.md §1: JobSet is native from
// v0.13.0, so on v0.12 gangmap may group it by a definition.
func TestForReleaseLines(t *testing.T) {
	js := schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
	for v, want := range map[string]bool{"v0.9": false, "v0.12": false, "v0.13": true, "v0.17": true, "v0.18": true} {
		tbl, err := ForRelease(v)
		require.NoError(t, err, v)
		assert.Equal(t, want, tbl.Has(js), v)
	}
	v9, err := ForRelease("v0.9")
	require.NoError(t, err)
	assert.Len(t, v9.Entries(), 38)
	assert.False(t, v9.Has(schema.GroupVersionKind{Group: "grove.io", Version: "v1alpha1", Kind: "PodCliqueSet"}))
}
