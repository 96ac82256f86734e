package app

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/itchyny/gojq"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/schemalint"
)

// hiddenDefault is a `//` alternative of a definition expression whose left side, a plain path
// from the workload's root, resolved to nothing on the workload, so that what follows it stood
// in: `.spec.workr.replicas // 1` reads 1 whatever the workload says. The expression is valid and
// resolves, so it is no miss; said nowhere, a misspelt path read this way sizes the gang wrong
// without a word (issue 31 point 1).
type hiddenDefault struct {
	// Field is the definition field holding the expression.
	Field string `json:"field"`
	// Path is the alternative that resolved to nothing, e.g. .spec.workr.replicas.
	Path string `json:"path"`
	// Missing is the first step of Path the workload lacks (.spec.workr), Suggest a key of the
	// object at its parent within edit distance 2 of the missing key ("").
	Missing string `json:"missing"`
	Suggest string `json:"suggest,omitempty"`
	// Default is the expression that stood in (the rest of the alternation).
	Default string `json:"default"`
}

// String says it as a plan note.
func (h hiddenDefault) String() string {
	s := fmt.Sprintf("%s: %s resolved to nothing on the workload (%s is absent), so the default %s stood in", h.Field, h.Path, h.Missing, h.Default)
	if h.Suggest != "" {
		return s + fmt.Sprintf("; did you mean %q? (`gangmap validate --crd` checks the path against the kind's CRD)", h.Suggest)
	}
	return s
}

// hiddenDefaults finds, in every object-side jq expression of k (definitions.ObjectExpressions),
// the top-level alternatives `A // B [// C]...` whose A (and each following alternative that is
// a plain path) is a path of object keys that is absent or null on obj; it stops at the first
// alternative that resolves. Paths under iterations or pipes are not followed: only what reads
// from the root is known here. Sorted by field.
func hiddenDefaults(k *definitions.Karta, obj map[string]any) []hiddenDefault {
	var out []hiddenDefault
	for _, e := range definitions.ObjectExpressions(k) {
		if e.Expr.JQ == "" {
			continue
		}
		q, err := gojq.Parse(e.Expr.JQ)
		if err != nil {
			continue
		}
		// a // b // c parses right-associatively: a // (b // c), so q.Right is the default of q.Left.
		for ; q.Op == gojq.OpAlt; q = q.Right {
			keys, ok := plainPath(q.Left)
			if !ok {
				break
			}
			missing, parent, found := lookup(obj, keys)
			if found {
				break
			}
			h := hiddenDefault{Field: e.Field, Path: q.Left.String(), Missing: "." + strings.Join(keys[:missing+1], "."), Default: q.Right.String()}
			others := slices.DeleteFunc(slices.Sorted(maps.Keys(parent)), func(k string) bool { return k == keys[missing] })
			h.Suggest = schemalint.Closest(keys[missing], others)
			out = append(out, h)
		}
	}
	slices.SortStableFunc(out, func(a, b hiddenDefault) int { return strings.Compare(a.Field, b.Field) })
	return out
}

// plainPath is q's keys when q is .a.b["c"]... (no iteration, no function), else false.
func plainPath(q *gojq.Query) ([]string, bool) {
	if q.Op != 0 || q.Term == nil || q.Term.Type != gojq.TermTypeIndex || q.Term.Index == nil {
		return nil, false
	}
	first, ok := schemalint.IndexKey(q.Term.Index)
	if !ok {
		return nil, false
	}
	keys := []string{first}
	for _, s := range q.Term.SuffixList {
		if s.Index == nil {
			return nil, false
		}
		k, ok := schemalint.IndexKey(s.Index)
		if !ok {
			return nil, false
		}
		keys = append(keys, k)
	}
	return keys, true
}

// lookup follows keys from obj. found: the value exists and is neither null nor false (what jq's
// // keeps). Else missing is the index of the first key absent (or null) and parent the object
// that lacks it (nil when a step is not an object).
func lookup(obj map[string]any, keys []string) (missing int, parent map[string]any, found bool) {
	cur := obj
	for i, k := range keys {
		v, ok := cur[k]
		if !ok || v == nil {
			return i, cur, false
		}
		if i == len(keys)-1 {
			b, isBool := v.(bool)
			return i, cur, !isBool || b
		}
		next, isMap := v.(map[string]any)
		if !isMap {
			return i + 1, nil, false
		}
		cur = next
	}
	return len(keys) - 1, cur, false
}
