package app

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/gang"
	"github.com/gangmap/gangmap/manifest"
)

// Files of a definition test case.
const (
	testManifestFile   = "manifest.yaml"
	testExpectFile     = "expect.yaml"
	testDefinitionFile = "definition.yaml"
)

// testOptions are the flags of "gangmap test".
type testOptions struct {
	definitions []string
	filter      string
	verbose     bool
}

func newTestCommand(use string) *cobra.Command {
	o := &testOptions{}
	cmd := &cobra.Command{
		Use:   "test DIR... [--definitions PATH]... [--run REGEXP] [-v]",
		Short: "Run definition test suites: manifests and the plan, status and placements they must give",
		Long: `Test runs definition test cases, like "go test" runs Go tests: a definition is code, and a
change to it (or to the framework it describes) must not silently change the gangs it plans.

A case is a directory holding manifest.yaml and expect.yaml (every such directory under DIR is a
case; its name is its path under DIR):

  manifest.yaml     the workload (one top-level object, optionally with its status), and
                    optionally Pod documents (the workload's pods, with the labels its operator
                    sets) and PodGroup documents.
  definition.yaml   optional: the definition under test. Without it, the built-in catalog (and
                    --definitions) decide, as in "gangmap plan". With it, the case fails unless
                    this file's definition is the one used (an invalid one is reported).
  expect.yaml       what must come out. Every key is optional; only what is given is checked:

    definition: jobset-x-k8s-io-jobset-v1alpha2   # name of the definition used
    status: [running]                             # every status whose matchers hold, in order
    totalGPUs: 12
    podGroups:                 # the planned PodGroups, in order (the list is compared whole)
      - name: pg-train-llm-jobset                 # optional
        minSubGroup: 2         # minMember and minSubGroup are always compared: leave out = unset
        subGroups:             # always compared: leave out = none
          - {name: leader, minMember: 1}
          - {name: workers, minMember: 2}
        pods: 3                # optional
        gpus: 12               # optional
    roles:                     # the plan's roles, in order; name required, the rest optional
      - {name: leader, component: replicatedjob, instance: leader, replicas: 1, minReplicas: 1,
         pods: 1, gangPods: 1, gpusPerPod: 4, gpus: 4}
    placements:                # pods of manifest.yaml: where the plan puts them
      - {pod: train-llm-leader-0-0, role: leader, podGroup: pg-train-llm-jobset, subGroup: leader}
      - {pod: helper, unclaimed: true}
    notes: ["substring of some plan note"]
    misses:                    # definition paths allowed to resolve to nothing on this workload
      - spec.structureDefinition.childComponents[0].scaleDefinition.minReplicasPath
    defaults:                  # definition fields whose // default may stand in for a path
      - spec.structureDefinition.childComponents[1].scaleDefinition.replicasPath
    allPodsPlaced: false       # default true: every pod of manifest.yaml must be placed
    error: "substring"         # the plan must fail with this error

A path of the definition that resolves to nothing on the workload (a misspelt field, a field the
framework renamed) fails the case unless expect.yaml lists it under misses, and a listed miss that
does not happen fails it too: the output names each such path with its expression. The same holds
for a path hidden behind a // default when the workload has a key close to the missing one
(.spec.workr.replicas // 1 resolves, to 1, beside .spec.worker): the field fails the case unless
listed under defaults, and the output names the missing key and the key the workload has. A
default for a field the workload omits (no close key) is a note.

Every Pod document of manifest.yaml must be placed (claimed by a role, in a planned PodGroup)
unless placements lists it (e.g. unclaimed: true) or allPodsPlaced is false: a selector that
matches no pod fails the case, showing each selector and what the pod has there.

Output: "ok  <case>" or "--- FAIL: <case>" with a diff (-want +got) per failed check, then a
summary line. Exit codes: 0 every case passed; 1 some case failed; 2 unusable input (no case
found, a bad --run, a missing directory).`,
		Example: examples(use,
			"gangmap test definitions/catalog/tests",
			"# Your definition, with cases next to it",
			"gangmap test ./kartas/my-kind/tests --definitions ./kartas/",
			"gangmap test ./tests --run 'jobset/.*'",
		),
		Args: cobra.MinimumNArgs(1),
		RunE: runE(o.run),
	}
	f := cmd.Flags()
	addDefinitionsFlag(cmd, &o.definitions, ", in addition to the built-in catalog")
	f.StringVar(&o.filter, "run", "", "run only the cases whose name matches this regular expression")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "print the plan's notes of passing cases too")
	return cmd
}

