package expr

import (
	"errors"
	"strings"

	"github.com/itchyny/gojq"
)

// NullSafeJQ rewrites a jq read expression so that it tolerates absent (null) fields the way a
// framework's API defaults do, for use only after the expression as written failed on null:
//
//   - every operand of `*` and `/` becomes `(operand // 1)`: an omitted count (JobSet replicas,
//     Job parallelism, LWS size, Ray numOfHosts) is 1, the Kubernetes default of a count field;
//   - every operand of `-` becomes `(operand // 0)`;
//   - every iteration `x[]` becomes `x[]?`: iterating an absent list (a RayCluster without
//     workerGroupSpecs) yields nothing instead of the error "cannot iterate over: null".
//
// gojq's `//` keeps 0 (only null and false fall through), so a present 0 stays 0. It returns the
// rewritten source and true, or "" and false when src does not parse or nothing changed.
func NullSafeJQ(src string) (string, bool) {
	q, err := gojq.Parse(src)
	if err != nil {
		return "", false
	}
	r := &nullRewriter{}
	r.query(q)
	if !r.changed {
		return "", false
	}
	return q.String(), true
}

// IsNullError reports whether err is an evaluation error caused by a null operand or an
// iteration over null (gojq's "cannot iterate over: null", "cannot multiply: null (null) and
// number (4)"), never a limit error (timeout, size).
func IsNullError(err error) bool {
	if err == nil {
		return false
	}
	var le *LimitError
	if errors.As(err, &le) {
		return false
	}
	return strings.Contains(err.Error(), "null")
}

type nullRewriter struct{ changed bool }

func (r *nullRewriter) query(q *gojq.Query) {
	if q == nil {
		return
	}
	for _, fd := range q.FuncDefs {
		r.query(fd.Body)
	}
	r.term(q.Term)
	r.query(q.Left)
	r.query(q.Right)
	switch q.Op {
	case gojq.OpMul, gojq.OpDiv:
		q.Left, q.Right = r.alt(q.Left, 1), r.alt(q.Right, 1)
	case gojq.OpSub:
		q.Left, q.Right = r.alt(q.Left, 0), r.alt(q.Right, 0)
	}
}

// alt returns `(q // n)`.
func (r *nullRewriter) alt(q *gojq.Query, n int) *gojq.Query {
	if q == nil {
		return nil
	}
	r.changed = true
	num := "1"
	if n == 0 {
		num = "0"
	}
	inner := &gojq.Query{Left: q, Op: gojq.OpAlt, Right: &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeNumber, Number: num}}}
	return &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeQuery, Query: inner}}
}

func (r *nullRewriter) term(t *gojq.Term) {
	if t == nil {
		return
	}
	if t.Unary != nil {
		r.term(t.Unary.Term)
	}
	for _, q := range termQueries(t) {
		r.query(q)
	}
	// gojq writes `x[]?` as an iteration suffix followed by an optional suffix.
	out := make([]*gojq.Suffix, 0, len(t.SuffixList))
	for i, s := range t.SuffixList {
		for _, q := range indexQueries(s.Index) {
			r.query(q)
		}
		out = append(out, s)
		if s.Iter && (i+1 == len(t.SuffixList) || !t.SuffixList[i+1].Optional) {
			out = append(out, &gojq.Suffix{Optional: true})
			r.changed = true
		}
	}
	t.SuffixList = out
}
