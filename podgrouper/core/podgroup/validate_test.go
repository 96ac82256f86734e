package podgroup

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/gangmap/gangmap/podgrouper/core/apis/scheduling/v2alpha2"
)

// sg builds a subgroup: parent "" means none; minMember/minSubGroup equal to unset mean unset.
func sg(name, parent string, minMember, minSubGroup int32) v2alpha2.SubGroup {
	s := v2alpha2.SubGroup{Name: name}
	if parent != "" {
		s.Parent = ptr.To(parent)
	}
	if minMember != unset {
		s.MinMember = ptr.To(minMember)
	}
	if minSubGroup != unset {
		s.MinSubGroup = ptr.To(minSubGroup)
	}
	return s
}

const unset = math.MinInt32

func TestValidate(t *testing.T) {
	type wantErr struct {
		typ   field.ErrorType
		field string
	}
	tests := map[string]struct {
		spec v2alpha2.PodGroupSpec
		want []wantErr
	}{
		"flat gang": {spec: v2alpha2.PodGroupSpec{MinMember: ptr.To(int32(4))}},
		"default grouper shape (minMember 1, empty subgroups)": {
			spec: v2alpha2.PodGroupSpec{MinMember: ptr.To(int32(1)), SubGroups: []v2alpha2.SubGroup{}}},
		"nothing set": {spec: v2alpha2.PodGroupSpec{}},
		"Karta v2 shape: minSubGroup over flat leaves": {spec: v2alpha2.PodGroupSpec{
			MinSubGroup: ptr.To(int32(2)),
			SubGroups:   []v2alpha2.SubGroup{sg("coordinator", "", 1, unset), sg("worker", "", 2, unset)},
		}},
		"nested tree with a leaf minimum of 0": {spec: v2alpha2.PodGroupSpec{
			MinSubGroup: ptr.To(int32(1)),
			SubGroups: []v2alpha2.SubGroup{
				sg("parent", "", unset, 2), sg("child-1", "parent", 4, unset), sg("child-2", "parent", 0, unset)},
		}},
		"minMember and minSubGroup both set": {
			spec: v2alpha2.PodGroupSpec{MinMember: ptr.To(int32(1)), MinSubGroup: ptr.To(int32(1)),
				SubGroups: []v2alpha2.SubGroup{sg("a", "", 1, unset)}},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.minSubGroup"}}},
		"minMember 0 at the top (CRD minimum 1)": {
			spec: v2alpha2.PodGroupSpec{MinMember: ptr.To(int32(0))},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.minMember"}}},
		"minSubGroup 0 at the top": {
			spec: v2alpha2.PodGroupSpec{MinSubGroup: ptr.To(int32(0)), SubGroups: []v2alpha2.SubGroup{sg("a", "", 1, unset)}},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.minSubGroup"}}},
		"unknown preemptibility": {
			spec: v2alpha2.PodGroupSpec{MinMember: ptr.To(int32(1)), Preemptibility: "sometimes"},
			want: []wantErr{{field.ErrorTypeNotSupported, "spec.preemptibility"}}},
		"duplicate subgroup names": {
			spec: v2alpha2.PodGroupSpec{MinSubGroup: ptr.To(int32(1)),
				SubGroups: []v2alpha2.SubGroup{sg("a", "", 1, unset), sg("a", "", 1, unset)}},
			want: []wantErr{{field.ErrorTypeDuplicate, "spec.subGroups[1].name"}}},
		"missing parent": {
			spec: v2alpha2.PodGroupSpec{MinSubGroup: ptr.To(int32(1)),
				SubGroups: []v2alpha2.SubGroup{sg("a", "", 1, unset), sg("b", "nope", 1, unset)}},
			want: []wantErr{{field.ErrorTypeNotFound, "spec.subGroups[1].parent"}}},
		"self parent": {
			spec: v2alpha2.PodGroupSpec{SubGroups: []v2alpha2.SubGroup{sg("a", "a", 1, unset)}},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.subGroups[0].parent"}}},
		"two-node cycle is reported once, plus a tail into it is not": {
			spec: v2alpha2.PodGroupSpec{SubGroups: []v2alpha2.SubGroup{
				sg("tail", "a", 1, unset), sg("a", "b", unset, 1), sg("b", "a", unset, 1)}},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.subGroups[1].parent"}}},
		"structural errors skip the min rules": {
			spec: v2alpha2.PodGroupSpec{SubGroups: []v2alpha2.SubGroup{
				sg("a", "", unset, unset), sg("b", "missing", unset, 3)}},
			want: []wantErr{{field.ErrorTypeNotFound, "spec.subGroups[1].parent"}}},
		"subgroup with minMember and minSubGroup": {
			spec: v2alpha2.PodGroupSpec{SubGroups: []v2alpha2.SubGroup{sg("a", "", 1, 1), sg("b", "a", 1, unset)}},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.subGroups[0].minSubGroup"}}},
		"leaf without minMember": {
			spec: v2alpha2.PodGroupSpec{SubGroups: []v2alpha2.SubGroup{sg("a", "", unset, unset)}},
			want: []wantErr{{field.ErrorTypeRequired, "spec.subGroups[0].minMember"}}},
		"minSubGroup on a leaf (and no minMember)": {
			spec: v2alpha2.PodGroupSpec{SubGroups: []v2alpha2.SubGroup{sg("a", "", unset, 1)}},
			want: []wantErr{
				{field.ErrorTypeInvalid, "spec.subGroups[0].minSubGroup"},
				{field.ErrorTypeRequired, "spec.subGroups[0].minMember"}}},
		"minMember on a mid-level subgroup": {
			spec: v2alpha2.PodGroupSpec{SubGroups: []v2alpha2.SubGroup{sg("p", "", 2, unset), sg("c", "p", 1, unset)}},
			want: []wantErr{{field.ErrorTypeInvalid, "spec.subGroups[0].minMember"}}},
		"subgroup names must be DNS labels": {
			spec: v2alpha2.PodGroupSpec{SubGroups: []v2alpha2.SubGroup{
				sg("Worker", "", 1, unset), sg("a_b", "", 1, unset), sg("-a", "", 1, unset), sg("", "", 1, unset)}},
			want: []wantErr{
				{field.ErrorTypeInvalid, "spec.subGroups[0].name"},
				{field.ErrorTypeInvalid, "spec.subGroups[1].name"},
				{field.ErrorTypeInvalid, "spec.subGroups[2].name"},
				{field.ErrorTypeRequired, "spec.subGroups[3].name"}}},
		"parent must be a DNS label": {
			spec: v2alpha2.PodGroupSpec{SubGroups: []v2alpha2.SubGroup{sg("a.b", "", unset, 1), sg("c", "a.b", 1, unset)}},
			want: []wantErr{
				{field.ErrorTypeInvalid, "spec.subGroups[0].name"},
				{field.ErrorTypeInvalid, "spec.subGroups[1].parent"}}},
		"subgroup name longer than a label value": {
			spec: v2alpha2.PodGroupSpec{SubGroups: []v2alpha2.SubGroup{sg(strings.Repeat("a", 64), "", 1, unset)}},
			want: []wantErr{{field.ErrorTypeTooLong, "spec.subGroups[0].name"}}},
		"negative subgroup minimums": {
			spec: v2alpha2.PodGroupSpec{SubGroups: []v2alpha2.SubGroup{sg("p", "", unset, -2), sg("c", "p", -3, unset)}},
			want: []wantErr{
				{field.ErrorTypeInvalid, "spec.subGroups[0].minSubGroup"},
				{field.ErrorTypeInvalid, "spec.subGroups[1].minMember"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs := Validate(&v2alpha2.PodGroup{Spec: tc.spec})
			var got []wantErr
			for _, e := range errs {
				got = append(got, wantErr{e.Type, e.Field})
			}
			assert.Equal(t, tc.want, got, "errors: %v", errs)
		})
	}
}

func TestValidateCycleMessage(t *testing.T) {
	errs := Validate(&v2alpha2.PodGroup{Spec: v2alpha2.PodGroupSpec{SubGroups: []v2alpha2.SubGroup{
		sg("a", "c", unset, 1), sg("b", "a", unset, 1), sg("c", "b", unset, 1)}}})
	if assert.Len(t, errs, 1) {
		assert.Contains(t, errs[0].Detail, "cycle detected in subgroups: a -> c -> b -> a")
	}
}

// TestValidateAcceptsMinSubGroupAboveChildren: a minSubGroup above the number of direct child
// subgroups is what KAI's webhook accepts with a warning, not an error.
func TestValidateAcceptsMinSubGroupAboveChildren(t *testing.T) {
	for name, spec := range map[string]v2alpha2.PodGroupSpec{
		"none": {MinSubGroup: ptr.To(int32(2)), SubGroups: []v2alpha2.SubGroup{sg("a", "", 1, unset), sg("b", "", 1, unset)}},
		"top minSubGroup exceeds roots": {MinSubGroup: ptr.To(int32(3)),
			SubGroups: []v2alpha2.SubGroup{sg("a", "", 1, unset), sg("b", "", 1, unset)}},
		"minSubGroup without subgroups":         {MinSubGroup: ptr.To(int32(1))},
		"subgroup minSubGroup exceeds children": {MinSubGroup: ptr.To(int32(1)), SubGroups: []v2alpha2.SubGroup{sg("p", "", unset, 2), sg("c", "p", 1, unset)}},
	} {
		assert.Empty(t, Validate(&v2alpha2.PodGroup{Spec: spec}), name)
	}
}

// TestValidateAnnotationsSize: the API server refuses an object whose annotations total more
// than 256 KiB (apimachinery ValidateAnnotationsSize); a PodGroup gets its workload's
// annotations copied (KAI's default metadata), so Validate refuses such a PodGroup first, naming
// the field, the size and the cause, and one at the limit passes.
func TestValidateAnnotationsSize(t *testing.T) {
	pg := Build(&Metadata{Name: "pg-a", Namespace: "ns", MinAvailable: 1,
		Annotations: map[string]string{"example.com/blob": strings.Repeat("x", 262_144-len("example.com/blob"))}})
	assert.Empty(t, Validate(pg), "exactly 256 KiB of keys and values")
	pg.Annotations["example.com/blob"] += "x"
	errs := Validate(pg)
	require.Len(t, errs, 1)
	assert.Equal(t, "metadata.annotations", errs[0].Field)
	assert.Contains(t, errs[0].Error(), "annotations size 262145 is larger than limit 262144")
	assert.Contains(t, errs[0].Error(), "copies every annotation of the workload")
}
