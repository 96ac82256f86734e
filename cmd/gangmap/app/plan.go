package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
)

// planOptions are the flags of "gangmap plan".
type planOptions struct {
	files        []string
	definitions  []string
	output       string
	strict       bool
	allowUnknown bool
}

func newPlanCommand(use string) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan -f MANIFEST [-f MORE]... [--definitions PATH]... [-o table|json|yaml]",
		Short: "Plan the KAI PodGroups of workload manifests, offline",
		Long: `Plan reads workload manifests and prints, for each workload, the KAI PodGroups (gangs)
gangmap would create: minMember or minSubGroup, sub-groups, pods and GPUs per role, and the
workload's status words (the definition's statusDefinition on the object's status, as describe
shows them: "status" in -o json|yaml, "Status:" in the table). It needs no cluster. Definitions come from the built-in catalog and from --definitions; a file
definition wins over the catalog one for the same kind.

With -o json or -o yaml the output is one document {"plans": [...]}, one entry per workload:
a plan; {"workload": ..., "nativeInKAI": true, "note": "..."} when the workload has no definition
and KAI groups its kind natively (not a failure); or {"workload": ..., "error": "..."} when the
workload has no definition or its plan failed. Definition problems are printed on stderr as
warnings.

Exit codes: 0 every workload planned; 1 some workload could not be planned; 2 unusable input
(a missing file, invalid YAML, an unknown output format).`,
		Example: examples(use,
			"# Plan a JobSet with the built-in catalog, as a table",
			"gangmap plan -f examples/jobset-leader-workers.yaml",
			"# Several manifests (files, directories or - for stdin), as JSON",
			"gangmap plan -f lws.yaml -f jobsets/ -o json",
			"# With your own definitions, which win over the built-in ones",
			"gangmap plan -f my-workload.yaml --definitions ./kartas/ -o yaml",
		),
		Args: cobra.NoArgs,
		RunE: runE(o.run),
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "workload manifest: a YAML or JSON file (multi-document, kind: List), a directory of them, or - for stdin (repeatable)")
	addDefinitionsFlag(cmd, &o.definitions, ", in addition to the built-in catalog")
	addOutputFlag(cmd, &o.output, "table", "json", "yaml")
	f.BoolVar(&o.strict, "strict", false, "refuse --definitions files with unknown fields even with --allow-unknown-fields")
	f.BoolVar(&o.allowUnknown, "allow-unknown-fields", false, "accept --definitions files with unknown fields, reported as warnings and left out (which can change the gang), for definitions newer than this gangmap; as the grouper's --strict-definitions=false. (default false: they are refused)")
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	return cmd
}

func (o *planOptions) run(ctx context.Context, _ []string, stdout, stderr io.Writer) error {
	objs, err := readManifests(o.files)
	if err != nil {
		return fail(ExitUnusable, "%v", err)
	}
	if len(objs) == 0 {
		return fail(ExitUnusable, "no Kubernetes objects in %s", strings.Join(o.files, ", "))
	}
	objs = workloadsOnly(objs, stderr)
	if len(objs) == 0 {
		return fail(ExitUnusable, "no workload objects in %s (only pods, owned objects or supporting kinds)", strings.Join(o.files, ", "))
	}
	reg, err := newOfflineRegistry(o.definitions, definitions.DecodeOptions{Strict: o.strict || !o.allowUnknown})
	if err != nil {
		return err
	}
	warnProblems(stderr, reg)
	doc := planDocument{Plans: make([]planEntry, 0, len(objs))}
	code := ExitOK
	for _, p := range reg.Problems() {
		if p.Source == definitions.SourceFile && (p.Reason == "Invalid" || p.Reason == "Conflict") {
			code = ExitProblems // a --definitions file that cannot be used is a failure, not a fallback
		}
	}
	for _, u := range objs {
		e := planWorkload(ctx, reg, u)
		if e.Error != "" {
			code = ExitProblems
		}
		doc.Plans = append(doc.Plans, e)
	}
	return writeDocument(stdout, o.output, doc, func(w io.Writer) { printPlanTables(w, doc) }, code)
}