// testCase is one case directory.
type testCase struct {
	name, dir string
}

func (o *testOptions) run(ctx context.Context, dirs []string, stdout, _ io.Writer) error {
	var filter *regexp.Regexp
	if o.filter != "" {
		var err error
		if filter, err = regexp.Compile(o.filter); err != nil {
			return fail(ExitUnusable, "--run: %v", err)
		}
	}
	var cases []testCase
	for _, d := range dirs {
		found, err := findTestCases(d)
		if err != nil {
			return fail(ExitUnusable, "%v", err)
		}
		cases = append(cases, found...)
	}
	if len(cases) == 0 {
		return fail(ExitUnusable, "no test case (a directory with %s and %s) in %s", testManifestFile, testExpectFile, strings.Join(dirs, ", "))
	}
	if filter != nil {
		all := len(cases)
		cases = slices.DeleteFunc(cases, func(c testCase) bool { return !filter.MatchString(c.name) })
		if len(cases) == 0 {
			return fail(ExitUnusable, "--run %q matches none of the %d test cases in %s", o.filter, all, strings.Join(dirs, ", "))
		}
	}
	shared, err := newOfflineRegistry(o.definitions, definitions.DecodeOptions{})
	if err != nil {
		return err
	}
	failed := 0
	for _, c := range cases {
		problems, notes := o.runCase(ctx, c, shared)
		if len(problems) == 0 {
			fmt.Fprintf(stdout, "ok  \t%s\n", c.name)
			if o.verbose {
				printLines(stdout, "    note: ", notes)
			}
			continue
		}
		failed++
		fmt.Fprintf(stdout, "--- FAIL: %s\n", c.name)
		for _, p := range problems {
			fmt.Fprintf(stdout, "    %s\n", indentLines(strings.TrimRight(p, "\n"), "    "))
		}
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "FAIL\t%d of %d cases failed\n", failed, len(cases))
		return exitCode(ExitProblems)
	}
	if len(cases) == 1 {
		fmt.Fprintln(stdout, "ok  \t1 case passed")
		return nil
	}
	fmt.Fprintf(stdout, "ok  \t%d cases passed\n", len(cases))
	return nil
}

// findTestCases returns every directory under root (root included) that holds manifest.yaml,
// named by its path under root (root itself by its base name), sorted by name.
func findTestCases(root string) ([]testCase, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", root)
	}
	var out []testCase
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if _, err := os.Stat(filepath.Join(path, testManifestFile)); err != nil {
			return nil
		}
		name, _ := filepath.Rel(root, path)
		if name == "." {
			name = filepath.Base(filepath.Clean(root))
		}
		out = append(out, testCase{name: filepath.ToSlash(name), dir: path})
		return nil
	})
	slices.SortFunc(out, func(a, b testCase) int { return strings.Compare(a.name, b.name) })
	return out, err
}

// testExpect is expect.yaml.
type testExpect struct {
	Definition *string           `json:"definition,omitempty"`
	Status     []string          `json:"status,omitempty"`
	TotalGPUs  *float64          `json:"totalGPUs,omitempty"`
	PodGroups  *[]expectPodGroup `json:"podGroups,omitempty"`
	Roles      *[]expectRole     `json:"roles,omitempty"`
	Placements []expectPlacement `json:"placements,omitempty"`
	Notes      []string          `json:"notes,omitempty"`
	Misses     []string          `json:"misses,omitempty"`
	// Defaults lists the definition fields whose `//` default may stand in for a path that
	// resolved to nothing (hiddenDefaults); any other such default fails the case.
	Defaults []string `json:"defaults,omitempty"`
	// AllPodsPlaced (default true): every Pod document of the manifest not in Placements must be
	// claimed by a role and in a planned PodGroup.
	AllPodsPlaced *bool   `json:"allPodsPlaced,omitempty"`
	Error         *string `json:"error,omitempty"`
}

