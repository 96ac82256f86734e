package definitions

import (
	"regexp"
	"slices"
	"strings"

	"github.com/itchyny/gojq"
	corev1 "k8s.io/api/core/v1"

	"github.com/gangmap/gangmap/definitions/expr"
)

// PodReadsOnlyMetadata reports whether every pod-side expression of the definition provably reads
// nothing of the pod but .metadata (the compiler's proof, see metadataOnly). The grouper's pod
// cache keeps little more than a pod's metadata; for a definition where this is false the pod
// controller reads the whole pod from the API server before placing it.
func (c *Compiled) PodReadsOnlyMetadata() bool { return c.podMetadataOnly }

// PodInput converts a pod for the definition's pod-side expressions. When every pod-side
// expression reads only .metadata (the usual case: selectors on labels), it builds just the
// metadata by hand, which is several times cheaper than converting the whole pod; otherwise it
// converts the whole pod (expr.FromObject).
//
// When every pod-side expression is a plain label lookup (.metadata.labels["key"]: every catalog
// definition's), the pod's placement reads nothing but those labels and the components'
// matchLabels, so PodInput builds just {"metadata": {"labels": ...}} with the labels among them.
func (c *Compiled) PodInput(pod *corev1.Pod) (map[string]any, error) {
	if !c.podMetadataOnly {
		return expr.FromObject(pod)
	}
	if c.podLabelKeys != nil {
		labels := map[string]any{}
		for _, k := range c.podLabelKeys {
			if v, ok := pod.Labels[k]; ok {
				labels[k] = v
			}
		}
		return map[string]any{"metadata": map[string]any{"labels": labels}}, nil
	}
	md := map[string]any{"name": pod.Name, "namespace": pod.Namespace, "uid": string(pod.UID)}
	if pod.GenerateName != "" {
		md["generateName"] = pod.GenerateName
	}
	if len(pod.Labels) > 0 {
		md["labels"] = stringMap(pod.Labels)
	}
	if len(pod.Annotations) > 0 {
		md["annotations"] = stringMap(pod.Annotations)
	}
	if len(pod.OwnerReferences) > 0 {
		refs := make([]any, len(pod.OwnerReferences))
		for i, r := range pod.OwnerReferences {
			m := map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "name": r.Name, "uid": string(r.UID)}
			if r.Controller != nil {
				m["controller"] = *r.Controller
			}
			refs[i] = m
		}
		md["ownerReferences"] = refs
	}
	return map[string]any{"metadata": md}, nil
}

