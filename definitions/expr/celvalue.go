package expr

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// celToJSON converts a CEL value to JSON-shaped Go values: null to nil, bool, int and uint to
// int, double to float64, string, bytes to base64, timestamp to RFC 3339, duration to seconds
// with an "s" suffix, lists to []any, maps with string keys to map[string]any, a present optional
// to its value and an absent one to nil. Other values (types, unknowns, maps with non-string keys,
// a uint beyond int) are an error.
func celToJSON(v ref.Val) (any, error) {
	switch t := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(t), nil
	case types.Int:
		return int(t), nil
	case types.Uint:
		if uint64(t) > math.MaxInt {
			return nil, fmt.Errorf("uint %d does not fit in an int", uint64(t))
		}
		return int(t), nil
	case types.Double:
		return float64(t), nil
	case types.String:
		return string(t), nil
	case types.Bytes:
		return base64.StdEncoding.EncodeToString(t), nil
	case types.Timestamp:
		return t.Time.UTC().Format(time.RFC3339Nano), nil
	case types.Duration:
		return strconv.FormatFloat(t.Duration.Seconds(), 'f', -1, 64) + "s", nil
	case *types.Optional:
		if !t.HasValue() {
			return nil, nil
		}
		return celToJSON(t.GetValue())
	case traits.Mapper:
		return celMapToJSON(t)
	case traits.Lister:
		return celListToJSON(t)
	}
	return nil, fmt.Errorf("cannot convert a CEL %s to JSON", v.Type().TypeName())
}

func celListToJSON(l traits.Lister) (any, error) {
	// A list bound from the input (a native []any) converts without a walk through CEL values.
	if native, ok := l.Value().([]any); ok {
		return Normalize(native), nil
	}
	size, ok := l.Size().(types.Int)
	if !ok {
		return nil, fmt.Errorf("list without a size")
	}
	out := make([]any, 0, int(size))
	for it := l.Iterator(); it.HasNext() == types.True; {
		e, err := celToJSON(it.Next())
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func celMapToJSON(m traits.Mapper) (any, error) {
	if native, ok := m.Value().(map[string]any); ok {
		return Normalize(native), nil
	}
	out := make(map[string]any)
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		key, ok := k.(types.String)
		if !ok {
			return nil, fmt.Errorf("map key %v is a %s, not a string", k, k.Type().TypeName())
		}
		e, err := celToJSON(m.Get(k))
		if err != nil {
			return nil, err
		}
		out[string(key)] = e
	}
	return out, nil
}