// expectPodGroup is one expected PodGroup; MinMember, MinSubGroup and SubGroups are always
// compared, the other fields when given.
type expectPodGroup struct {
	Name        *string         `json:"name,omitempty"`
	MinMember   *int32          `json:"minMember,omitempty"`
	MinSubGroup *int32          `json:"minSubGroup,omitempty"`
	SubGroups   []subGroupShape `json:"subGroups,omitempty"`
	Pods        *int64          `json:"pods,omitempty"`
	GPUs        *float64        `json:"gpus,omitempty"`
}

// expectRole is one expected role; Name is compared always, the rest when given.
type expectRole struct {
	Name        string   `json:"name"`
	Component   *string  `json:"component,omitempty"`
	Instance    *string  `json:"instance,omitempty"`
	Replicas    *int64   `json:"replicas,omitempty"`
	MinReplicas *int64   `json:"minReplicas,omitempty"`
	Pods        *int64   `json:"pods,omitempty"`
	GangPods    *int64   `json:"gangPods,omitempty"`
	GPUsPerPod  *float64 `json:"gpusPerPod,omitempty"`
	GPUs        *float64 `json:"gpus,omitempty"`
}

// expectPlacement is where one pod of the manifest must go; Pod is required, the rest compared
// when given.
type expectPlacement struct {
	Pod       string  `json:"pod"`
	Role      *string `json:"role,omitempty"`
	PodGroup  *string `json:"podGroup,omitempty"`
	SubGroup  *string `json:"subGroup,omitempty"`
	Unclaimed *bool   `json:"unclaimed,omitempty"`
}

// runCase runs one case and returns its failures (empty when it passed) and the plan's notes.
func (o *testOptions) runCase(ctx context.Context, c testCase, shared *definitions.Registry) ([]string, []string) {
	var want testExpect
	raw, err := manifest.ReadBytes(filepath.Join(c.dir, testExpectFile))
	if err != nil {
		return []string{err.Error()}, nil
	}
	if err := yaml.UnmarshalStrict(raw, &want); err != nil {
		return []string{fmt.Sprintf("%s: %v", testExpectFile, err)}, nil
	}
	objs, err := readManifests([]string{filepath.Join(c.dir, testManifestFile)})
	if err != nil {
		return []string{err.Error()}, nil
	}
	in, err := splitManifest(objs, io.Discard)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", testManifestFile, err)}, nil
	}
	if len(in.workloads) != 1 {
		return []string{fmt.Sprintf("%s: expected one workload (a top-level object that is not a Pod, a PodGroup or a supporting kind), found %d", testManifestFile, len(in.workloads))}, nil
	}
	reg := shared
	defFile := filepath.Join(c.dir, testDefinitionFile)
	ownDefinition := false
	if _, err := os.Stat(defFile); err == nil {
		ownDefinition = true
		if reg, err = newOfflineRegistry(append(append([]string{}, o.definitions...), defFile), definitions.DecodeOptions{}); err != nil {
			return []string{err.Error()}, nil
		}
	}
	views, _ := in.views(ctx, reg)
	v := views[0]

	var problems []string
	if ownDefinition && (v.compiled == nil || !strings.HasPrefix(v.compiled.Loaded.Origin, defFile+"#")) {
		msg := fmt.Sprintf("%s is not the definition used for %s", testDefinitionFile, v.Workload.Kind)
		for _, p := range reg.Problems() {
			if strings.HasPrefix(p.Origin, defFile) || p.Reason == "Conflict" {
				msg += "\n  " + indentLines(p.Message, "  ")
			}
		}
		problems = append(problems, msg)
	}
	switch {
	case want.Error != nil && v.Error == "":
		problems = append(problems, fmt.Sprintf("expected the plan to fail with %q; it did not", *want.Error))
	case want.Error != nil && !strings.Contains(v.Error, *want.Error):
		problems = append(problems, fmt.Sprintf("plan error:\n  want substring %q\n  got %s", *want.Error, v.Error))
	case want.Error == nil && v.Error != "":
		problems = append(problems, "plan failed: "+v.Error)
	}
	problems = append(problems, checkMisses(v, want.Misses)...)
	problems = append(problems, checkDefaults(v, want.Defaults)...)
	if v.Error == "" {
		problems = append(problems, comparePlan(v, &want)...)
		problems = append(problems, checkAllPlaced(v, &want)...)
	}
	return problems, v.Notes
}

