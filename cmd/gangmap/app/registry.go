package app

import (
	"fmt"
	"io"
	"strings"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/catalog"
	"github.com/gangmap/gangmap/definitions/expr"
)

// newCompiler is the expression compiler every command uses: upstream's evaluation limits.
func newCompiler() (*expr.Compiler, error) {
	c, err := expr.NewCompiler(expr.DefaultLimits())
	if err != nil {
		return nil, fmt.Errorf("building the expression compiler: %w", err)
	}
	return c, nil
}

// newOfflineRegistry returns a registry holding the built-in catalog and the definitions in
// paths (files or directories, source "file"; decoded with opts: leniently, unknown fields
// becoming warnings, unless opts.Strict). A file definition wins over the catalog one for the
// same kind.
//
// Errors: unusable input (a missing path, invalid YAML, a document that is not a Karta) is an
// ExitUnusable error; a broken built-in catalog is an internal error.
func newOfflineRegistry(paths []string, opts definitions.DecodeOptions) (*definitions.Registry, error) {
	compiler, err := newCompiler()
	if err != nil {
		return nil, fail(ExitUnusable, "%v", err)
	}
	reg := definitions.NewRegistry(compiler)
	if err := catalog.Register(reg); err != nil {
		return nil, fail(ExitUnusable, "%v", err)
	}
	if len(paths) > 0 {
		loaded, err := definitions.LoadPaths(paths, definitions.SourceFile, opts)
		if err != nil {
			return nil, fail(ExitUnusable, "reading --definitions: %v", err)
		}
		reg.SetSource(definitions.SourceFile, loaded)
	}
	return reg, nil
}

// warnProblems prints every definition problem of reg on w as a warning, one per problem;
// multi-line messages keep their indentation.
func warnProblems(w io.Writer, reg *definitions.Registry) {
	said := map[string]bool{}
	for _, p := range reg.Problems() {
		msg := p.Message
		if !strings.HasPrefix(msg, "definition ") && p.Reason != "Conflict" {
			msg = fmt.Sprintf("definition %q (%s): %s", p.Definition, p.Origin, msg)
		}
		if said[msg] {
			continue // a conflict is a problem of each definition in it, said once
		}
		said[msg] = true
		fmt.Fprintf(w, "warning: %s\n", msg)
	}
}
