package definitions

import (
	"context"
	_ "embed"
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions/expr"
)

// advisory is one known under- or overcount of an upstream catalog definition (advisories.yaml).
type advisory struct {
	Component  string `json:"component"`
	Field      string `json:"field"`
	Expression string `json:"expression"`
	When       string `json:"when"`
	Note       string `json:"note"`
}

//go:embed advisories.yaml
var advisoriesYAML []byte

// advisories is the parsed advisories.yaml (a build-time file: a parse error is a bug, caught by
// TestAdvisoriesParse).
var advisories, advisoriesErr = parseAdvisories(advisoriesYAML)

func parseAdvisories(b []byte) ([]advisory, error) {
	var out []advisory
	if err := yaml.UnmarshalStrict(b, &out); err != nil {
		return nil, fmt.Errorf("definitions/advisories.yaml: %w", err)
	}
	return out, nil
}

// CompiledAdvisory is an advisory that matches a definition, with its condition compiled.
type CompiledAdvisory struct {
	When expr.Program
	Note string
}

// matchAdvisories returns the advisories whose component field holds exactly their expression.
func (cc *compileCtx) matchAdvisories(byName map[string]*Component) []CompiledAdvisory {
	var out []CompiledAdvisory
	for _, a := range advisories {
		comp := byName[a.Component]
		if comp == nil || comp.Def.ScaleDefinition == nil {
			continue
		}
		var e Expr
		switch a.Field {
		case "replicasPath":
			e = comp.Def.ScaleDefinition.ReplicasPath
		case "minReplicasPath":
			e = comp.Def.ScaleDefinition.MinReplicasPath
		}
		if e.JQ == "" || e.JQ != a.Expression {
			continue
		}
		p, err := cc.compiler.Compile(expr.JQ, a.When, expr.Object, expr.Read)
		if err != nil {
			continue
		}
		out = append(out, CompiledAdvisory{When: p, Note: fmt.Sprintf("component %q %s (%s): %s", a.Component, a.Field, a.Expression, a.Note)})
	}
	return out
}

// AdvisoryNotes evaluates the matching advisories on the workload object (normalized JSON) and
// returns the notes of those whose condition holds. An advisory that fails to evaluate says
// nothing: it is advice, never a reason to fail a plan.
func (c *Compiled) AdvisoryNotes(ctx context.Context, obj map[string]any) []string {
	var out []string
	for _, a := range append(c.Advisories[:len(c.Advisories):len(c.Advisories)], c.Notes...) {
		res, err := a.When.Eval(ctx, expr.Input{Object: obj, Normalized: true})
		if err == nil && expr.Truthy(res) {
			out = append(out, a.Note)
		}
	}
	return out
}