// comparePlan compares what expect.yaml gives with the workload's view; one failure per
// mismatching key, each with a cmp diff.
func comparePlan(v *workloadView, want *testExpect) []string {
	var out []string
	diff := func(what string, w, g any) {
		if d := yamlDiff(w, g); d != "" {
			out = append(out, fmt.Sprintf("%s (-want +got):\n%s", what, d))
		}
	}
	if want.Definition != nil {
		diff("definition", *want.Definition, ptr.Deref(v.Definition, gang.DefinitionRef{}).Name)
	}
	if want.Status != nil {
		diff("status", want.Status, append([]definitions.Status{}, v.Status...)) // [], not null
	}
	if want.TotalGPUs != nil {
		diff("totalGPUs", *want.TotalGPUs, v.TotalGPUs.Devices())
	}
	if want.PodGroups != nil {
		w := *want.PodGroups
		got := make([]expectPodGroup, 0, len(v.PodGroups))
		for _, pv := range v.PodGroups {
			if pv.Planned == nil {
				continue
			}
			g := expectPodGroup{Name: ptr.To(pv.Name), Pods: ptr.To(pv.Planned.Pods), GPUs: ptr.To(pv.Planned.GPUs.Devices())}
			if i := len(got); i < len(w) {
				g = onlyGiven(w[i], g)
			}
			g.MinMember, g.MinSubGroup, g.SubGroups = pv.Planned.MinMember, pv.Planned.MinSubGroup, pv.Planned.SubGroups
			got = append(got, g)
		}
		diff("podGroups", w, got)
	}
	if want.Roles != nil {
		w := *want.Roles
		got := make([]expectRole, 0, len(v.Roles))
		for i, r := range v.Roles {
			g := expectRole{Name: r.Name, Component: ptr.To(r.Component), Instance: ptr.To(r.Instance), Replicas: ptr.To(r.Replicas),
				MinReplicas: ptr.To(r.MinReplicas), Pods: ptr.To(r.Pods), GangPods: ptr.To(r.GangPods),
				GPUsPerPod: ptr.To(r.GPUsPerPod.Devices()), GPUs: ptr.To(r.GPUs.Devices())}
			if i < len(w) {
				g = onlyGiven(w[i], g)
			}
			got = append(got, g)
		}
		diff("roles", w, got)
	}
	if len(want.Placements) > 0 {
		kept, got, missing := placements(v, want.Placements)
		out = append(out, missing...)
		diff("placements", kept, got)
	}
	for _, n := range want.Notes {
		if !slices.ContainsFunc(v.Notes, func(g string) bool { return strings.Contains(g, n) }) {
			out = append(out, fmt.Sprintf("notes: no note contains %q; notes: %q", n, v.Notes))
		}
	}
	return out
}

// placements is where the plan puts each pod want lists (got), next to the entries of want whose
// pod the manifest has (kept); a pod it lacks is a failure (missing).
func placements(v *workloadView, want []expectPlacement) (kept, got []expectPlacement, missing []string) {
	pods, unclaimed := podsByName(v)
	roleOf := map[[2]string]string{}
	for _, r := range v.Roles {
		roleOf[[2]string{r.Component, r.Instance}] = r.Name
	}
	kept, got = make([]expectPlacement, 0, len(want)), make([]expectPlacement, 0, len(want))
	for _, w := range want {
		p := pods[w.Pod]
		if p == nil {
			missing = append(missing, fmt.Sprintf("placements: no pod %q in %s", w.Pod, testManifestFile))
			continue
		}
		kept = append(kept, w)
		got = append(got, onlyGiven(w, expectPlacement{Pod: w.Pod, Role: ptr.To(roleOf[[2]string{p.component, p.instance}]),
			PodGroup: ptr.To(p.PodGroup), SubGroup: ptr.To(p.SubGroup), Unclaimed: ptr.To(unclaimed[p])}))
	}
	return kept, got, missing
}

// onlyGiven is got with each pointer field that want leaves nil (not given in expect.yaml) set to
// nil too, so that only what expect.yaml gives is compared; other fields are kept.
func onlyGiven[T any](want, got T) T {
	w, g := reflect.ValueOf(&want).Elem(), reflect.ValueOf(&got).Elem()
	for i := range g.NumField() {
		if f := g.Field(i); f.Kind() == reflect.Pointer && w.Field(i).IsNil() {
			f.SetZero()
		}
	}
	return got
}
