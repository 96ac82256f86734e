package onboarding

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// NamespaceProblem is a rule whose queue comes from a namespace label (queue.fromNamespaceLabel)
// meeting a namespace it selects that lacks that label (or has it empty). The rule is refused for
// that namespace only: its pods are created unchanged (never blocked), other namespaces are
// onboarded as before. The check runs when the policy loads and whenever a namespace changes
// (NamespaceAuditor), and again for each pod at admission (Compiled.Match).
type NamespaceProblem struct {
	// Rule is the rule's name; Field the policy field naming the missing label
	// (rules[0].queue.fromNamespaceLabel).
	Rule, Field string
	// Namespace lacks Label.
	Namespace, Label string
}

// Error names the field, the namespace and the consequence.
func (p *NamespaceProblem) Error() string {
	return fmt.Sprintf("onboarding policy %s: namespace %q, selected by rule %q, has no label %q to take the queue from: the rule does not onboard pods in that namespace (they are created unchanged) until the namespace has the label",
		p.Field, p.Namespace, p.Rule, p.Label)
}

// namespaceProblem returns the problem of rule r (index i) in a namespace it selects, or nil.
func (r *compiledRule) namespaceProblem(i int, namespace string, nsLabels map[string]string) *NamespaceProblem {
	q := r.Queue
	if q == nil || q.FromNamespaceLabel == "" || nsLabels[q.FromNamespaceLabel] != "" {
		return nil
	}
	return &NamespaceProblem{Rule: r.Name, Field: field.NewPath("rules").Index(i).Child("queue", "fromNamespaceLabel").String(),
		Namespace: namespace, Label: q.FromNamespaceLabel}
}

// CheckNamespace returns the problems of the rules that apply in namespace ns (with labels
// nsLabels) and would take the queue from a label it lacks. A rule is left out when earlier rules
// selecting the namespace already cover all its kinds (it never applies there).
func (c *Compiled) CheckNamespace(ns string, nsLabels map[string]string) []*NamespaceProblem {
	if c == nil {
		return nil
	}
	var out []*NamespaceProblem
	covered := map[schema.GroupKind]bool{}
	for i, r := range c.rules {
		if r.selector != nil && !r.selector.Matches(labels.Set(nsLabels)) {
			continue
		}
		shadowed := true
		for gk := range r.kinds {
			if !covered[gk] {
				shadowed = false
			}
			covered[gk] = true
		}
		if shadowed {
			continue
		}
		if p := r.namespaceProblem(i, ns, nsLabels); p != nil {
			out = append(out, p)
		}
	}
	return out
}

// ReadsNamespaceQueues reports whether some rule takes the queue from a namespace label (so
// namespaces are worth checking).
func (c *Compiled) ReadsNamespaceQueues() bool { return c != nil && c.namespaceQueues }
