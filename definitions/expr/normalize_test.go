package expr

import (
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestNormalizeScalars(t *testing.T) {
	type phase string
	type count int32
	i64 := int64(7)
	var nilPtr *int64
	bigUint := new(big.Int).SetUint64(math.MaxUint64)
	bigNum, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"nil", nil, nil},
		{"int64", int64(-3), -3},
		{"int32", int32(4), 4},
		{"int8", int8(5), 5},
		{"uint16", uint16(6), 6},
		{"uint", uint(8), 8},
		{"uint64 beyond int", uint64(math.MaxUint64), bigUint},
		{"float32", float32(0.1), 0.1},
		{"float64", 2.5, 2.5},
		{"json.Number int", json.Number("2"), 2},
		{"json.Number float", json.Number("2.5"), 2.5},
		{"json.Number big", json.Number("123456789012345678901234567890"), bigNum},
		{"pointer", &i64, 7},
		{"nil pointer", nilPtr, nil},
		{"named string", phase("Running"), "Running"},
		{"named int", count(3), 3},
		{"bytes", []byte("abc"), "YWJj"},
		{"map[string]string", map[string]string{"a": "b"}, map[string]any{"a": "b"}},
		{"[]string", []string{"a", "b"}, []any{"a", "b"}},
		{"[]int64", []int64{1, 2}, []any{1, 2}},
		{"array", [2]int{1, 2}, []any{1, 2}},
		{"map of slices", map[string][]int64{"a": {1}}, map[string]any{"a": []any{1}}},
		{"slice of maps", []map[string]any{{"a": int64(1)}}, []any{map[string]any{"a": 1}}},
		{"nested any", map[string]any{"a": []any{int64(1), map[string]int{"b": 2}}}, map[string]any{"a": []any{1, map[string]any{"b": 2}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Normalize(tt.in))
		})
	}
}

func TestNormalizeUnstructuredInt64(t *testing.T) {
	u := unstructuredFrom(t, jobSetJSON)
	raw := u.Object
	jobs := raw["spec"].(map[string]any)["replicatedJobs"].([]any)
	require.IsType(t, int64(0), jobs[1].(map[string]any)["replicas"], "client-go decodes integers as int64")

	n := Normalize(raw).(map[string]any)
	njobs := n["spec"].(map[string]any)["replicatedJobs"].([]any)
	assert.Equal(t, 2, njobs[1].(map[string]any)["replicas"])
	assert.Equal(t, 3, n["metadata"].(map[string]any)["generation"])
	cpu := njobs[1].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["resources"].(map[string]any)["limits"].(map[string]any)["cpu"]
	assert.Equal(t, 32.5, cpu)

	// the input is not modified, and subtrees that needed nothing are shared
	assert.Equal(t, int64(2), jobs[1].(map[string]any)["replicas"])
	assert.Equal(t, reflect.ValueOf(raw["status"].(map[string]any)["conditions"].([]any)[0]).Pointer(),
		reflect.ValueOf(n["status"].(map[string]any)["conditions"].([]any)[0]).Pointer())
}

func TestNormalizeCopiesNothingWhenNormal(t *testing.T) {
	m := jobSet(t)
	n := Normalize(m).(map[string]any)
	assert.Equal(t, reflect.ValueOf(m).Pointer(), reflect.ValueOf(n).Pointer(), "same map returned")
	s := []any{1, "a", nil, map[string]any{"b": true}}
	ns := Normalize(s).([]any)
	assert.Same(t, &s[0], &ns[0], "same slice returned")
}

func TestFromObjectTyped(t *testing.T) {
	grace := int64(30)
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"x": "y"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "c", Image: "img",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					"nvidia.com/gpu": resource.MustParse("2"),
				}},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	m, err := FromObject(p)
	require.NoError(t, err)
	assert.Equal(t, "p", m["metadata"].(map[string]any)["name"])
	assert.Equal(t, map[string]any{"x": "y"}, m["metadata"].(map[string]any)["labels"])
	spec := m["spec"].(map[string]any)
	assert.Equal(t, 30, spec["terminationGracePeriodSeconds"])
	c0 := spec["containers"].([]any)[0].(map[string]any)
	assert.Equal(t, "2", c0["resources"].(map[string]any)["limits"].(map[string]any)["nvidia.com/gpu"])
	assert.Equal(t, "Running", m["status"].(map[string]any)["phase"])
	assert.Equal(t, m, Normalize(m), "already normal")

	c := newTestCompiler(t, Limits{})
	got, err := evalExpr(t, c, JQ, `.spec.terminationGracePeriodSeconds + 1`, Pod, Read, Input{Pod: m})
	require.NoError(t, err)
	assert.Equal(t, []any{31}, got)
}

func TestFromObjectUnstructured(t *testing.T) {
	u := unstructuredFrom(t, jobSetJSON)
	m, err := FromObject(u)
	require.NoError(t, err)
	assert.Equal(t, 3, m["metadata"].(map[string]any)["generation"])
	assert.Equal(t, int64(3), u.Object["metadata"].(map[string]any)["generation"], "the object is not modified")

	m, err = FromObject(map[string]any{"a": int64(1)})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": 1}, m)
}

func TestFromObjectErrors(t *testing.T) {
	_, err := FromObject(nil)
	assert.Error(t, err)
	_, err = FromObject(corev1.Pod{})
	assert.Error(t, err, "not a pointer")
	var nilPod *corev1.Pod
	_, err = FromObject(nilPod)
	assert.Error(t, err)
	var nilU *unstructured.Unstructured
	_, err = FromObject(nilU)
	assert.Error(t, err)
}
