package definitions

import (
	"context"
	"regexp"

	"github.com/gangmap/gangmap/definitions/expr"
)

// labelLookup matches the jq pod selectors that only read one label:
// .metadata.labels["key"] or .metadata.labels.key.
var labelLookup = regexp.MustCompile(`^\s*\.metadata\.labels(?:\[\s*"([^"\\]+)"\s*\]|\.([A-Za-z_][A-Za-z0-9_]*))\s*$`)

// labelProgram evaluates a label lookup without running jq: the most common pod selector, run
// for every pod. It returns what jq returns: the label's value, or null when it is absent.
type labelProgram struct {
	src string
	key string
}

var _ expr.Program = (*labelProgram)(nil)

// newLabelProgram returns a labelProgram when src is a plain label lookup, else nil.
func newLabelProgram(src string) expr.Program {
	m := labelLookup.FindStringSubmatch(src)
	if m == nil {
		return nil
	}
	key := m[1]
	if key == "" {
		key = m[2]
	}
	return &labelProgram{src: src, key: key}
}

// Language is jq: the program is the jq expression it was compiled from.
func (p *labelProgram) Language() expr.Language { return expr.JQ }

// Source is the jq text.
func (p *labelProgram) Source() string { return p.src }

// Eval returns [value] or [nil] (jq's null for a missing label). It never fails.
func (p *labelProgram) Eval(_ context.Context, in expr.Input) ([]any, error) {
	md, _ := in.Pod["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	return []any{labels[p.key]}, nil
}

// PlainLabelKey returns the label key a compiled pod-side program reads when it is a plain label
// lookup (.metadata.labels["key"] or .metadata.labels.key, the most common pod selector), and
// false for any other program or nil.
func PlainLabelKey(p expr.Program) (string, bool) {
	if lp, ok := p.(*labelProgram); ok {
		return lp.key, true
	}
	return "", false
}
