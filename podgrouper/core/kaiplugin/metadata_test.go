package kaiplugin

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// kaiFields are the fields of KAI v0.17.0's pkg/podgrouper/podgroup/metadata.go types, in
// declaration order, with their Go types as KAI declares them (v2alpha2 is KAI's
// pkg/apis/scheduling/v2alpha2, gangmap's podgrouper/core/apis/scheduling/v2alpha2).
var kaiFields = map[string][]string{
	"Metadata": {"Annotations map[string]string", "Labels map[string]string", "PriorityClassName string",
		"Preemptibility v2alpha2.Preemptibility", "PreemptionDelay *v1.Duration", "StalenessGracePeriod *v1.Duration",
		"Queue string", "Namespace string", "Name string", "MinAvailable int32", "MinSubGroup *int32",
		"Owner v1.OwnerReference", "SubGroups []*podgroup.SubGroupMetadata",
		"PreferredTopologyLevel string", "RequiredTopologyLevel string", "Topology string"},
	"SubGroupMetadata": {"Name string", "MinAvailable int32", "MinSubGroup *int32", "Parent *string",
		"PodsReferences []string", "TopologyConstraints *podgroup.TopologyConstraintMetadata"},
	"TopologyConstraintMetadata": {"PreferredTopologyLevel string", "RequiredTopologyLevel string", "Topology string"},
}

// fieldsOf lists a gangmap type's fields but its gangmap-only ones (GangmapOnlyFields).
func fieldsOf(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !slices.Contains(GangmapOnlyFields[t.Name()], f.Name) {
			out = append(out, f.Name+" "+f.Type.String())
		}
	}
	return out
}

// TestGangmapTypesAreKAIShaped: gangmap's copies of KAI's metadata types have exactly KAI
// v0.17.0's fields, names, types and order, besides the gangmap-only start-order fields
// KAIMetadata resolves, so KAIMetadata's result binds to KAI's types field for field (the nested
// module checks the same against KAI's own types).
func TestGangmapTypesAreKAIShaped(t *testing.T) {
	assert.Equal(t, kaiFields["Metadata"], fieldsOf(reflect.TypeOf(podgroup.Metadata{})))
	assert.Equal(t, kaiFields["SubGroupMetadata"], fieldsOf(reflect.TypeOf(podgroup.SubGroupMetadata{})))
	assert.Equal(t, kaiFields["TopologyConstraintMetadata"], fieldsOf(reflect.TypeOf(podgroup.TopologyConstraintMetadata{})))
}

// fullMetadata sets every field of a Metadata, its sub-groups and topology to a distinct
// non-zero value (pointers, maps and slices non-nil), so a field the conversion forgot shows.
func fullMetadata() *podgroup.Metadata {
	sg := func(name string, parent *string) *podgroup.SubGroupMetadata {
		return &podgroup.SubGroupMetadata{Name: name, MinAvailable: 3, MinSubGroup: ptr.To[int32](1), Parent: parent,
			PodsReferences:      []string{name + "-pod-0"},
			TopologyConstraints: &podgroup.TopologyConstraintMetadata{PreferredTopologyLevel: "rack", RequiredTopologyLevel: "zone", Topology: "t-" + name}}
	}
	return &podgroup.Metadata{
		Annotations: map[string]string{"a": "1"}, Labels: map[string]string{"l": "2"},
		PriorityClassName: "train", Preemptibility: "non-preemptible",
		PreemptionDelay: &metav1.Duration{Duration: time.Minute}, StalenessGracePeriod: &metav1.Duration{Duration: 2 * time.Minute},
		Queue: "team-a", Namespace: "ns", Name: "pg-train-uid", MinAvailable: 7, MinSubGroup: ptr.To[int32](2),
		Owner: metav1.OwnerReference{APIVersion: "e2e.example.com/v1", Kind: "CustomJob", Name: "train", UID: "uid",
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)},
		SubGroups:              []*podgroup.SubGroupMetadata{sg("gang", ptr.To("root")), sg("worker", ptr.To("gang"))},
		PreferredTopologyLevel: "host", RequiredTopologyLevel: "block", Topology: "cluster-topology",
	}
}

