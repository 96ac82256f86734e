package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/onboard"
	"github.com/gangmap/gangmap/manifest"
)

// defaultSchedulerName and defaultQueueLabelKey are KAI's defaults (its --scheduler-name and
// --queue-label-key; see podgrouper/core/kaikeys), repeated here so the CLI's flags show them.
const (
	defaultSchedulerName = "kai-scheduler"
	defaultQueueLabelKey = "kai.scheduler/queue"
)

// onboardOptions are the flags of "gangmap onboard".
type onboardOptions struct {
	files             []string
	definitions       []string
	schedulerName     string
	queue             string
	queueLabelKey     string
	labels            []string
	annotations       []string
	overrideScheduler bool
	inPlace           bool
	diff              bool
	strict            bool
}

func newOnboardCommand(use string) *cobra.Command {
	o := &onboardOptions{}
	cmd := &cobra.Command{
		Use:   "onboard -f MANIFEST [--scheduler-name NAME] [--queue QUEUE] [--label k=v]... [-i | --diff]",
		Short: "Bring a workload manifest to KAI: scheduler name, queue and labels on every pod template of every role",
		Long: `Onboard rewrites workload manifests so that every pod template of every role, found through
the kind's definition (its pod template, pod spec or fragmented pod spec paths, nested ones such
as a workload wrapped in an AppWrapper included), names the KAI scheduler and carries the queue
label and the labels and annotations given. The queue label also goes on the workload itself (KAI
reads the top owner's queue label first). Objects without a definition are printed unchanged.

It is all or nothing per run: a role whose template cannot be written (a definition expression
that builds its template instead of pointing at it, a field the operator does not expose, a role
that names another scheduler without --override-scheduler) is reported, naming the role and the
definition field, and nothing is written. Afterwards the definition is read again on the result:
what "gangmap plan" reads is what was written.

The result is printed as YAML on stdout (one document per object; comments and key order of the
input are not kept), written back to the files with -i, or shown as a diff with --diff.

Exit codes: 0 done (or nothing to change); 1 a workload could not be onboarded (nothing written);
2 unusable input.`,
		Example: examples(use,
			"gangmap onboard -f jobset.yaml --queue team-a",
			"gangmap onboard -f lws.yaml --queue team-a --label team=a --diff",
			"gangmap onboard -f manifests/ --queue team-a -i",
		),
		Args: cobra.NoArgs,
		RunE: runE(o.run),
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "workload manifest: a YAML or JSON file (multi-document), a directory of them, or - for stdin (repeatable)")
	addDefinitionsFlag(cmd, &o.definitions, ", in addition to the built-in catalog")
	f.StringVar(&o.schedulerName, "scheduler-name", defaultSchedulerName, "scheduler name set on every pod template (KAI's --scheduler-name)")
	f.StringVar(&o.queue, "queue", "", "KAI queue: set as the queue label on the workload and every pod template")
	f.StringVar(&o.queueLabelKey, "queue-label-key", defaultQueueLabelKey, "the queue label's key (KAI's --queue-label-key)")
	f.StringArrayVar(&o.labels, "label", nil, "label key=value set on every pod template (repeatable)")
	f.StringArrayVar(&o.annotations, "annotation", nil, "annotation key=value set on every pod template (repeatable)")
	f.BoolVar(&o.overrideScheduler, "override-scheduler", false, "replace a scheduler name other than the default one (without it such a role is an error)")
	f.BoolVarP(&o.inPlace, "in-place", "i", false, "write the result back to the files (not with - or --diff)")
	f.BoolVar(&o.diff, "diff", false, "print only what changed, as a unified diff per file")
	f.BoolVar(&o.strict, "strict", false, "refuse --definitions files with unknown fields")
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	return cmd
}

// settings turns the flags into what onboarding sets on pod templates and on the workload.
func (o *onboardOptions) settings() (pods, root onboard.Settings, err error) {
	labels, err := keyValues("--label", o.labels, true)
	if err != nil {
		return pods, root, err
	}
	annotations, err := keyValues("--annotation", o.annotations, false)
	if err != nil {
		return pods, root, err
	}
	pods = onboard.Settings{SchedulerName: o.schedulerName, OverrideScheduler: o.overrideScheduler, Labels: labels, Annotations: annotations}
	if o.queue != "" {
		if errs := validation.IsQualifiedName(o.queueLabelKey); len(errs) > 0 {
			return pods, root, fmt.Errorf("--queue-label-key %q: %s", o.queueLabelKey, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(o.queue); len(errs) > 0 {
			return pods, root, fmt.Errorf("--queue %q: %s", o.queue, strings.Join(errs, "; "))
		}
		pods.OptionalLabels = map[string]string{o.queueLabelKey: o.queue}
		root.Labels = map[string]string{o.queueLabelKey: o.queue}
	}
	if pods.Empty() {
		return pods, root, errors.New("nothing to set: give --scheduler-name, --queue, --label or --annotation")
	}
	return pods, root, nil
}

// keyValues parses key=value flags; label keys and values are checked as Kubernetes labels.
func keyValues(flag string, kvs []string, label bool) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: expected key=value", flag, kv)
		}
		errs := validation.IsQualifiedName(k)
		if err := onboard.CheckKey(k); err != nil {
			errs = append(errs, err.Error())
		}
		if label {
			errs = append(errs, validation.IsValidLabelValue(v)...)
		}
		if len(errs) > 0 {
			return nil, fmt.Errorf("%s %q: %s", flag, kv, strings.Join(errs, "; "))
		}
		out[k] = v
	}
	return out, nil
}