// supportingKinds are kinds a manifest bundle carries beside its workloads; plan skips them. They
// are matched on group and kind: a Knative Service (serving.knative.dev) is a workload, a core
// Service is not.
var supportingKinds = func() map[schema.GroupKind]bool {
	m := map[schema.GroupKind]bool{}
	for group, kinds := range map[string][]string{
		"":                          {"Namespace", "ConfigMap", "Secret", "Service", "ServiceAccount", "PersistentVolumeClaim", "LimitRange", "ResourceQuota"},
		"rbac.authorization.k8s.io": {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"},
		"apiextensions.k8s.io":      {"CustomResourceDefinition"},
		"scheduling.k8s.io":         {"PriorityClass"},
		"networking.k8s.io":         {"NetworkPolicy"},
		"run.ai":                    {"Karta"},
		"scheduling.run.ai":         {"Queue", "PodGroup"},
		"trainer.kubeflow.org":      {"ClusterTrainingRuntime", "TrainingRuntime"},
		"serving.kserve.io":         {"LLMInferenceServiceConfig"},
		// DRA objects a workload's pods claim devices through (issue 31 point 10).
		"resource.k8s.io": {"ResourceClaimTemplate", "ResourceClaim", "DeviceClass"},
	} {
		for _, k := range kinds {
			m[schema.GroupKind{Group: group, Kind: k}] = true
		}
	}
	return m
}()

// workloadsOnly keeps the objects that are workloads: top-level objects (no owner references)
// that are not pods, PodGroups or supporting kinds (the same rule as describe -f). Each skipped
// object is said on warn.
func workloadsOnly(objs []*unstructured.Unstructured, warn io.Writer) []*unstructured.Unstructured {
	out := objs[:0:0]
	for _, u := range objs {
		switch {
		case len(u.GetOwnerReferences()) > 0:
			fmt.Fprintf(warn, "note: skipping %s: it has an owner, so it is not a top-level workload\n", workloadLabel(u))
		case u.GetKind() == "Pod" && u.GroupVersionKind().Group == "", u.GetKind() == "PodGroup", supportingKinds[u.GroupVersionKind().GroupKind()]:
			fmt.Fprintf(warn, "note: skipping %s: not a workload\n", workloadLabel(u))
		default:
			out = append(out, u)
		}
	}
	return out
}

// planDocument is the -o json|yaml output of "gangmap plan".
type planDocument struct {
	Plans []planEntry `json:"plans"`
}

// planEntry is one workload: its plan, or the reason it has none.
type planEntry struct {
	Plan *gang.Plan `json:"-"`
	// Workload, Definition (when one was found) and Error describe a workload with no plan.
	Workload   gang.WorkloadRef    `json:"workload"`
	Definition *gang.DefinitionRef `json:"definition,omitempty"`
	Error      string              `json:"error,omitempty"`
	// NativeInKAI and Native (the note) are set, instead of Error, for a workload with no
	// definition whose kind KAI groups natively: not a failure, since in a cluster KAI's own
	// plugin groups it.
	NativeInKAI bool   `json:"nativeInKAI,omitempty"`
	Native      string `json:"note,omitempty"`
	// label names the workload for people (see workloadLabel); it is not marshalled.
	label string
}

// MarshalJSON writes the plan as gang.Plan marshals it (with "roles": [] rather than null when
// the workload has no roles) plus "nativeInKAI" (KAI groups the kind itself, so in a cluster
// gangmap writes none of it), or {workload, definition?, error} or {workload, nativeInKAI, note}.
func (e planEntry) MarshalJSON() ([]byte, error) {
	if e.Plan == nil {
		type noPlan planEntry // without this method
		return json.Marshal(noPlan(e))
	}
	p := *e.Plan
	if p.Roles == nil {
		p.Roles = []*gang.Role{}
	}
	return json.Marshal(struct {
		*gang.Plan
		NativeInKAI bool `json:"nativeInKAI"`
	}{&p, nativeInKAI(schema.FromAPIVersionAndKind(p.Workload.APIVersion, p.Workload.Kind))})
}

// planWorkload plans one object with the definition of its kind.
func planWorkload(ctx context.Context, reg *definitions.Registry, u *unstructured.Unstructured) planEntry {
	ref := gang.WorkloadRef{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
	label := workloadLabel(u)
	gvk := u.GroupVersionKind()
	c := reg.Lookup(gvk)
	if c == nil {
		msg := noDefinition(reg, gvk)
		if nativeInKAI(gvk) && strings.HasSuffix(msg, noDefinitionHint) {
			return planEntry{Workload: ref, label: label, NativeInKAI: true, Native: nativeNote(gvk) + "; gangmap has no definition for it, so no plan"}
		}
		// A definition was given but cannot be used: that is a failure, native kind or not.
		return planEntry{Workload: ref, label: label, Error: label + ": " + msg}
	}
	def := &gang.DefinitionRef{Name: c.Name(), Source: string(c.Loaded.Source)}
	p, err := gang.Build(ctx, c, u)
	if err != nil {
		return planEntry{Workload: ref, Definition: def, label: label, Error: fmt.Sprintf("%s: definition %q (%s): %v", label, c.Name(), c.Loaded.Origin, err)}
	}
	fitToRelease(p)
	// A `//` default that stood in for a path the workload lacks is said: a misspelt path read
	// through it plans a wrong gang that otherwise looks fine (issue 31 point 1).
	for _, h := range hiddenDefaults(c.Loaded.Karta, expr.Normalize(u.UnstructuredContent()).(map[string]any)) {
		p.Notes = append(p.Notes, h.String())
	}
	return planEntry{Plan: p, label: label}
}

// noDefinitionHint ends noDefinition's answer when no source has a definition of the kind.
const noDefinitionHint = "; add one with --definitions (without one, gangmap leaves the kind to KAI's default grouper: one PodGroup pg-<name>-<uid> of minMember 1 for the workload's pods, no gang)"

// noDefinition says that gvk has no usable definition, and why when the registry knows more: the
// kind's definitions are invalid, in conflict, or blocked by a conflict at a source of higher
// precedence; or definitions exist for other versions of the kind.
func noDefinition(reg *definitions.Registry, gvk schema.GroupVersionKind) string {
	want := definitions.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
	msg := "no usable Workload Map definition for kind " + definitions.KindString(gvk)
	var hints, versions []string
	for _, e := range reg.Entries() {
		switch {
		case e.Kind == want && len(e.Problems) > 0:
			hints = append(hints, fmt.Sprintf("definition %q (%s) has problems (see the warnings)", e.Name, e.Origin))
		case e.Kind == want:
			hints = append(hints, fmt.Sprintf("definition %q (%s) is blocked by a conflict at a source of higher precedence", e.Name, e.Origin))
		case e.Kind.Group == want.Group && e.Kind.Kind == want.Kind:
			versions = append(versions, e.Kind.Version)
		}
	}
	if len(versions) > 0 {
		slices.Sort(versions)
		hints = append(hints, fmt.Sprintf("definitions exist for version %s only (a definition covers exactly one version)", strings.Join(versions, ", ")))
	}
	if len(hints) == 0 {
		return msg + noDefinitionHint
	}
	return msg + ": " + strings.Join(hints, "; ")
}

// workloadLabel names a workload as Kind/name, with its namespace when it has one; a manifest
// with only metadata.generateName is named Kind/<generateName>* (its name is not known offline).
func workloadLabel(u *unstructured.Unstructured) string {
	name := u.GetName()
	if name == "" && u.GetGenerateName() != "" {
		name = u.GetGenerateName() + "*"
	}
	s := u.GetKind() + "/" + name
	if ns := u.GetNamespace(); ns != "" {
		s += " (namespace " + ns + ")"
	}
	return s
}

// readManifests reads every object of paths in order: files, directories (their *.yaml, *.yml
// and *.json files in name order) and "-" for stdin. A file named twice (directly or through a
// directory) is read once.
func readManifests(paths []string) ([]*unstructured.Unstructured, error) {
	files, err := expandPaths(paths, "")
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		objs, err := manifest.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// expandPaths lists the files of paths in order: a directory's *.yaml, *.yml and *.json files in
// name order (definitions.DefinitionFiles), anything else as it is ("-" is standard input), each
// file once (by absolute path) however often it is named. With what set, a directory without
// such files is an error saying it has no <what> files.
func expandPaths(paths []string, what string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		files := []string{p}
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			if files, err = definitions.DefinitionFiles(p); err != nil {
				return nil, err
			}
			if len(files) == 0 && what != "" {
				return nil, fmt.Errorf("no %s files (*.yaml, *.yml, *.json) in directory %s", what, p)
			}
		}
		for _, f := range files {
			if abs, err := filepath.Abs(f); err == nil && f != "-" {
				if seen[abs] {
					continue
				}
				seen[abs] = true
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// runE is a command's RunE that calls run with the command's context, arguments and writers.
func runE(run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		return run(cmd.Context(), args, cmd.OutOrStdout(), cmd.ErrOrStderr())
	}
}

// addDefinitionsFlag registers --definitions (repeatable), its usage ending in more (what the
// files come in addition to), and completes it with definition files.
func addDefinitionsFlag(cmd *cobra.Command, p *[]string, more string) {
	cmd.Flags().StringArrayVar(p, "definitions", nil, "Workload Map definition file or directory"+more+" (repeatable)")
	_ = cmd.MarkFlagFilename("definitions", "yaml", "yml", "json")
}

// addOutputFlag registers -o/--output with formats (the first is the default), completes it with
// them, and refuses any other value before the command runs (a usage error).
func addOutputFlag(cmd *cobra.Command, p *string, formats ...string) {
	last := len(formats) - 1
	cmd.Flags().StringVarP(p, "output", "o", formats[0], "output format: "+strings.Join(formats[:last], ", ")+" or "+formats[last])
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if slices.Contains(formats, *p) {
			return nil
		}
		return fail(ExitUnusable, "unknown output format %q: use %s", *p, strings.Join(formats, ", "))
	}
}

// writeDocument writes doc as indented JSON or YAML, or calls table for any other format, and
// returns the command's result: exit code, or a failure to write (the first one: see errWriter).
func writeDocument(w io.Writer, output string, doc any, table func(io.Writer), code int) error {
	ew := &errWriter{w: w}
	var err error
	switch output {
	case "json":
		enc := json.NewEncoder(ew)
		enc.SetIndent("", "  ")
		err = enc.Encode(doc)
	case "yaml":
		var b []byte
		if b, err = yaml.Marshal(doc); err == nil {
			_, err = ew.Write(b)
		}
	default:
		table(ew)
		err = ew.err
	}
	if err != nil {
		return fail(ExitProblems, "writing the output: %v", err)
	}
	return exitCode(code)
}

// errWriter keeps the first error of its writes to w and then writes nothing more, so that the
// table printers need not check each write.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
