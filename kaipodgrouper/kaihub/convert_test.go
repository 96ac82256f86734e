package kaihub

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kaipodgroup "github.com/kai-scheduler/KAI-scheduler/pkg/podgrouper/podgroup"

	"github.com/gangmap/gangmap/podgrouper/core/kaiplugin"
	"github.com/gangmap/gangmap/podgrouper/core/podgroup"
)

// sameFields asserts that two struct types have the same field names in the same order, each of
// the same kind (a KAI type and gangmap's copy of it differ only in their package).
// gangmap's start-order fields (kaiplugin.GangmapOnlyFields, resolved by kaiplugin.KAIMetadata)
// are left out.
func sameFields(t *testing.T, kai, gangmap reflect.Type) {
	t.Helper()
	var own []reflect.StructField
	for i := 0; i < gangmap.NumField(); i++ {
		if f := gangmap.Field(i); !slices.Contains(kaiplugin.GangmapOnlyFields[gangmap.Name()], f.Name) {
			own = append(own, f)
		}
	}
	require.Equal(t, kai.NumField(), len(own), "%s and %s: number of fields", kai, gangmap)
	for i := 0; i < kai.NumField(); i++ {
		k, g := kai.Field(i), own[i]
		assert.Equal(t, k.Name, g.Name, "%s field %d", kai, i)
		assert.Equal(t, k.Type.Kind(), g.Type.Kind(), "%s.%s", kai, k.Name)
	}
}

// TestKAITypesMatchGangmapsCopy: KAI v0.17's metadata types and gangmap's copies have the same
// fields, so ToKAI (which names each field) misses none; a KAI release that adds a field fails
// here until ToKAI and gangmap's copy carry it.
func TestKAITypesMatchGangmapsCopy(t *testing.T) {
	sameFields(t, reflect.TypeOf(kaipodgroup.Metadata{}), reflect.TypeOf(podgroup.Metadata{}))
	sameFields(t, reflect.TypeOf(kaipodgroup.SubGroupMetadata{}), reflect.TypeOf(podgroup.SubGroupMetadata{}))
	sameFields(t, reflect.TypeOf(kaipodgroup.TopologyConstraintMetadata{}), reflect.TypeOf(podgroup.TopologyConstraintMetadata{}))
}

// TestToKAIFieldForField: every field of a metadata with every field set reaches KAI's type with
// its value, compared field by field through reflection (the JSON of both sides is equal, and
// FindSubGroupForPod, which KAI's pod controller uses to label the pod, finds the same
// sub-group).
func TestToKAIFieldForField(t *testing.T) {
	md := &podgroup.Metadata{
		Annotations: map[string]string{"a": "1"}, Labels: map[string]string{"l": "2"},
		PriorityClassName: "train", Preemptibility: "non-preemptible",
		PreemptionDelay: &metav1.Duration{Duration: time.Minute}, StalenessGracePeriod: &metav1.Duration{Duration: 2 * time.Minute},
		Queue: "team-a", Namespace: "ns", Name: "pg-train-uid", MinAvailable: 7, MinSubGroup: ptr.To[int32](2),
		Owner: metav1.OwnerReference{APIVersion: "e2e.example.com/v1", Kind: "CustomJob", Name: "train", UID: "uid"},
		SubGroups: []*podgroup.SubGroupMetadata{
			{Name: "coordinator", MinAvailable: 1, PodsReferences: []string{"train-coordinator-0"}},
			{Name: "worker", MinAvailable: 2, MinSubGroup: ptr.To[int32](1), Parent: ptr.To("coordinator"),
				TopologyConstraints: &podgroup.TopologyConstraintMetadata{PreferredTopologyLevel: "rack", RequiredTopologyLevel: "zone", Topology: "t"}},
		},
		PreferredTopologyLevel: "host", RequiredTopologyLevel: "block", Topology: "cluster-topology",
	}
	got := ToKAI(md)
	assertSameValues(t, reflect.ValueOf(*md), reflect.ValueOf(*got), "Metadata")
	require.NotNil(t, got.FindSubGroupForPod("ns", "train-coordinator-0"))
	assert.Equal(t, "coordinator", got.FindSubGroupForPod("ns", "train-coordinator-0").Name)
	assert.Nil(t, ToKAI(nil))
	assert.Nil(t, ToKAI(&podgroup.Metadata{}).SubGroups, "no sub-groups stays nil")
}

// assertSameValues compares a gangmap value with the KAI value of the same shape, field by field
// (kinds, not types: Preemptibility is a string type of each package).
func assertSameValues(t *testing.T, g, k reflect.Value, path string) {
	t.Helper()
	switch g.Kind() {
	case reflect.Pointer:
		require.Equal(t, g.IsNil(), k.IsNil(), path)
		if !g.IsNil() {
			assertSameValues(t, g.Elem(), k.Elem(), path)
		}
	case reflect.Struct:
		for i := 0; i < g.NumField(); i++ {
			f := g.Type().Field(i)
			if f.IsExported() && !slices.Contains(kaiplugin.GangmapOnlyFields[g.Type().Name()], f.Name) {
				assertSameValues(t, g.Field(i), k.FieldByName(f.Name), path+"."+f.Name)
			}
		}
	case reflect.Slice:
		require.Equal(t, g.Len(), k.Len(), path)
		for i := 0; i < g.Len(); i++ {
			assertSameValues(t, g.Index(i), k.Index(i), path)
		}
	case reflect.Map:
		assert.Equal(t, g.Interface(), k.Interface(), path)
	case reflect.String:
		assert.Equal(t, g.String(), k.String(), path)
	default:
		assert.Equal(t, g.Interface(), k.Interface(), path)
	}
}
