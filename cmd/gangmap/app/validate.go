package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/definitions/schemalint"
	"github.com/gangmap/gangmap/manifest"
)

// validateOptions are the flags of "gangmap validate".
type validateOptions struct {
	strict       bool
	allowUnknown bool
	output       string
	crds         []string
}

func newValidateCommand(use string) *cobra.Command {
	o := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate [--strict] [-o text|json] FILE...",
		Short: "Check Workload Map definition files",
		Long: `Validate decodes every definition (Karta) in each FILE ("-" for stdin), checks its
structure and compiles every jq and CEL expression, and reports each definition as OK or with
every error, each with its field path. Unknown fields (a misspelt replicaPath silently changes
the gang) are errors, as in the grouper; --allow-unknown-fields makes them warnings, for
definitions written for a newer gangmap.

With --crd, each definition's jq paths are also checked against the openAPIV3Schema of the
workload CRD for its root kind: a path that can never resolve (a typo such as
.spec.replicatedJob[], a renamed field) is an error naming the definition field and the closest
field the schema has: read through a // default, it would size the gang wrong without a word, and
the grouper refuses such a definition when the CRD is in the cluster. Fields the schema leaves
undescribed (x-kubernetes-preserve-unknown-fields) are a note.

A FILE may be a directory (its *.yaml, *.yml and *.json files). Two valid definitions for the same
kind among the files given are both invalid: loaded together, neither would be used.

Exit codes: 0 every definition valid; 1 some definition invalid; 2 some file unreadable (missing,
or not valid YAML).`,
		Example: examples(use,
			"gangmap validate my-karta.yaml",
			"# Every warning an error, and every path checked against the workload CRD's schema",
			"gangmap validate --strict --crd jobset-crd.yaml kartas/*.yaml",
			"# A definition written for a newer gangmap: unknown fields as warnings",
			"gangmap validate --allow-unknown-fields newer-karta.yaml",
			"gangmap validate -o json my-karta.yaml",
			"# Check every path against the workload's CRD schema",
			"gangmap validate --crd jobset-crd.yaml my-jobset-karta.yaml",
		),
		Args: cobra.MinimumNArgs(1),
		RunE: runE(o.run),
	}
	cmd.Flags().BoolVar(&o.strict, "strict", false, "treat every warning as an error: a gang no pod can be placed in by elimination, an empty specDefinition, unknown fields even with --allow-unknown-fields")
	cmd.Flags().BoolVar(&o.allowUnknown, "allow-unknown-fields", false, "report unknown fields as warnings instead of errors (definitions newer than this gangmap; the grouper's --strict-definitions=false)")
	addOutputFlag(cmd, &o.output, "text", "json")
	cmd.Flags().StringArrayVar(&o.crds, "crd", nil, "workload CRD file(s) whose schema the definitions' paths are checked against (repeatable)")
	return cmd
}

// validateDocument is the -o json output of "gangmap validate".
type validateDocument struct {
	Results []validateResult `json:"results"`
}

// validateResult is one definition (or one file that could not be read).
type validateResult struct {
	File string `json:"file"`
	// Document is the index of the YAML document in File.
	Document   int                           `json:"document"`
	Definition string                        `json:"definition"`
	Kind       *definitions.GroupVersionKind `json:"kind"`
	Valid      bool                          `json:"valid"`
	Errors     []fieldMessage                `json:"errors"`
	Warnings   []fieldMessage                `json:"warnings"`
	// Unreadable says the file could not be read or parsed as YAML.
	Unreadable bool `json:"unreadable,omitempty"`
}

// fieldMessage is one problem at a field path of a definition ("" when it concerns the whole
// document).
type fieldMessage struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (o *validateOptions) run(_ context.Context, files []string, stdout, _ io.Writer) error {
	compiler, err := newCompiler()
	if err != nil {
		return fail(ExitUnusable, "%v", err)
	}
	crds, err := loadCRDs(o.crds)
	if err != nil {
		return fail(ExitUnusable, "%v", err)
	}
	doc := validateDocument{Results: []validateResult{}}
	paths, err := expandPaths(files, "definition")
	if err != nil {
		// A wrong directory must not pass a CI check by having nothing to check.
		return fail(ExitUnusable, "%v", err)
	}
	for _, f := range paths {
		data, err := readInput(f)
		if err != nil {
			doc.Results = append(doc.Results, unreadable(f, 0, err))
			continue
		}
		doc.Results = append(doc.Results, validateData(f, data, o.strict || !o.allowUnknown, compiler, crds)...)
	}
	markConflicts(doc.Results)
	code := ExitOK
	for i := range doc.Results {
		r := &doc.Results[i]
		// With --strict, a gang naming components no pod can be placed in is an error too (a path
		// the workload's CRD schema says can never resolve always is).
		r.Warnings = slices.DeleteFunc(r.Warnings, func(w fieldMessage) bool {
			if !o.strict || w.Field == "" || !strings.Contains(w.Message, "never places a pod by elimination") {
				return false
			}
			r.Errors = append(r.Errors, fieldMessage{Field: w.Field, Message: w.Message + " (an error with --strict)"})
			r.Valid = false
			return true
		})
		switch {
		case r.Unreadable:
			code = ExitUnusable
		case !r.Valid && code == ExitOK:
			code = ExitProblems
		}
	}
	return writeDocument(stdout, o.output, doc, func(w io.Writer) { printValidateText(w, doc) }, code)
}

