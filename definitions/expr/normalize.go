package expr

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// Normalize converts a value tree to the JSON-shaped types gojq accepts: nil, bool, int,
// float64, *big.Int, string, []any and map[string]any.
//
//   - int8..int64, uint8..uint64 and uint become int; an unsigned value beyond int becomes a
//     *big.Int.
//   - float32 becomes the float64 with the same shortest decimal form (float32(0.1) gives 0.1).
//   - json.Number becomes int when it is an integer that fits, *big.Int for a larger integer,
//     otherwise float64 (a malformed one becomes its string).
//   - Maps with string keys (map[string]string, map[string]int64, ...) become map[string]any;
//     slices and arrays ([]string, []map[string]any, ...) become []any, except []byte, which
//     becomes its base64 string as encoding/json renders it.
//   - Named scalar types (such as corev1.PodPhase) become their underlying JSON type, pointers
//     are followed (nil is null).
//   - Anything else (structs, funcs, channels, maps with other key types) is returned unchanged;
//     use FromObject for typed Kubernetes objects.
//
// Normalize copies only when needed: a map or slice whose whole subtree is already JSON-shaped is
// returned as is, and one that needs a conversion somewhere is replaced by a fresh copy, so v
// itself is never modified. The result may share maps and slices with v.
func Normalize(v any) any {
	n, _ := normalize(v, false)
	return n
}

// normalize returns the normalized v and whether it differs from v. With inPlace, maps and
// []any slices are updated in place instead of copied (for trees the caller owns).
func normalize(v any, inPlace bool) (any, bool) {
	switch t := v.(type) {
	case nil, bool, string, int, float64, *big.Int:
		return v, false
	case map[string]any:
		if n, changed := normalizeMap(t, inPlace); changed {
			return n, true
		}
		return v, false
	case []any:
		if n, changed := normalizeSlice(t, inPlace); changed {
			return n, true
		}
		return v, false // v, not t: boxing t again would allocate
	case int64:
		return int(t), true
	case int32:
		return int(t), true
	case float32:
		return float32To64(t), true
	case json.Number:
		return normalizeNumber(t), true
	}
	return normalizeReflect(reflect.ValueOf(v)), true
}

func normalizeMap(m map[string]any, inPlace bool) (map[string]any, bool) {
	var out map[string]any
	if inPlace {
		out = m
	}
	changed := false
	for k, e := range m {
		n, c := normalize(e, inPlace)
		if !c {
			continue
		}
		if out == nil {
			out = maps.Clone(m)
		}
		out[k], changed = n, true
	}
	if !changed {
		return m, false
	}
	return out, true
}

func normalizeSlice(s []any, inPlace bool) ([]any, bool) {
	var out []any
	if inPlace {
		out = s
	}
	changed := false
	for i, e := range s {
		n, c := normalize(e, inPlace)
		if !c {
			continue
		}
		if out == nil {
			out = slices.Clone(s)
		}
		out[i], changed = n, true
	}
	if !changed {
		return s, false
	}
	return out, true
}

func float32To64(f float32) float64 {
	g, err := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	if err != nil {
		return float64(f)
	}
	return g
}

func normalizeNumber(n json.Number) any {
	if i, err := strconv.ParseInt(string(n), 10, 0); err == nil {
		return int(i)
	}
	if !strings.ContainsAny(string(n), ".eE") {
		if b, ok := new(big.Int).SetString(string(n), 10); ok {
			return b
		}
	}
	if f, err := n.Float64(); err == nil {
		return f
	}
	return string(n)
}

// normalizeReflect handles the types normalize has no fast path for.
func normalizeReflect(rv reflect.Value) any {
	switch rv.Kind() {
	case reflect.Bool:
		return rv.Bool()
	case reflect.String:
		return rv.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return normalizeUint(rv.Uint())
	case reflect.Float32:
		return float32To64(float32(rv.Float()))
	case reflect.Float64:
		return rv.Float()
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return Normalize(rv.Elem().Interface())
	case reflect.Map:
		return normalizeReflectMap(rv)
	case reflect.Slice, reflect.Array:
		return normalizeReflectList(rv)
	}
	return rv.Interface()
}

func normalizeUint(u uint64) any {
	if u > math.MaxInt {
		return new(big.Int).SetUint64(u)
	}
	return int(u)
}

func normalizeReflectMap(rv reflect.Value) any {
	if rv.Type().Key().Kind() != reflect.String {
		return rv.Interface()
	}
	if rv.IsNil() {
		return nil
	}
	out := make(map[string]any, rv.Len())
	for it := rv.MapRange(); it.Next(); {
		out[it.Key().String()] = Normalize(it.Value().Interface())
	}
	return out
}

func normalizeReflectList(rv reflect.Value) any {
	if rv.Kind() == reflect.Slice && rv.IsNil() {
		return nil
	}
	if rv.Type().Elem().Kind() == reflect.Uint8 && rv.Kind() == reflect.Slice {
		return base64.StdEncoding.EncodeToString(rv.Bytes())
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = Normalize(rv.Index(i).Interface())
	}
	return out
}

// FromObject converts a Kubernetes object to a normalized map: a typed object such as *corev1.Pod
// (a non-nil pointer) through runtime.DefaultUnstructuredConverter, without a JSON round trip;
// a runtime.Unstructured such as *unstructured.Unstructured from its content, copied where it
// needs converting (its int64 numbers) and otherwise shared; a map[string]any through Normalize.
// Errors: a nil object, a non-pointer or the converter's error.
func FromObject(obj any) (map[string]any, error) {
	switch o := obj.(type) {
	case nil:
		return nil, errors.New("expr: FromObject of nil")
	case map[string]any:
		return Normalize(o).(map[string]any), nil
	case runtime.Unstructured:
		if rv := reflect.ValueOf(o); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return nil, fmt.Errorf("expr: FromObject of a nil %T", obj)
		}
		m, _ := Normalize(o.UnstructuredContent()).(map[string]any)
		return m, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("expr: converting %T: %w", obj, err)
	}
	n, _ := normalize(m, true) // the converter's map is ours: convert in place
	return n.(map[string]any), nil
}
