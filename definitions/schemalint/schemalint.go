// Package schemalint checks a definition's object-side jq paths against the workload CRD's
// openAPIV3Schema and reports every path that can never resolve (a typo such as
// .spec.replicatedJob[], a field a framework renamed). It reads the schema statically: it only
// reports a field that the schema says cannot exist (an object with declared properties, no
// additionalProperties and no x-kubernetes-preserve-unknown-fields), so it never warns about
// what it cannot see. CEL expressions are not checked.
package schemalint

import (
	"fmt"
	"sort"
	"strings"

	"github.com/itchyny/gojq"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/gangmap/gangmap/definitions"
)

// Finding is a path that can never resolve on objects of the CRD.
type Finding struct {
	// Field is the definition field holding the expression, e.g.
	// spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath.
	Field string `json:"field"`
	// Path is the jq path up to the missing field, e.g. .spec.replicatedJob.
	Path string `json:"path"`
	// Message says what the schema has instead.
	Message string `json:"message"`
	// Unchecked marks a note rather than a finding: the schema does not describe the fields
	// under Path (x-kubernetes-preserve-unknown-fields, or an object with no properties), so the
	// definition's paths below it were not checked. Field is empty: one note per such object.
	Unchecked bool `json:"unchecked,omitempty"`
}

// Lint checks every object-side jq expression of k against the CRD version that k's root kind
// names. Errors: the CRD is for another group or kind, or has no schema for that version.
func Lint(k *definitions.Karta, crd *apiextensionsv1.CustomResourceDefinition) ([]Finding, error) {
	root := k.Spec.StructureDefinition.RootComponent.Kind
	if root == nil {
		return nil, fmt.Errorf("the definition's root component has no kind")
	}
	if crd.Spec.Group != root.Group || crd.Spec.Names.Kind != root.Kind {
		return nil, fmt.Errorf("CRD %s is for %s %s, the definition's root is %s", crd.Name, crd.Spec.Group, crd.Spec.Names.Kind, root)
	}
	var schema *apiextensionsv1.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if v.Name == root.Version && v.Schema != nil {
			schema = v.Schema.OpenAPIV3Schema
		}
	}
	if schema == nil {
		return nil, fmt.Errorf("CRD %s has no openAPIV3Schema for version %s", crd.Name, root.Version)
	}
	var out []Finding
	seen := map[string]bool{}
	unchecked := map[string]bool{}
	for _, e := range definitions.ObjectExpressions(k) {
		if e.Expr.JQ == "" {
			continue // CEL is not checked
		}
		q, err := gojq.Parse(e.Expr.JQ)
		if err != nil {
			continue // validation reports it
		}
		l := &linter{field: e.Field, unchecked: unchecked}
		l.query(q, []*node{{schema: schema, path: ""}})
		for _, f := range l.findings {
			if key := f.Field + f.Path; !seen[key] {
				seen[key] = true
				out = append(out, f)
			}
		}
	}
	paths := make([]string, 0, len(unchecked))
	for p := range unchecked {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		out = append(out, Finding{Path: p, Unchecked: true,
			Message: "the CRD schema does not describe the fields under it (x-kubernetes-preserve-unknown-fields or no properties): the definition's paths below it were not checked"})
	}
	return out, nil
}

// node is a place in the schema an expression's value comes from; nil means unknown.
type node struct {
	schema *apiextensionsv1.JSONSchemaProps
	path   string
}

type linter struct {
	field    string
	findings []Finding
	// unchecked collects the schema objects a path entered whose fields the schema leaves open.
	unchecked map[string]bool
}

var unknown = []*node{nil}

func (l *linter) query(q *gojq.Query, in []*node) []*node {
	if q == nil {
		return unknown
	}
	if len(q.FuncDefs) > 0 {
		return unknown
	}
	if q.Term != nil {
		return l.term(q.Term, in)
	}
	switch q.Op {
	case gojq.OpPipe:
		if len(q.Patterns) > 0 { // `left as $x | right`: right reads the same input
			l.query(q.Left, in)
			return l.query(q.Right, in)
		}
		return l.query(q.Right, l.query(q.Left, in))
	case gojq.OpComma, gojq.OpAlt:
		return append(l.query(q.Left, in), l.query(q.Right, in)...)
	default: // and, or, comparisons, arithmetic: both sides read the input
		l.query(q.Left, in)
		l.query(q.Right, in)
		return unknown
	}
}

func (l *linter) term(t *gojq.Term, in []*node) []*node {
	var cur []*node
	switch t.Type {
	case gojq.TermTypeIdentity:
		cur = in
	case gojq.TermTypeIndex:
		cur = l.index(in, t.Index)
	case gojq.TermTypeQuery:
		cur = l.query(t.Query, in)
	case gojq.TermTypeFunc:
		cur = l.fn(t.Func, in)
	case gojq.TermTypeIf:
		l.query(t.If.Cond, in)
		cur = l.query(t.If.Then, in)
		for _, e := range t.If.Elif {
			l.query(e.Cond, in)
			cur = append(cur, l.query(e.Then, in)...)
		}
		if t.If.Else != nil {
			cur = append(cur, l.query(t.If.Else, in)...)
		}
	case gojq.TermTypeArray:
		if t.Array != nil && t.Array.Query != nil {
			l.query(t.Array.Query, in)
		}
		cur = unknown
	default:
		cur = unknown
	}
	for _, s := range t.SuffixList {
		switch {
		case s.Index != nil:
			cur = l.index(cur, s.Index)
		case s.Iter:
			cur = elements(cur)
		case s.Optional:
			// `?` suppresses errors; the place is the same
		default:
			cur = unknown
		}
	}
	return cur
}

