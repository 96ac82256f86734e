package gang_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gangmap/gangmap/gang"
)

// TestPlanSizeBounded: the number of PodGroups, sub-groups and role shares of a plan comes from
// counts the workload's author writes, so one object must not make the grouper build (and cache)
// millions of them. A LeaderWorkerSet (catalog definition: one PodGroup per group, sub-groups
// leader and worker) of 10,000 groups is planned (10,000 PodGroups, 20,000 sub-groups, 20,000
// shares: exactly gang.MaxPlanElements); one more group, or 100,000 groups (which planned 100,000
// PodGroups, ~160 MB of the grouper's heap, before), is refused naming the field. A JobSet
// replicated job of 500,000 multi-pod replicas (one leaf sub-group per replica: a PodGroup of
// 500,000 sub-groups, which no API server stores) is refused naming the replicated job's
// replicasPath, and so is one of 6,000 (a PodGroup above gang.MaxSubGroupsPerPodGroup).
func TestPlanSizeBounded(t *testing.T) {
	r := registry(t)
	build := func(obj *unstructured.Unstructured) (*gang.Plan, error) {
		c := r.Lookup(obj.GroupVersionKind())
		require.NotNil(t, c)
		return gang.Build(context.Background(), c, obj)
	}
	lws := func(replicas int64) *unstructured.Unstructured {
		obj := load(t, "lws-sglang-gpu-limits-only.yaml")
		require.NoError(t, unstructured.SetNestedField(obj.Object, replicas, "spec", "replicas"))
		return obj
	}
	p, err := build(lws(10000))
	require.NoError(t, err)
	assert.Len(t, p.PodGroups, 10000)
	assert.Len(t, p.PodGroups[9999].SubGroups, 2)

	for _, n := range []int64{10001, 100000} {
		_, err := build(lws(n))
		var tl *gang.TooLargeError
		require.True(t, errors.As(err, &tl), "LWS replicas %d: err = %v, want a TooLargeError", n, err)
		assert.Equal(t, int64(gang.MaxPlanElements), tl.Max)
		assert.Contains(t, err.Error(), "gangmap plans no workload that large")
		// The count said is what the plan would reach, never the one element that passed the
		// bound ("1 asked for at once" read as a bug to a new user).
		assert.Greater(t, tl.Count, int64(gang.MaxPlanElements), "LWS replicas %d", n)
		assert.Contains(t, err.Error(), fmt.Sprintf("(at least %d)", tl.Count))
	}
	_, err = build(lws(100000))
	assert.True(t, strings.HasPrefix(err.Error(), "spec.structureDefinition."), "the refusal names the definition field: %v", err)
	assert.Contains(t, err.Error(), "scaleDefinition.replicasPath")

	js := load(t, "jobset-tpu-multislice-replicas2.yaml")
	rjs, _, err := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	require.NoError(t, err)
	rjs[0].(map[string]any)["replicas"] = int64(500000)
	require.NoError(t, unstructured.SetNestedSlice(js.Object, rjs, "spec", "replicatedJobs"))
	_, err = build(js)
	var tl *gang.TooLargeError
	require.True(t, errors.As(err, &tl), "JobSet of 500,000 slices: err = %v, want a TooLargeError", err)
	// The 500,000 leaves asked for at once, plus the few elements planned before them (the
	// PodGroup, the slices' sub-group and its share).
	assert.GreaterOrEqual(t, tl.Count, int64(500000))
	assert.Less(t, tl.Count, int64(500010))
	assert.Contains(t, tl.Field, "scaleDefinition.replicasPath")

	// Within the plan's bound, one PodGroup is still one API object: 6,000 slices would be a
	// PodGroup of 6,001 sub-groups (about 1 MB of JSON with long names, past etcd's limit with
	// the longest): refused naming the PodGroup; 4,999 slices (5,000 sub-groups) are planned.
	slices := func(n int64) error {
		rjs[0].(map[string]any)["replicas"] = n
		require.NoError(t, unstructured.SetNestedSlice(js.Object, rjs, "spec", "replicatedJobs"))
		_, err := build(js)
		return err
	}
	err = slices(6000)
	require.True(t, errors.As(err, &tl), "JobSet of 6,000 slices: err = %v, want a TooLargeError", err)
	assert.Equal(t, int64(gang.MaxSubGroupsPerPodGroup), tl.Max)
	assert.Equal(t, "pg-v6e-multislice-jobset", tl.PodGroup)
	assert.Contains(t, err.Error(), "PodGroup pg-v6e-multislice-jobset would have more than 5000 sub-groups")
	require.NoError(t, slices(4999))
}