// validateData checks every definition in data, read from path (standard input can be read
// once). Each YAML document is decoded on its own, so one broken document does not hide the
// others. Unknown fields are collected as warnings (all of them, with their paths) and, in strict
// mode, reported as errors: the same verdict as definitions.Decode with Strict, which stops at the
// first one.
func validateData(path string, data []byte, strict bool, compiler *expr.Compiler, crds []*apiextensionsv1.CustomResourceDefinition) []validateResult {
	var out []validateResult
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 0; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return append(out, unreadable(path, doc, err))
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return append(out, unreadable(path, doc, fmt.Errorf("document %d: invalid YAML: %w", doc, err)))
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
			continue // empty or comment-only document, as definitions.Decode skips them
		}
		out = append(out, validateDocumentBytes(path, doc, raw, js, strict, compiler, crds))
	}
	if len(out) == 0 {
		r := newResult(path, 0)
		r.Errors = append(r.Errors, fieldMessage{Message: "no Workload Map definition (Karta) in this file"})
		out = append(out, r)
	}
	return out
}

func validateDocumentBytes(path string, doc int, raw, js []byte, strict bool, compiler *expr.Compiler, crds []*apiextensionsv1.CustomResourceDefinition) validateResult {
	r := newResult(path, doc)
	r.Definition = metadataName(js)
	l, err := definitions.DecodeDocument(raw, fmt.Sprintf("%s#%d", path, doc), definitions.SourceFile, definitions.DecodeOptions{})
	if err != nil {
		r.Errors = append(r.Errors, fieldMessage{Message: err.Error()})
		return r
	}
	r.Definition = l.Name()
	if k := l.Karta.Spec.StructureDefinition.RootComponent.Kind; k != nil {
		kind := *k
		r.Kind = &kind
	}
	for _, w := range l.Warnings {
		fm := fieldMessage{Field: w.Field, Message: w.Detail}
		if strict {
			fm.Message += " (an error unless --allow-unknown-fields)"
			r.Errors = append(r.Errors, fm)
		} else {
			r.Warnings = append(r.Warnings, fm)
		}
	}
	c, err := definitions.Compile(l, compiler)
	if err != nil {
		var de *definitions.DefinitionError
		if errors.As(err, &de) {
			for _, fe := range de.Errs {
				r.Errors = append(r.Errors, fieldMessage{Field: fe.Field, Message: fe.ErrorBody()})
			}
		} else {
			r.Errors = append(r.Errors, fieldMessage{Message: err.Error()})
		}
	} else if p, msg := c.PlacementNotice(); msg != "" {
		r.Warnings = append(r.Warnings, fieldMessage{Field: p, Message: msg})
	}
	r.Valid = len(r.Errors) == 0
	if r.Valid && len(crds) > 0 {
		errs, notes := lintAgainstCRDs(l.Karta, crds)
		r.Errors = append(r.Errors, errs...)
		r.Warnings = append(r.Warnings, notes...)
		r.Valid = len(r.Errors) == 0
	}
	return r
}

