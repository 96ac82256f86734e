package expr

import (
	"encoding/json"
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAsInt64(t *testing.T) {
	huge, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	tests := []struct {
		name    string
		in      any
		want    int64
		wantErr string
	}{
		{"int", 2, 2, ""},
		{"int64", int64(-5), -5, ""},
		{"uint8", uint8(7), 7, ""},
		{"whole float", 2.0, 2, ""},
		{"float32", float32(3), 3, ""},
		{"numeric string", "2", 2, ""},
		{"padded string", " 3 ", 3, ""},
		{"negative string", "-4", -4, ""},
		{"whole float string", "2.0", 2, ""},
		{"json.Number", json.Number("12"), 12, ""},
		{"big.Int", big.NewInt(9), 9, ""},
		{"max int64", int64(math.MaxInt64), math.MaxInt64, ""},
		{"fraction", 2.5, 0, "expected a whole number, got 2.5"},
		{"fractional string", "2.5", 0, "expected a whole number, got 2.5"},
		{"word", "abc", 0, `expected a number or a numeric string, got "abc" (string)`},
		{"empty string", "", 0, `expected a number or a numeric string, got "" (string)`},
		{"bool", true, 0, "expected a number or a numeric string, got true (boolean)"},
		{"null", nil, 0, "expected a number or a numeric string, got null"},
		{"object", map[string]any{"a": 1}, 0, `got {"a":1} (object)`},
		{"array", []any{1}, 0, "got [1] (array)"},
		{"1e30", 1e30, 0, "out of the int64 range"},
		{"2^63", math.Pow(2, 63), 0, "out of the int64 range"},
		{"big string", "99999999999999999999", 0, "out of the int64 range"},
		{"big.Int beyond", huge, 0, "out of the int64 range"},
		{"uint64 beyond", uint64(math.MaxUint64), 0, "out of the int64 range"},
		{"NaN", math.NaN(), 0, "finite"},
		{"NaN string", "NaN", 0, `got "NaN" (string)`},
		{"Inf", math.Inf(1), 0, "finite"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AsInt64(tt.in)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestTruthy(t *testing.T) {
	tests := []struct {
		name string
		in   []any
		want bool
	}{
		{"no result", nil, false},
		{"empty", []any{}, false},
		{"true", []any{true}, true},
		{"false", []any{false}, false},
		{"null", []any{nil}, false},
		{"zero is truthy in jq", []any{0}, true},
		{"empty string is truthy in jq", []any{""}, true},
		{"empty array is truthy in jq", []any{[]any{}}, true},
		{"first result decides", []any{false, true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Truthy(tt.in))
		})
	}
}

func TestTruthyWithPrograms(t *testing.T) {
	c := newTestCompiler(t, Limits{})
	in := Input{Object: jobSet(t)}
	for _, tt := range []struct {
		lang Language
		src  string
		want bool
	}{
		{JQ, `.spec.suspend`, false},
		{JQ, `.spec.suspend | not`, true},
		{JQ, `.status.conditions[] | select(.type == "StartupPolicyCompleted") | .status == "True"`, true},
		{JQ, `.status.conditions[] | select(.type == "Failed")`, false},
		{CEL, `object.spec.suspend`, false},
		{CEL, `object.status.conditions.exists(c, c.type == 'StartupPolicyCompleted')`, true},
	} {
		got, err := evalExpr(t, c, tt.lang, tt.src, Object, Read, in)
		require.NoError(t, err)
		assert.Equal(t, tt.want, Truthy(got), tt.src)
	}
}