// fn follows the functions whose argument reads a known place: select(f) and has/length keep
// or leave the input, map(f) and any/all(f) read the elements, any/all(gen; cond) read gen's
// outputs. Other functions are not followed (no findings, unknown output).
func (l *linter) fn(f *gojq.Func, in []*node) []*node {
	switch {
	case f.Name == "select" && len(f.Args) == 1:
		l.query(f.Args[0], in)
		return in
	case f.Name == "map" && len(f.Args) == 1:
		l.query(f.Args[0], elements(in))
		return unknown
	case (f.Name == "any" || f.Name == "all") && len(f.Args) == 1:
		l.query(f.Args[0], elements(in))
	case (f.Name == "any" || f.Name == "all") && len(f.Args) == 2:
		l.query(f.Args[1], l.query(f.Args[0], in))
	case (f.Name == "min_by" || f.Name == "max_by" || f.Name == "sort_by" || f.Name == "group_by") && len(f.Args) == 1:
		l.query(f.Args[0], elements(in))
	}
	return unknown
}

func (l *linter) index(in []*node, idx *gojq.Index) []*node {
	name, _ := IndexKey(idx)
	if name == "" {
		if idx.Start != nil && !idx.IsSlice {
			return elements(in) // .[0]
		}
		return unknown
	}
	var out []*node
	for _, n := range in {
		out = append(out, l.child(n, name))
	}
	return out
}

func (l *linter) child(n *node, name string) *node {
	if n == nil || n.schema == nil {
		return nil
	}
	s := n.schema
	p := n.path + "." + name
	if prop, ok := s.Properties[name]; ok {
		return &node{schema: &prop, path: p}
	}
	if open(s) {
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			return &node{schema: s.AdditionalProperties.Schema, path: p}
		}
		// metadata is ObjectMeta, which CRD schemas never spell out; its map fields (labels,
		// annotations) are open by design. Anything else open is worth saying.
		// A schema with additionalProperties (a map, beside declared fields or not) allows every
		// key by design: nothing to check and nothing to note (issue 31 point 10).
		if at := n.path; at != ".metadata" && !strings.HasPrefix(at, ".metadata.") && !isMap(s) && s.AdditionalProperties == nil {
			if at == "" {
				at = "."
			}
			l.unchecked[at] = true
		}
		return nil
	}
	l.findings = append(l.findings, Finding{Field: l.field, Path: p, Message: missing(n.path, name, s)})
	return nil
}

// IndexKey is the object key idx reads (.name, ."name" or .["name"], no interpolation), else false.
func IndexKey(idx *gojq.Index) (string, bool) {
	if idx.Name != "" {
		return idx.Name, true
	}
	if idx.Str != nil && len(idx.Str.Queries) == 0 {
		return idx.Str.Str, true
	}
	if s := literalString(idx.Start); s != "" && !idx.IsSlice && idx.End == nil {
		return s, true // .spec["replicatedJobs"]
	}
	return "", false
}

// literalString is q's value when q is a string literal with no interpolation, else "".
func literalString(q *gojq.Query) string {
	if q == nil || q.Term == nil || q.Term.Type != gojq.TermTypeString || q.Term.Str == nil ||
		len(q.Term.Str.Queries) > 0 || len(q.Term.SuffixList) > 0 {
		return ""
	}
	return q.Term.Str.Str
}

// isMap: the schema is a map whose values it leaves undescribed (labels-like): open by design.
func isMap(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.AdditionalProperties != nil && s.AdditionalProperties.Allows && len(s.Properties) == 0 &&
		(s.XPreserveUnknownFields == nil || !*s.XPreserveUnknownFields)
}

// open: the schema allows fields it does not list.
func open(s *apiextensionsv1.JSONSchemaProps) bool {
	return len(s.Properties) == 0 || s.AdditionalProperties != nil ||
		(s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields)
}

func elements(in []*node) []*node {
	var out []*node
	for _, n := range in {
		switch {
		case n == nil || n.schema == nil:
			out = append(out, nil)
		case n.schema.Items != nil && n.schema.Items.Schema != nil:
			out = append(out, &node{schema: n.schema.Items.Schema, path: n.path + "[]"})
		case n.schema.AdditionalProperties != nil && n.schema.AdditionalProperties.Schema != nil:
			out = append(out, &node{schema: n.schema.AdditionalProperties.Schema, path: n.path + "[]"})
		default:
			out = append(out, nil)
		}
	}
	return out
}

func missing(at, name string, s *apiextensionsv1.JSONSchemaProps) string {
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	where := at
	if where == "" {
		where = "the object"
	}
	msg := fmt.Sprintf("the CRD schema has no field %q under %s, so this path never resolves", name, where)
	if best := Closest(name, names); best != "" {
		msg += fmt.Sprintf("; did you mean %q?", best)
	} else {
		msg += fmt.Sprintf(" (fields: %s)", strings.Join(names, ", "))
	}
	return msg
}

// Closest is the name of names within edit distance 2 of name (case-insensitive), the closest
// first, or "": the "did you mean" of a misspelt field. gangmap plan uses it on a workload's keys.
func Closest(name string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := distance(strings.ToLower(name), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