// nonZero fails for every field (recursively through pointers, structs and slice elements) left
// at its zero value, naming its path.
func nonZero(t *testing.T, path string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer:
		require.False(t, v.IsNil(), "%s is nil", path)
		nonZero(t, path, v.Elem())
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(metav1.Duration{}) {
			assert.NotZero(t, v.Interface(), path)
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() && !slices.Contains(GangmapOnlyFields[v.Type().Name()], f.Name) {
				nonZero(t, path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		}
	case reflect.Slice:
		require.NotZero(t, v.Len(), "%s is empty", path)
		for i := 0; i < v.Len(); i++ {
			nonZero(t, fmt.Sprintf("%s[%d]", path, i), v.Index(i))
		}
	default:
		assert.False(t, v.IsZero(), "%s is zero", path)
	}
}

// TestKAIMetadataFieldForField: every field of the metadata reaches the KAI-shaped value with its
// value (a full metadata, every field set: sub-groups with parents, minSubGroup and topology,
// priority, preemptibility, delays, queue, labels, annotations, owner with its pointers), and the
// PodGroup KAI's handler would write from it (gangmap's copy, podgroup.Build) is the one gangmap
// writes from the original.
func TestKAIMetadataFieldForField(t *testing.T) {
	md := fullMetadata()
	nonZero(t, "Metadata", reflect.ValueOf(md))
	got := KAIMetadata(md, nil)
	require.NotNil(t, got)
	assert.Equal(t, md, got)
	nonZero(t, "KAIMetadata", reflect.ValueOf(got))
	assert.Equal(t, podgroup.Build(md), podgroup.Build(got))

	// The flat form (no minSubGroup, no sub-groups) stays flat: KAI writes minMember from
	// MinAvailable only when MinSubGroup is nil (handler.go createPodGroupForMetadata).
	flat := &podgroup.Metadata{Name: "pg-flat", Namespace: "ns", MinAvailable: 4, Labels: map[string]string{}}
	gotFlat := KAIMetadata(flat, nil)
	assert.Equal(t, flat, gotFlat)
	assert.Nil(t, gotFlat.MinSubGroup)
	assert.Nil(t, gotFlat.SubGroups)
	assert.Equal(t, ptr.To[int32](4), podgroup.Build(gotFlat).Spec.MinMember)
	assert.Nil(t, KAIMetadata(nil, nil))
}

// TestKAIMetadataSharesNothing: KAI's pod controller writes into the value it gets
// (addNodePoolLabel) from many goroutines while gangmap's plan cache shares sub-group metadata
// among a PodGroup's pods: changing every map, slice element and pointee of the result leaves
// the original as it was.
func TestKAIMetadataSharesNothing(t *testing.T) {
	md := fullMetadata()
	want := fullMetadata()
	got := KAIMetadata(md, nil)
	got.Labels["kai.scheduler/node-pool"] = "pool-a"
	got.Annotations["a"] = "changed"
	got.PreemptionDelay.Duration = time.Hour
	got.StalenessGracePeriod.Duration = time.Hour
	*got.MinSubGroup = 9
	*got.Owner.Controller = false
	*got.Owner.BlockOwnerDeletion = false
	for _, sg := range got.SubGroups {
		*sg.MinSubGroup = 9
		sg.PodsReferences[0] = "other"
		sg.TopologyConstraints.Topology = "other"
		sg.Name = "other"
		if sg.Parent != nil {
			*sg.Parent = "other"
		}
	}
	got.SubGroups[0] = nil
	assert.Equal(t, want, md)
}

// TestKAIMetadataStartOrder: KAI's handler writes every sub-group it gets, so the KAI-shaped
// value carries exactly the sub-groups and minSubGroup gangmap's Applier writes
// (podgroup.Desired): a deferred role's sub-groups (its own and its per-replica leaves) only once
// released, by a pod of the role (Deferred cleared by the grouper) or because the existing
// PodGroup has them, and not when DropDeferred says the workload starts over; each written
// top-level one counts in minSubGroup.
func TestKAIMetadataStartOrder(t *testing.T) {
	md := func(drop bool) *podgroup.Metadata {
		return &podgroup.Metadata{Name: "pg", Namespace: "ns", MinSubGroup: ptr.To[int32](1), DropDeferred: drop,
			SubGroups: []*podgroup.SubGroupMetadata{
				{Name: "initializer", MinAvailable: 1},
				{Name: "workers", MinSubGroup: ptr.To[int32](2), Deferred: "workers"},
				{Name: "workers-0", MinAvailable: 2, Parent: ptr.To("workers"), Deferred: "workers"},
				{Name: "workers-1", MinAvailable: 2, Parent: ptr.To("workers"), Deferred: "workers"},
				nil,
			}}
	}
	names := func(m *podgroup.Metadata) []string {
		var out []string
		for _, sg := range m.SubGroups {
			out = append(out, sg.Name)
			assert.Empty(t, sg.Deferred, "KAI has no such field")
		}
		return out
	}
	// Not released, no PodGroup yet: the initializer alone, minSubGroup 1.
	got := KAIMetadata(md(false), nil)
	assert.Equal(t, []string{"initializer"}, names(got))
	assert.Equal(t, ptr.To[int32](1), got.MinSubGroup)
	assert.Equal(t, podgroup.Desired(md(false), nil), podgroup.Build(got))

	// Released by a worker pod: the grouper cleared Deferred and counted them.
	released := md(false)
	for _, sg := range released.SubGroups[1:4] {
		sg.Deferred = ""
	}
	released.MinSubGroup = ptr.To[int32](2)

	// The existing PodGroup has the workers (a worker pod released them): kept, minSubGroup 2.
	existing := podgroup.Build(released)
	got = KAIMetadata(md(false), existing)
	assert.Equal(t, []string{"initializer", "workers", "workers-0", "workers-1"}, names(got))
	assert.Equal(t, ptr.To[int32](2), got.MinSubGroup)
	assert.Equal(t, podgroup.Desired(md(false), existing), podgroup.Build(got))

	// The workload starts over (an initializer pod pending): dropped again.
	got = KAIMetadata(md(true), existing)
	assert.Equal(t, []string{"initializer"}, names(got))
	assert.Equal(t, podgroup.Desired(md(true), existing), podgroup.Build(got))

	// Released by a worker pod.
	got = KAIMetadata(released, nil)
	assert.Equal(t, []string{"initializer", "workers", "workers-0", "workers-1"}, names(got))
	assert.Equal(t, podgroup.Desired(released, nil), podgroup.Build(got))
}
