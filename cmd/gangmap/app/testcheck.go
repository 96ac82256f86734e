package app

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions"
)

// checkMisses fails on every path that resolved to nothing and is not listed in allowed, and on
// every listed path that did resolve.
func checkMisses(v *workloadView, allowed []string) []string {
	return checkListed(v, v.misses, allowed, func(m definitions.PathMiss) (string, string) {
		return m.Path, fmt.Sprintf("path resolved to nothing on the workload: %s (%s)\n  (a misspelt or renamed field? if expected, list it under misses in %s)", m.Path, m.Expression, testExpectFile)
	}, "expected path %s to resolve to nothing (misses in %s), but it resolved")
}

// yamlDiff is a unified diff of want and got written as YAML (the language of expect.yaml), or ""
// when they are equal.
func yamlDiff(want, got any) string {
	w, werr := yaml.Marshal(want)
	g, gerr := yaml.Marshal(got)
	if werr != nil || gerr != nil {
		return fmt.Sprintf("  want %v\n  got  %v\n", want, got)
	}
	if bytes.Equal(w, g) {
		return ""
	}
	d := unifiedDiff(strings.TrimSuffix(string(w), "\n"), strings.TrimSuffix(string(g), "\n"), "want", "got")
	return "  " + indentLines(strings.TrimRight(d, "\n"), "  ")
}

// unifiedDiff is the unified diff of a and b, with 3 lines of context. (difflib writes it into a
// bytes.Buffer, whose writes never fail: its error is always nil.)
func unifiedDiff(a, b, fromFile, toFile string) string {
	d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(a), B: difflib.SplitLines(b), FromFile: fromFile, ToFile: toFile, Context: 3})
	return d
}

// checkDefaults fails on every `//` default that stood in for a path that resolved to nothing
// while the object there has a key within edit distance 2 of the missing one (v.defaults,
// hiddenDefaults: .spec.workr beside .spec.worker), unless its field is listed in allowed, and on
// every listed field where no default stood in: a misspelt path behind a default is a miss that
// resolves (issue 31 point 1). A default for a field the workload simply omits (no near key: an
// optional field such as LWS subGroupPolicy) is the default's purpose: a plan note, no failure.
func checkDefaults(v *workloadView, allowed []string) []string {
	return checkListed(v, v.defaults, allowed, func(h hiddenDefault) (string, string) {
		if h.Suggest == "" {
			return h.Field, ""
		}
		return h.Field, fmt.Sprintf("a default stood in for a path that resolved to nothing: %s\n  (a misspelt or renamed field? if the workload omits it on purpose, list %s under defaults in %s)", h, h.Field, testExpectFile)
	}, "expected a default to stand in at %s (defaults in %s), but its path resolved")
}

// checkListed fails on every item of got whose key (by keyed) is not in allowed and whose
// failure text (by keyed) is not "", and, when the view has a definition, on every key of allowed
// no item has (unseen, formatted with the key and expect.yaml's name).
func checkListed[T any](v *workloadView, got []T, allowed []string, keyed func(T) (key, failure string), unseen string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range got {
		key, failure := keyed(x)
		seen[key] = true
		if failure != "" && !slices.Contains(allowed, key) {
			out = append(out, failure)
		}
	}
	for _, a := range allowed {
		if !seen[a] && v.compiled != nil {
			out = append(out, fmt.Sprintf(unseen, a, testExpectFile))
		}
	}
	return out
}

// checkAllPlaced fails on every pod of the manifest that expect.yaml does not list under
// placements and that no role claims or that is in no planned PodGroup, unless allPodsPlaced is
// false: a selector that matches no pod (issue 31 point 2) passed every case that did not list
// the pod. Each failure names the pod, its labels and why it is not placed.
func checkAllPlaced(v *workloadView, want *testExpect) []string {
	if want.AllPodsPlaced != nil && !*want.AllPodsPlaced {
		return nil
	}
	pods, unclaimed := podsByName(v)
	var out []string
	for _, n := range slices.Sorted(maps.Keys(pods)) {
		p := pods[n]
		switch {
		case slices.ContainsFunc(want.Placements, func(w expectPlacement) bool { return w.Pod == n }):
		case unclaimed[p]:
			out = append(out, fmt.Sprintf("pod %s is not placed: no component claims it (%s)\n  (list it under placements with unclaimed: true if expected, or set allPodsPlaced: false in %s)", n, cmp.Or(p.Reason, "-"), testExpectFile))
		case p.PodGroup == "":
			out = append(out, fmt.Sprintf("pod %s is claimed but in no PodGroup (%s)\n  (list it under placements if expected, or set allPodsPlaced: false in %s)", n, cmp.Or(p.Reason, "-"), testExpectFile))
		}
	}
	return out
}

// podsByName indexes every pod of the view by name, placed in the tree or unclaimed, and says
// which are unclaimed.
func podsByName(v *workloadView) (map[string]*podView, map[*podView]bool) {
	out := map[string]*podView{}
	eachInstance(v.Tree, func(_ *componentNode, in *instanceNode) {
		for _, p := range in.Pods {
			out[p.Name] = p
		}
	})
	unclaimed := map[*podView]bool{}
	for _, p := range v.Unclaimed {
		out[p.Name] = p
		unclaimed[p] = true
	}
	return out, unclaimed
}