func stringMap(in map[string]string) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// labelKeysRead returns the pod labels k reads when every pod-side expression of k is a plain
// label lookup (newLabelProgram's form, which reads one label and nothing else), with the keys of
// every component's componentTypeSelector.matchLabels; nil when some expression may read more.
func labelKeysRead(k *Karta) []string {
	keys := []string{}
	for _, e := range podExpressions(k) {
		if e.IsZero() {
			continue
		}
		if e.CEL != "" {
			return nil
		}
		lp, ok := newLabelProgram(e.JQ).(*labelProgram)
		if !ok {
			return nil
		}
		keys = append(keys, lp.key)
	}
	for _, r := range k.componentRefs() {
		if ps := r.def.PodSelector; ps != nil && ps.ComponentTypeSelector != nil {
			for l := range ps.ComponentTypeSelector.MatchLabels {
				keys = append(keys, l)
			}
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// podExpressions lists the pod-side expressions of k.
func podExpressions(k *Karta) []Expr {
	var out []Expr
	for _, r := range k.componentRefs() {
		if ps := r.def.PodSelector; ps != nil {
			if ps.ComponentTypeSelector != nil {
				out = append(out, ps.ComponentTypeSelector.KeyPath)
			}
			if ps.ComponentInstanceSelector != nil {
				out = append(out, ps.ComponentInstanceSelector.IDPath)
			}
			if ps.ReplicaSelector != nil {
				out = append(out, ps.ReplicaSelector.KeyPath)
			}
		}
	}
	if ext := k.Spec.Gangmap; ext != nil {
		for _, c := range ext.Components {
			out = append(out, c.PodIndexPath, c.PodReplicaIndexPath)
		}
	}
	if gs := k.Spec.OptimizationInstructions.GangScheduling; gs != nil {
		for _, g := range gs.PodGroups {
			for _, m := range g.Members {
				out = append(out, m.Filters...)
				out = append(out, m.GroupByKeyPaths...)
				out = append(out, m.GroupByExpressions...)
			}
		}
	}
	return out
}

// metadataOnly reports whether every expression provably reads nothing of the pod but
// .metadata: for jq, every path from the input starts with .metadata; for CEL, every mention of
// `pod` is followed by .metadata. Anything it cannot prove counts as reading the whole pod.
func metadataOnly(exprs []Expr) bool {
	for _, e := range exprs {
		switch {
		case e.IsZero():
		case e.CEL != "":
			if len(celPodRef.FindAllString(e.CEL, -1)) != len(celPodMetadataRef.FindAllString(e.CEL, -1)) {
				return false
			}
		default:
			q, err := gojq.Parse(e.JQ)
			if err != nil || !jqRootReadsMetadataOnly(q, true) {
				return false
			}
		}
	}
	return true
}

var (
	celPodRef         = regexp.MustCompile(`\bpod\b`)
	celPodMetadataRef = regexp.MustCompile(`\bpod\s*\.\??\s*metadata\b`)
)

// jqRootReadsMetadataOnly walks a jq query; root says its input is the pod itself.
func jqRootReadsMetadataOnly(q *gojq.Query, root bool) bool {
	if q == nil {
		return true
	}
	if len(q.FuncDefs) > 0 {
		return !root
	}
	if q.Term != nil {
		return jqTermMetadataOnly(q.Term, root)
	}
	if q.Op == gojq.OpPipe && len(q.Patterns) == 0 {
		// The right side reads the left side's outputs, which are no longer the pod unless the
		// left side is the identity.
		return jqRootReadsMetadataOnly(q.Left, root) && jqRootReadsMetadataOnly(q.Right, root && isIdentity(q.Left))
	}
	return jqRootReadsMetadataOnly(q.Left, root) && jqRootReadsMetadataOnly(q.Right, root)
}

func isIdentity(q *gojq.Query) bool {
	return q != nil && q.Term != nil && q.Term.Type == gojq.TermTypeIdentity && len(q.Term.SuffixList) == 0
}

// jqTermMetadataOnly walks a jq term. Every value an accepted expression computes derives from the
// pod's metadata only (a term that would output the pod itself, such as `.` or `. as $p`, is
// refused at the root), so a variable ($name) never holds more than metadata.
func jqTermMetadataOnly(t *gojq.Term, root bool) bool {
	if !jqSuffixesMetadataOnly(t.SuffixList, root) {
		return false
	}
	switch t.Type {
	case gojq.TermTypeIdentity:
		if !root {
			return true
		}
		if len(t.SuffixList) == 0 || t.SuffixList[0].Index == nil {
			return false // the whole pod, or an iteration over it
		}
		return indexName(t.SuffixList[0].Index) == "metadata"
	case gojq.TermTypeIndex:
		return !root || indexName(t.Index) == "metadata"
	case gojq.TermTypeRecurse:
		return false
	case gojq.TermTypeQuery:
		return jqRootReadsMetadataOnly(t.Query, root)
	case gojq.TermTypeIf:
		if t.If == nil {
			return !root
		}
		for _, e := range t.If.Elif {
			if !jqRootReadsMetadataOnly(e.Cond, root) || !jqRootReadsMetadataOnly(e.Then, root) {
				return false
			}
		}
		return jqRootReadsMetadataOnly(t.If.Cond, root) && jqRootReadsMetadataOnly(t.If.Then, root) && jqRootReadsMetadataOnly(t.If.Else, root)
	case gojq.TermTypeFunc:
		if strings.HasPrefix(t.Func.Name, "$") {
			return true // a variable: see above
		}
		for _, a := range t.Func.Args {
			if !jqRootReadsMetadataOnly(a, root) {
				return false
			}
		}
		// A function without arguments reads its input as a whole (keys, tostring, ...).
		return !root || len(t.Func.Args) > 0 || isConstantFunc(t.Func.Name)
	case gojq.TermTypeArray:
		return t.Array == nil || jqRootReadsMetadataOnly(t.Array.Query, root)
	case gojq.TermTypeNull, gojq.TermTypeTrue, gojq.TermTypeFalse, gojq.TermTypeNumber:
		return true
	case gojq.TermTypeString:
		return t.Str == nil || len(t.Str.Queries) == 0 || !root
	default:
		return !root
	}
}

// jqSuffixesMetadataOnly checks what a term's suffixes evaluate on the term's input: the queries
// of an index or slice (`.a[.b]` reads .b of the input). A binding (`E as $x | body`) is a pipe
// with patterns, whose body reads E's input: see jqRootReadsMetadataOnly.
func jqSuffixesMetadataOnly(suffixes []*gojq.Suffix, root bool) bool {
	for _, s := range suffixes {
		if idx := s.Index; idx != nil {
			if !jqRootReadsMetadataOnly(idx.Start, root) || !jqRootReadsMetadataOnly(idx.End, root) {
				return false
			}
			if idx.Str != nil {
				for _, q := range idx.Str.Queries {
					if !jqRootReadsMetadataOnly(q, root) {
						return false
					}
				}
			}
		}
	}
	return true
}

func isConstantFunc(name string) bool {
	switch name {
	case "empty", "null", "true", "false", "not", "error":
		return name != "not" // not reads its input
	}
	return false
}

func indexName(idx *gojq.Index) string {
	if idx == nil {
		return ""
	}
	if idx.Name != "" {
		return idx.Name
	}
	if idx.Str != nil && len(idx.Str.Queries) == 0 {
		return idx.Str.Str
	}
	return ""
}
