package expr

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
)

// AsInt64 converts one expression result to an int64. It accepts JSON numbers with no fractional
// part (int, float64 such as 2.0, *big.Int, json.Number and the other Go integer and float types)
// and numeric strings such as "2" or " 3 " (Knative keeps its min-scale in a string annotation).
// Anything else is an error saying what was seen, e.g.
// `expected a number or a numeric string, got "abc" (string)`; so are fractional values (2.5)
// and values beyond the int64 range (1e30).
func AsInt64(v any) (int64, error) {
	switch t := v.(type) {
	case string:
		return stringToInt64(t)
	case json.Number:
		return stringToInt64(string(t))
	case *big.Int:
		if t == nil || !t.IsInt64() {
			return 0, fmt.Errorf("number %v is out of the int64 range", t)
		}
		return t.Int64(), nil
	case float64:
		return floatToInt64(t)
	case float32:
		return floatToInt64(float64(t))
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if rv.Uint() > math.MaxInt64 {
			return 0, fmt.Errorf("number %d is out of the int64 range", rv.Uint())
		}
		return int64(rv.Uint()), nil
	}
	return 0, fmt.Errorf("expected a number or a numeric string, got %s", describe(v))
}

func floatToInt64(f float64) (int64, error) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return 0, fmt.Errorf("expected a finite number, got %v", f)
	case f != math.Trunc(f):
		return 0, fmt.Errorf("expected a whole number, got %v", f)
	case f < math.MinInt64 || f >= math.MaxInt64: // float64(MaxInt64) is 2^63, out of range
		return 0, fmt.Errorf("number %v is out of the int64 range", f)
	}
	return int64(f), nil
}

func stringToInt64(s string) (int64, error) {
	trimmed := strings.TrimSpace(s)
	if i, err := strconv.ParseInt(trimmed, 10, 64); err == nil {
		return i, nil
	} else if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
		return 0, fmt.Errorf("number %q is out of the int64 range", s)
	}
	f, err := strconv.ParseFloat(trimmed, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("expected a number or a numeric string, got %s", describe(s))
	}
	return floatToInt64(f)
}

// describe renders a value and its JSON type for an error message: `"abc" (string)`,
// `true (boolean)`, `null`.
func describe(v any) string {
	if v == nil {
		return "null"
	}
	b, err := json.Marshal(v)
	text := string(b)
	if err != nil {
		text = fmt.Sprintf("%v", v)
	}
	if r := []rune(text); len(r) > 60 {
		text = string(r[:60]) + "..."
	}
	return fmt.Sprintf("%s (%s)", text, jsonTypeName(v))
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

// Truthy reports whether results count as true: CEL's bool, jq's truthiness. It looks at the
// first result only (jq's `if` and `select` take one value at a time): false and null are false,
// anything else (0, "" and [] included, as in jq) is true. No result is false.
func Truthy(results []any) bool {
	if len(results) == 0 {
		return false
	}
	switch r := results[0].(type) {
	case nil:
		return false
	case bool:
		return r
	}
	return true
}
