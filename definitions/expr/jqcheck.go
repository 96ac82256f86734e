package expr

import (
	"fmt"

	"github.com/itchyny/gojq"
)

// forbiddenJQFuncs are the jq functions upstream Workload Map rejects in every expression, at any
// arity: they delete, or generate unbounded or whole-document streams.
var forbiddenJQFuncs = map[string]bool{
	"del":     true,
	"range":   true,
	"paths":   true,
	"recurse": true,
	"walk":    true,
	"repeat":  true,
}

// assignOps are the jq update-assignment operators, allowed only in Action mode.
var assignOps = map[gojq.Operator]bool{
	gojq.OpAssign:    true,
	gojq.OpModify:    true,
	gojq.OpUpdateAdd: true,
	gojq.OpUpdateSub: true,
	gojq.OpUpdateMul: true,
	gojq.OpUpdateDiv: true,
	gojq.OpUpdateMod: true,
	gojq.OpUpdateAlt: true,
}

// MaxJQSourceBytes bounds the text of one jq expression, checked before it is parsed. gojq's
// parse costs about 400 bytes of memory per byte of text, and its compiler time grows with the
// square of the nesting (a definition's `1+1+...+1` of 100,000 terms, 200 KB, compiled for minutes
// and held 500 MB); the longest expression of the built-in catalog is about 2 KB.
const MaxJQSourceBytes = 16 << 10

// MaxJQDepth bounds the nesting of a jq expression's syntax tree: queries, terms and patterns
// within one another, a binary operator's left operand one level below it (gojq's parser chains
// `a + b + c` to the left). gojq's compiler looks each function up through every enclosing scope,
// and gangmap's guards make each arithmetic operator a function call, so compile time grows with
// the square of the depth (8,000 chained additions: about a second). The built-in catalog's
// deepest expression nests 38 levels.
const MaxJQDepth = 256

// jqChecker walks a parsed jq query and reports the first construct the upstream rules forbid,
// or a tree nested deeper than MaxJQDepth. Every method returns "" when its node and all nodes
// below it are allowed, otherwise the reason.
type jqChecker struct {
	mode Mode
	// depth is the nesting of the node being checked (methods take the checker by value, so
	// each level of the walk has its own).
	depth int
}

// checkJQ returns why q is not allowed in mode, or "" when it is.
func checkJQ(q *gojq.Query, mode Mode) string {
	return jqChecker{mode: mode}.query(q)
}

// deeper returns the checker one level down, or the reason it may not go there.
func (c jqChecker) deeper() (jqChecker, string) {
	c.depth++
	if c.depth > MaxJQDepth {
		return c, fmt.Sprintf("the expression nests deeper than %d levels (operators, parentheses, arrays, objects, pipes; expr.MaxJQDepth)", MaxJQDepth)
	}
	return c, ""
}

func (c jqChecker) query(q *gojq.Query) string {
	if q == nil {
		return ""
	}
	c, r := c.deeper()
	if r != "" {
		return r
	}
	if assignOps[q.Op] && c.mode == Read {
		return fmt.Sprintf("assignment operator %q is not allowed in a read expression (only in actions)", q.Op.String())
	}
	for _, fd := range q.FuncDefs {
		if r := c.query(fd.Body); r != "" {
			return r
		}
	}
	for _, p := range q.Patterns {
		if r := c.pattern(p); r != "" {
			return r
		}
	}
	if r := c.term(q.Term); r != "" {
		return r
	}
	return c.queries(q.Left, q.Right)
}

func (c jqChecker) queries(qs ...*gojq.Query) string {
	for _, q := range qs {
		if r := c.query(q); r != "" {
			return r
		}
	}
	return ""
}

func (c jqChecker) term(t *gojq.Term) string {
	if t == nil {
		return ""
	}
	c, r := c.deeper()
	if r != "" {
		return r
	}
	switch t.Type {
	case gojq.TermTypeRecurse:
		return "recursive descent (..) is not allowed"
	case gojq.TermTypeFunc:
		if t.Func != nil && forbiddenJQFuncs[t.Func.Name] {
			return fmt.Sprintf("function %s/%d is not allowed (forbidden: del, range, paths, recurse, walk, repeat)",
				t.Func.Name, len(t.Func.Args))
		}
	case gojq.TermTypeUnary:
		if t.Unary != nil {
			if r := c.term(t.Unary.Term); r != "" {
				return r
			}
		}
	case gojq.TermTypeReduce, gojq.TermTypeForeach:
		if r := c.pattern(boundPattern(t)); r != "" {
			return r
		}
	}
	if r := c.queries(termQueries(t)...); r != "" {
		return r
	}
	for _, s := range t.SuffixList {
		if r := c.queries(indexQueries(s.Index)...); r != "" {
			return r
		}
	}
	return ""
}

func (c jqChecker) pattern(p *gojq.Pattern) string {
	if p == nil {
		return ""
	}
	c, r := c.deeper()
	if r != "" {
		return r
	}
	for _, e := range p.Array {
		if r := c.pattern(e); r != "" {
			return r
		}
	}
	for _, o := range p.Object {
		if r := c.queries(append(stringQueries(o.KeyString), o.KeyQuery)...); r != "" {
			return r
		}
		if r := c.pattern(o.Val); r != "" {
			return r
		}
	}
	return ""
}

// boundPattern returns the pattern a reduce or foreach term binds.
func boundPattern(t *gojq.Term) *gojq.Pattern {
	switch {
	case t.Reduce != nil:
		return t.Reduce.Pattern
	case t.Foreach != nil:
		return t.Foreach.Pattern
	}
	return nil
}

// termQueries lists the sub-queries held directly by t (suffixes and unary operands aside).
func termQueries(t *gojq.Term) []*gojq.Query {
	var qs []*gojq.Query
	qs = append(qs, indexQueries(t.Index)...)
	qs = append(qs, stringQueries(t.Str)...)
	if t.Func != nil {
		qs = append(qs, t.Func.Args...)
	}
	if t.Object != nil {
		for _, kv := range t.Object.KeyVals {
			qs = append(qs, stringQueries(kv.KeyString)...)
			qs = append(qs, kv.KeyQuery, kv.Val)
		}
	}
	if t.Array != nil {
		qs = append(qs, t.Array.Query)
	}
	return append(qs, controlQueries(t)...)
}

// controlQueries lists the sub-queries of if, try, reduce, foreach, label and parenthesised
// terms.
func controlQueries(t *gojq.Term) []*gojq.Query {
	var qs []*gojq.Query
	if i := t.If; i != nil {
		qs = append(qs, i.Cond, i.Then, i.Else)
		for _, e := range i.Elif {
			qs = append(qs, e.Cond, e.Then)
		}
	}
	if t.Try != nil {
		qs = append(qs, t.Try.Body, t.Try.Catch)
	}
	if r := t.Reduce; r != nil {
		qs = append(qs, r.Query, r.Start, r.Update)
	}
	if f := t.Foreach; f != nil {
		qs = append(qs, f.Query, f.Start, f.Update, f.Extract)
	}
	if t.Label != nil {
		qs = append(qs, t.Label.Body)
	}
	return append(qs, t.Query)
}

func indexQueries(i *gojq.Index) []*gojq.Query {
	if i == nil {
		return nil
	}
	return append(stringQueries(i.Str), i.Start, i.End)
}

// stringQueries returns the interpolated queries of s in a fresh slice (callers append to it).
func stringQueries(s *gojq.String) []*gojq.Query {
	if s == nil {
		return nil
	}
	return append([]*gojq.Query(nil), s.Queries...)
}