// lintAgainstCRDs checks k's paths against the CRD of its root kind, if one was given. A path the
// schema says can never resolve is an error (the grouper refuses such a definition too:
// podgrouper/runtime/crdlint); what the schema leaves undescribed, and a kind with no --crd, are notes.
func lintAgainstCRDs(k *definitions.Karta, crds []*apiextensionsv1.CustomResourceDefinition) (errs, notes []fieldMessage) {
	root := k.Spec.StructureDefinition.RootComponent.Kind
	for _, crd := range crds {
		if root == nil || crd.Spec.Group != root.Group || crd.Spec.Names.Kind != root.Kind {
			continue
		}
		findings, err := schemalint.Lint(k, crd)
		if err != nil {
			return []fieldMessage{{Message: err.Error()}}, nil
		}
		for _, f := range findings {
			m := fieldMessage{Field: f.Field, Message: f.Path + ": " + f.Message}
			if f.Unchecked {
				notes = append(notes, m)
			} else {
				errs = append(errs, m)
			}
		}
		return errs, notes
	}
	return nil, []fieldMessage{{Message: fmt.Sprintf("no --crd given for %s: its paths were not checked against a schema", root)}}
}

// loadCRDs reads CustomResourceDefinitions from YAML files and directories of them.
func loadCRDs(paths []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		objs, err := readManifests([]string{p}) // a file, a directory of them, or -
		if err != nil {
			return nil, fmt.Errorf("--crd %s: %w", p, err)
		}
		if len(objs) == 0 {
			return nil, fmt.Errorf("--crd %s: no CustomResourceDefinition in it", p)
		}
		for _, u := range objs {
			if u.GetKind() != "CustomResourceDefinition" {
				return nil, fmt.Errorf("--crd %s: %s %s is not a CustomResourceDefinition", p, u.GetKind(), u.GetName())
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
				return nil, fmt.Errorf("--crd %s: %w", p, err)
			}
			out = append(out, crd)
		}
	}
	return out, nil
}

// markConflicts makes every valid definition invalid when another valid one given to the same
// run is for the same kind: loaded together (one file source, one directory) neither would be
// used.
func markConflicts(results []validateResult) {
	byKind := map[string][]int{}
	for i, r := range results {
		if r.Valid && r.Kind != nil {
			k := r.Kind.String()
			byKind[k] = append(byKind[k], i)
		}
	}
	for kind, idx := range byKind {
		if len(idx) < 2 {
			continue
		}
		var names []string
		for _, i := range idx {
			names = append(names, fmt.Sprintf("%q (%s#%d)", results[i].Definition, results[i].File, results[i].Document))
		}
		for _, i := range idx {
			results[i].Valid = false
			results[i].Errors = append(results[i].Errors, fieldMessage{Field: "spec.structureDefinition.rootComponent.kind",
				Message: fmt.Sprintf("%d definitions for %s: %s; loaded together, none of them would be used", len(idx), kind, strings.Join(names, ", "))})
		}
	}
}

func newResult(path string, doc int) validateResult {
	return validateResult{File: path, Document: doc, Errors: []fieldMessage{}, Warnings: []fieldMessage{}}
}

func unreadable(path string, doc int, err error) validateResult {
	r := newResult(path, doc)
	r.Unreadable = true
	r.Errors = append(r.Errors, fieldMessage{Message: err.Error()})
	return r
}

// metadataName reads metadata.name from a JSON document, for naming a definition that does not
// decode.
func metadataName(js []byte) string {
	var m struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(js, &m)
	return m.Metadata.Name
}

func readInput(path string) ([]byte, error) { return manifest.ReadBytes(path) }

// printValidateText writes one line per definition (OK, INVALID or UNREADABLE), its errors and
// warnings indented below it, and a summary line.
func printValidateText(w io.Writer, doc validateDocument) {
	var valid, invalid, unread int
	for _, r := range doc.Results {
		verdict := "OK"
		switch {
		case r.Unreadable:
			verdict = "UNREADABLE"
			unread++
		case !r.Valid:
			verdict = "INVALID"
			invalid++
		default:
			valid++
		}
		what := r.File
		if !r.Unreadable {
			what = fmt.Sprintf("%s#%d", r.File, r.Document)
		}
		desc := ""
		if r.Definition != "" {
			desc = fmt.Sprintf("definition %q", r.Definition)
		}
		if r.Kind != nil {
			desc += fmt.Sprintf(" for %s", r.Kind)
		}
		fmt.Fprintln(w, strings.TrimSpace(fmt.Sprintf("%-10s  %s  %s", verdict, what, desc)))
		for _, e := range r.Errors {
			fmt.Fprintf(w, "  error: %s\n", joinField(e))
		}
		for _, e := range r.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", joinField(e))
		}
	}
	fmt.Fprintf(w, "%d valid, %d invalid, %d unreadable\n", valid, invalid, unread)
}

func joinField(m fieldMessage) string {
	if m.Field == "" {
		return indentLines(m.Message, "    ")
	}
	return m.Field + ": " + indentLines(m.Message, "    ")
}