// onboardedFile is one input file and its objects after onboarding.
type onboardedFile struct {
	path          string
	before, after []byte
}

func (o *onboardOptions) run(ctx context.Context, _ []string, stdout, stderr io.Writer) error {
	if o.inPlace && o.diff {
		return fail(ExitUnusable, "-i and --diff do not go together")
	}
	pods, root, err := o.settings()
	if err != nil {
		return fail(ExitUnusable, "%v", err)
	}
	files, err := expandPaths(o.files, "")
	if err != nil {
		return fail(ExitUnusable, "%v", err)
	}
	if o.inPlace && len(files) == 1 && files[0] == "-" {
		return fail(ExitUnusable, "-i cannot write back to standard input")
	}
	reg, err := newOfflineRegistry(o.definitions, definitions.DecodeOptions{Strict: o.strict})
	if err != nil {
		return err
	}
	warnProblems(stderr, reg)
	var out []onboardedFile
	failed := false
	for _, path := range files {
		objs, err := manifest.ReadFile(path)
		if err != nil {
			return fail(ExitUnusable, "%v", err)
		}
		f := onboardedFile{path: path}
		if f.before, err = renderObjects(objs); err != nil {
			return fail(ExitUnusable, "%s: %v", path, err)
		}
		for _, u := range objs {
			if err := onboardObject(ctx, reg, u, pods, root, stderr); err != nil {
				fmt.Fprintf(stderr, "error: %s: %s: %v\n", path, workloadLabel(u), err)
				failed = true
			}
		}
		if f.after, err = renderObjects(objs); err != nil {
			return fail(ExitUnusable, "%s: %v", path, err)
		}
		out = append(out, f)
	}
	if failed {
		return fail(ExitProblems, "nothing written: fix the definitions or flags above (where the operator has no field for a role, use the onboarding policy instead)")
	}
	return o.write(out, stdout, stderr)
}

// onboardObject onboards u in place when its kind has a definition; other objects stay as they are.
func onboardObject(ctx context.Context, reg *definitions.Registry, u *unstructured.Unstructured, pods, root onboard.Settings, stderr io.Writer) error {
	if len(u.GetOwnerReferences()) > 0 || supportingKinds[u.GroupVersionKind().GroupKind()] {
		return nil
	}
	c := reg.Lookup(u.GroupVersionKind())
	if c == nil {
		fmt.Fprintf(stderr, "note: %s: no definition for its kind; left unchanged\n", workloadLabel(u))
		return nil
	}
	res, err := onboard.Workload(ctx, c, reg.Compiler(), u.Object, pods, root)
	if err != nil {
		return err
	}
	u.Object = res.Object
	for _, r := range res.Roles {
		if len(r.Changes) == 0 {
			continue
		}
		name := r.Component
		if r.Instance != "" {
			name += "[" + r.Instance + "]"
		}
		fmt.Fprintf(stderr, "onboarded %s role %s at %s: %d fields\n", workloadLabel(u), name, r.Template, len(r.Changes))
	}
	return nil
}

// write prints, diffs or writes back the onboarded files.
func (o *onboardOptions) write(files []onboardedFile, stdout, stderr io.Writer) error {
	for _, f := range files {
		switch {
		case o.diff:
			fmt.Fprint(stdout, unifiedDiff(string(f.before), string(f.after), f.path, f.path+" (onboarded)"))
		case o.inPlace:
			if bytes.Equal(f.before, f.after) {
				continue
			}
			if err := os.WriteFile(f.path, f.after, 0o644); err != nil { //nolint:gosec // a manifest the user owns
				return fail(ExitProblems, "writing %s: %v", f.path, err)
			}
			fmt.Fprintf(stderr, "wrote %s\n", f.path)
		default:
			if _, err := stdout.Write(f.after); err != nil {
				return fail(ExitProblems, "writing the output: %v", err)
			}
		}
	}
	return nil
}

// renderObjects renders objects as multi-document YAML.
func renderObjects(objs []*unstructured.Unstructured) ([]byte, error) {
	var b bytes.Buffer
	for i, u := range objs {
		if i > 0 {
			b.WriteString("---\n")
		}
		y, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}
