package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/deploy/crds"
	"github.com/gangmap/gangmap/manifest"
)

func newKartaCommand(use string) *cobra.Command {
	var allowUnknown bool
	cmd := &cobra.Command{
		Use:   "karta FILE...",
		Short: "Write definition files as Karta objects that kubectl apply accepts",
		Long: `Karta reads definition files (as validate does: every definition must be valid) and writes
each as the Karta object to apply to the cluster: gangmap's additions under spec.gangmap move into
the annotation gangmap.io/extensions (their JSON form), because the Karta CRD has no spec.gangmap
(kubectl apply refuses it: strict decoding error: unknown field "spec.gangmap"; a client that
does not validate would have it pruned, silently changing the gang). The grouper and the CLI read
the annotation back into spec.gangmap.

Any other field the Karta CRD (deploy/crds/run.ai_kartas.yaml) would not store is an error naming
it. The output is multi-document YAML on stdout.

Exit codes: 0 written; 1 a definition is invalid or has a field the CRD cannot store; 2 a file
unreadable.`,
		Example: examples(use,
			"gangmap karta my-karta.yaml | kubectl apply -f -",
			"gangmap karta kartas/ > kartas-for-the-cluster.yaml",
		),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runKarta(args, allowUnknown, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&allowUnknown, "allow-unknown-fields", false, "accept definitions with fields this gangmap does not know (as validate --allow-unknown-fields); the CRD check still applies")
	return cmd
}

// runKarta validates every definition of files and writes them, converted by ForCluster.
func runKarta(files []string, allowUnknown bool, stdout, stderr io.Writer) error {
	compiler, err := newCompiler()
	if err != nil {
		return fail(ExitUnusable, "%v", err)
	}
	schema, err := kartaSchema()
	if err != nil {
		return fail(ExitUnusable, "%v", err)
	}
	expanded, err := expandPaths(files, "definition")
	if err != nil {
		return fail(ExitUnusable, "%v", err)
	}
	var docs []string
	problems := 0
	for _, f := range expanded {
		data, err := readInput(f)
		if err != nil {
			return fail(ExitUnusable, "%s: %v", f, err)
		}
		for _, r := range validateData(f, data, !allowUnknown, compiler, nil) {
			if r.Unreadable {
				return fail(ExitUnusable, "%s: %s", f, r.Errors[0].Message)
			}
			if !r.Valid {
				problems++
				for _, e := range r.Errors {
					fmt.Fprintf(stderr, "%s#%d: definition %q: %s\n", r.File, r.Document, r.Definition, joinField(e))
				}
			}
		}
		objs, err := manifest.Read(bytes.NewReader(data), f)
		if err != nil {
			return fail(ExitUnusable, "%v", err)
		}
		for _, u := range objs {
			out, err := ForCluster(u, schema)
			if err != nil {
				problems++
				fmt.Fprintf(stderr, "%s: %v\n", f, err)
				continue
			}
			docs = append(docs, string(out))
		}
	}
	if problems > 0 {
		return fail(ExitProblems, "%d problem(s): nothing written", problems)
	}
	_, err = io.WriteString(stdout, strings.Join(docs, "---\n"))
	return err
}

// ForCluster returns the Karta u as the object to store in the cluster: spec.gangmap moved into
// the annotation definitions.ExtensionsAnnotation (compact JSON), as definitions' loader reads it
// (load.go). Errors: u is not a run.ai Karta; it has both spec.gangmap and the annotation; it has
// a field the Karta CRD's structural schema would prune (each named, as the API server's pruning
// names it), which kubectl apply's strict field validation refuses.
func ForCluster(u *unstructured.Unstructured, schema *structuralschema.Structural) ([]byte, error) {
	if u.GetKind() != "Karta" || !strings.HasPrefix(u.GetAPIVersion(), "run.ai/") {
		return nil, fmt.Errorf("%s %s is not a Karta (run.ai)", u.GetKind(), u.GetName())
	}
	obj := u.DeepCopy()
	ext, found, err := unstructured.NestedFieldNoCopy(obj.Object, "spec", "gangmap")
	if err != nil {
		return nil, fmt.Errorf("Karta %s: spec.gangmap: %w", u.GetName(), err)
	}
	if found {
		ann := obj.GetAnnotations()
		if _, both := ann[definitions.ExtensionsAnnotation]; both {
			return nil, fmt.Errorf("Karta %s has spec.gangmap and the annotation %s: keep one", u.GetName(), definitions.ExtensionsAnnotation)
		}
		js, err := json.Marshal(ext)
		if err != nil {
			return nil, fmt.Errorf("Karta %s: spec.gangmap: %w", u.GetName(), err)
		}
		if ann == nil {
			ann = map[string]string{}
		}
		ann[definitions.ExtensionsAnnotation] = string(js)
		obj.SetAnnotations(ann)
		unstructured.RemoveNestedField(obj.Object, "spec", "gangmap")
	}
	probe := obj.DeepCopy().Object
	if pruned := pruning.PruneWithOptions(probe, schema, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}); len(pruned) > 0 {
		sort.Strings(pruned)
		return nil, fmt.Errorf("Karta %s: the Karta CRD has no field %s: kubectl apply refuses it (strict field validation) and a client that does not validate has it dropped (gangmap's own additions go under spec.gangmap; what the CRD cannot hold, e.g. spec.variables, works only from a definition file: the chart's definitions)", u.GetName(), strings.Join(pruned, ", "))
	}
	return yaml.Marshal(obj.Object)
}

// kartaSchema is the structural schema of the Karta CRD gangmap ships (the upstream shape).
func kartaSchema() (*structuralschema.Structural, error) {
	crd, err := crds.Karta()
	if err != nil {
		return nil, err
	}
	if len(crd.Spec.Versions) == 0 || crd.Spec.Versions[0].Schema == nil {
		return nil, fmt.Errorf("the Karta CRD %s has no schema", crd.Name)
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, &internal, nil); err != nil {
		return nil, fmt.Errorf("the Karta CRD's schema: %w", err)
	}
	return structuralschema.NewStructural(&internal)
}
