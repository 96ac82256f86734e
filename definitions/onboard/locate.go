package onboard

import (
	"context"
	"fmt"
	"reflect"

	"github.com/itchyny/gojq"

	"github.com/gangmap/gangmap/definitions/expr"
)

// NotAPathError says a definition expression yields values that are not places in the workload
// object (a jq expression that builds a new object, a CEL accessor), so nothing can be written
// through it.
type NotAPathError struct {
	// Expression is the expression's text.
	Expression string
	// Reason says why.
	Reason string
}

func (e *NotAPathError) Error() string {
	return fmt.Sprintf("%q is not a plain path into the workload: %s", e.Expression, e.Reason)
}

// locator finds where in one normalized workload object a definition expression's values are.
type locator struct {
	compiler *expr.Compiler
	in       expr.Input // Object is the document written to; Normalized is true
}

// locate returns the paths in l.in.Object of every value prog yields, in prog's order.
//
// A jq expression is located as jq's own path(EXPR) does (gangmap's bounded evaluator, the same
// limits as any definition expression). `A // B` is located as A, so `.spec.labels // {}` names
// .spec.labels even when the manifest has no labels yet. When path() refuses the expression (it
// goes through to_entries, a variable or a function that copies), each object it yields is
// looked up in the document by identity: an expression that hands back a piece of the workload
// unchanged is still a path. Anything else (a newly built object, a scalar from such an
// expression, a CEL accessor) is a *NotAPathError.
func (l *locator) locate(ctx context.Context, prog expr.Program) ([]Path, error) {
	if prog.Language() != expr.JQ {
		return nil, &NotAPathError{Expression: prog.Source(), Reason: "only jq paths can be written through (CEL yields values, not places)"}
	}
	src := prog.Source()
	if left, ok := alternativeLeft(src); ok {
		src = left
	}
	if paths, err := l.jqPaths(ctx, src); err == nil {
		return paths, nil
	}
	return l.byIdentity(ctx, prog)
}

// alternativeLeft returns A when src is `A // B` at its top level.
func alternativeLeft(src string) (string, bool) {
	q, err := gojq.Parse(src)
	if err != nil || q.Op != gojq.OpAlt || q.Left == nil || len(q.FuncDefs) > 0 {
		return "", false
	}
	return q.Left.String(), true
}

// jqPaths evaluates path(src) on the document.
func (l *locator) jqPaths(ctx context.Context, src string) ([]Path, error) {
	prog, err := l.compiler.Compile(expr.JQ, "path("+src+")", expr.Object, expr.Read)
	if err != nil {
		return nil, err
	}
	res, err := prog.Eval(ctx, l.in)
	if err != nil {
		return nil, err
	}
	out := make([]Path, 0, len(res))
	for _, r := range res {
		p, err := toPath(r)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// toPath converts one result of jq's path() into a Path.
func toPath(v any) (Path, error) {
	elems, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("path() gave %T", v)
	}
	p := make(Path, 0, len(elems))
	for _, e := range elems {
		switch k := e.(type) {
		case string:
			p = append(p, k)
		case int:
			p = append(p, k)
		case float64:
			if k != float64(int(k)) {
				return nil, fmt.Errorf("path() gave index %v", k)
			}
			p = append(p, int(k))
		default:
			return nil, fmt.Errorf("path() gave a %T element (slices and object keys only)", e)
		}
	}
	return p, nil
}

// byIdentity evaluates prog and finds each object it yields in the document by identity.
func (l *locator) byIdentity(ctx context.Context, prog expr.Program) ([]Path, error) {
	res, err := prog.Eval(ctx, l.in)
	if err != nil {
		return nil, err
	}
	var out []Path
	for _, r := range res {
		if r == nil {
			continue // the value is absent here: nothing to write (as Resolve sees no template)
		}
		m, ok := r.(map[string]any)
		if !ok {
			return nil, &NotAPathError{Expression: prog.Source(), Reason: fmt.Sprintf("it yields a %T that jq's path() cannot place", r)}
		}
		p, found := find(l.in.Object, m, nil, 0)
		if !found {
			return nil, &NotAPathError{Expression: prog.Source(), Reason: "it yields an object that is not part of the workload (built by the expression)"}
		}
		out = append(out, p)
	}
	return out, nil
}

// maxFindDepth bounds the identity search (Kubernetes objects are far shallower).
const maxFindDepth = 64

// find returns the path of the map target inside v, by identity.
func find(v any, target map[string]any, at Path, depth int) (Path, bool) {
	if depth > maxFindDepth {
		return nil, false
	}
	switch t := v.(type) {
	case map[string]any:
		if reflect.ValueOf(t).UnsafePointer() == reflect.ValueOf(target).UnsafePointer() {
			return at, true
		}
		for k, c := range t {
			if p, ok := find(c, target, at.Child(k), depth+1); ok {
				return p, true
			}
		}
	case []any:
		for i, c := range t {
			if p, ok := find(c, target, at.Child(i), depth+1); ok {
				return p, true
			}
		}
	}
	return nil, false
}
