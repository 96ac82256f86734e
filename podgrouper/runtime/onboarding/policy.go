// Package onboarding is the grouper's onboarding policy: for pods whose top owner is a workload
// kind the policy names, it gives the pod at creation (in the Pod CREATE webhook) the KAI scheduler
// name, a queue label and extra labels and annotations, so that a framework whose operator exposes
// no scheduler name, or whose users would have to edit every role by hand, runs under KAI; the
// pod then goes through gangmap's grouping like any KAI pod. What is set, and under which rules,
// is definitions/onboard.Settings: the same implementation `gangmap onboard` applies to manifests.
//
// The policy is a YAML file (Helm renders it from values into a ConfigMap; the grouper polls it):
//
//	rules:
//	  - name: ml-platform                       # for Events, logs and metrics
//	    kinds: [{group: e2e.example.com, kind: CustomJob}]
//	    namespaceSelector: {matchLabels: {team: ml}}  # absent: every namespace
//	    schedulerName: kai-scheduler            # absent: the grouper's --scheduler-name
//	    overrideScheduler: false                # replace a scheduler name other than the default one
//	    queue: {fromNamespaceLabel: team-queue} # or {value: q} or {fromOwnerLabel: key}
//	    labels: {team: ml}
//	    annotations: {}
//
// The first rule whose kinds and namespace selector match a pod applies.
package onboarding

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/gangmap/gangmap/definitions/onboard"
)

// Policy is the onboarding policy file.
type Policy struct {
	// Rules are tried in order; the first that matches a pod applies.
	Rules []Rule `json:"rules"`
}

// Rule onboards the pods of some workload kinds in some namespaces.
type Rule struct {
	// Name names the rule in Events, logs and the metric's rule label. Required, unique.
	Name string `json:"name"`
	// Kinds are the top-owner kinds (API group and kind, "" the core group; any version) whose
	// pods the rule onboards. Each must have a gangmap definition.
	Kinds []metav1.GroupKind `json:"kinds"`
	// NamespaceSelector selects the pods' namespaces by their labels; absent selects every one.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// SchedulerName is set as the pod's spec.schedulerName; empty: the grouper's scheduler name.
	SchedulerName string `json:"schedulerName,omitempty"`
	// OverrideScheduler replaces a scheduler name other than "" and "default-scheduler"; without
	// it such pods are left alone.
	OverrideScheduler bool `json:"overrideScheduler,omitempty"`
	// Queue gives the pod's queue label (the grouper's --queue-label-key). A queue label the pod
	// already carries wins.
	Queue *QueueSource `json:"queue,omitempty"`
	// Labels and Annotations are set on the pod, replacing values already there.
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// QueueSource says where a pod's queue comes from: exactly one field.
type QueueSource struct {
	// Value is a fixed queue name.
	Value string `json:"value,omitempty"`
	// FromNamespaceLabel copies the value of this label of the pod's namespace.
	FromNamespaceLabel string `json:"fromNamespaceLabel,omitempty"`
	// FromOwnerLabel copies the value of this label of the pod's top owner.
	FromOwnerLabel string `json:"fromOwnerLabel,omitempty"`
}

// Compiled is a validated policy, ready to match pods. It is immutable.
type Compiled struct {
	rules []*compiledRule
	// needsNamespaces says some rule reads the namespace (a selector or a namespace-label queue),
	// namespaceQueues that some rule takes its queue from a namespace label.
	needsNamespaces, namespaceQueues bool
	// ownerLabels are the top-owner label keys the rules read (OwnerLabelKeys).
	ownerLabels []string
}

type compiledRule struct {
	Rule
	kinds    map[schema.GroupKind]bool
	selector labels.Selector // nil: every namespace
}

// Parse decodes and validates a policy file. Unknown fields and duplicate keys are errors.
// known says whether a kind has a gangmap definition (nil: every kind is known). The error
// lists every problem with its field path (rules[0].queue: ...), prefixed with origin.
func Parse(data []byte, origin string, known func(schema.GroupKind) bool) (*Compiled, error) {
	p := &Policy{}
	if len(bytes.TrimSpace(data)) > 0 {
		js, err := yaml.YAMLToJSONStrict(data) // duplicate keys are errors
		var strict []error
		if err == nil {
			strict, err = kjson.UnmarshalStrict(js, p)
		}
		if err = cmp.Or(err, errors.Join(strict...)); err != nil {
			return nil, fmt.Errorf("onboarding policy %s: %w", origin, err)
		}
	}
	c, errs := compile(p, known)
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("onboarding policy %s is invalid:\n  %s", origin, strings.Join(msgs, "\n  "))
	}
	return c, nil
}

func compile(p *Policy, known func(schema.GroupKind) bool) (*Compiled, field.ErrorList) {
	var errs field.ErrorList
	c := &Compiled{}
	names := map[string]bool{}
	for i, r := range p.Rules {
		path := field.NewPath("rules").Index(i)
		if errs2 := validation.IsDNS1123Label(r.Name); len(errs2) > 0 {
			errs = append(errs, field.Invalid(path.Child("name"), r.Name, strings.Join(errs2, "; ")))
		} else if names[r.Name] {
			errs = append(errs, field.Duplicate(path.Child("name"), r.Name))
		}
		names[r.Name] = true
		cr := &compiledRule{Rule: r, kinds: map[schema.GroupKind]bool{}}
		if len(r.Kinds) == 0 {
			errs = append(errs, field.Required(path.Child("kinds"), "name the workload kinds (group and kind) whose pods the rule onboards"))
		}
		for j, k := range r.Kinds {
			gk := schema.GroupKind(k)
			switch {
			case k.Kind == "":
				errs = append(errs, field.Required(path.Child("kinds").Index(j).Child("kind"), ""))
			case known != nil && !known(gk):
				errs = append(errs, field.NotFound(path.Child("kinds").Index(j), gk.String()+" (no gangmap definition for this kind: apply its Karta first)"))
			}
			cr.kinds[gk] = true
		}
		if r.NamespaceSelector != nil {
			sel, err := metav1.LabelSelectorAsSelector(r.NamespaceSelector)
			if err != nil {
				errs = append(errs, field.Invalid(path.Child("namespaceSelector"), r.NamespaceSelector, err.Error()))
			}
			cr.selector = sel
			c.needsNamespaces = true
		}
		errs = append(errs, validateSettings(r, path)...)
		if r.Queue != nil && r.Queue.FromNamespaceLabel != "" {
			c.needsNamespaces, c.namespaceQueues = true, true
		}
		if r.Queue != nil && r.Queue.FromOwnerLabel != "" && !slices.Contains(c.ownerLabels, r.Queue.FromOwnerLabel) {
			c.ownerLabels = append(c.ownerLabels, r.Queue.FromOwnerLabel)
		}
		c.rules = append(c.rules, cr)
	}
	return c, errs
}

func validateSettings(r Rule, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.SchedulerName != "" {
		if e := validation.IsDNS1123Subdomain(r.SchedulerName); len(e) > 0 {
			errs = append(errs, field.Invalid(path.Child("schedulerName"), r.SchedulerName, strings.Join(e, "; ")))
		}
	}
	if q := r.Queue; q != nil {
		qp := path.Child("queue")
		if set := slices.DeleteFunc([]string{q.Value, q.FromNamespaceLabel, q.FromOwnerLabel}, func(v string) bool { return v == "" }); len(set) != 1 {
			errs = append(errs, field.Invalid(qp, q, "set exactly one of value, fromNamespaceLabel, fromOwnerLabel"))
		}
		if q.Value != "" {
			if e := validation.IsValidLabelValue(q.Value); len(e) > 0 {
				errs = append(errs, field.Invalid(qp.Child("value"), q.Value, strings.Join(e, "; ")))
			}
		}
		for name, key := range map[string]string{"fromNamespaceLabel": q.FromNamespaceLabel, "fromOwnerLabel": q.FromOwnerLabel} {
			if key == "" {
				continue
			}
			if e := validation.IsQualifiedName(key); len(e) > 0 {
				errs = append(errs, field.Invalid(qp.Child(name), key, "not a label key: "+strings.Join(e, "; ")))
			}
		}
	}
	// KAI's grouping keys (the PodGroup name, the sub-group label, the skip annotation:
	// onboard.CheckKey) are written by the grouper per pod: a rule must never set them on every pod.
	for k, v := range r.Labels {
		if err := onboard.CheckKey(k); err != nil {
			errs = append(errs, field.Forbidden(path.Child("labels").Key(k), err.Error()))
		} else if e := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(e) > 0 {
			errs = append(errs, field.Invalid(path.Child("labels").Key(k), v, strings.Join(e, "; ")))
		}
	}
	for k := range r.Annotations {
		if err := onboard.CheckKey(k); err != nil {
			errs = append(errs, field.Forbidden(path.Child("annotations").Key(k), err.Error()))
		} else if e := validation.IsQualifiedName(k); len(e) > 0 {
			errs = append(errs, field.Invalid(path.Child("annotations").Key(k), k, strings.Join(e, "; ")))
		}
	}
	return errs
}

// Empty reports whether the policy has no rule (nil is empty).
func (c *Compiled) Empty() bool { return c == nil || len(c.rules) == 0 }

// NeedsNamespaces reports whether matching reads the pod's namespace labels.
func (c *Compiled) NeedsNamespaces() bool { return c != nil && c.needsNamespaces }

// OwnerLabelKeys are the label keys of the top owner the policy reads (its rules'
// queue.fromOwnerLabel), each once, in rule order; nil for a nil policy or when no rule reads one.
// The slice is the policy's own, the same for every call: callers must not change it.
func (c *Compiled) OwnerLabelKeys() []string {
	if c == nil {
		return nil
	}
	return c.ownerLabels
}

// Target is what a rule is matched against: the pod's top owner and namespace.
type Target struct {
	// Kind is the top owner's group and kind.
	Kind schema.GroupKind
	// OwnerLabels are the top owner's labels.
	OwnerLabels map[string]string
	// Namespace is the pod's namespace; NamespaceLabels its labels (needed when NeedsNamespaces).
	Namespace       string
	NamespaceLabels map[string]string
}

// Match is a rule that applies to a pod, with what it sets.
type Match struct {
	// Rule is the rule's name.
	Rule string
	// Settings is what the pod is given.
	Settings onboard.Settings
	// Problem is set when the rule applies but the top owner lacks the label its queue source
	// names (queue.fromOwnerLabel): the pod is onboarded without a queue label (KAI then uses the
	// top owner's or its default queue) and the problem is reported.
	Problem string
	// Refused is set when the rule selects the pod's namespace but that namespace lacks the label
	// its queue source names (queue.fromNamespaceLabel; see NamespaceProblem): the rule does not
	// onboard pods there (and no later rule does), so they keep their own scheduler rather than
	// enter KAI in a queue nobody chose (KAI's default queue, which a PodGroup keeps for life).
	// The pod is created unchanged and the refusal reported.
	Refused *NamespaceProblem
}

// Match returns the first rule that applies to t, or nil. defaultScheduler is the grouper's
// scheduler name and queueLabelKey its --queue-label-key.
func (c *Compiled) Match(t Target, defaultScheduler, queueLabelKey string) *Match {
	if c == nil {
		return nil
	}
	for i, r := range c.rules {
		if !r.kinds[t.Kind] || (r.selector != nil && !r.selector.Matches(labels.Set(t.NamespaceLabels))) {
			continue
		}
		if p := r.namespaceProblem(i, t.Namespace, t.NamespaceLabels); p != nil {
			return &Match{Rule: r.Name, Refused: p}
		}
		m := &Match{Rule: r.Name, Settings: onboard.Settings{
			SchedulerName: cmp.Or(r.SchedulerName, defaultScheduler), OverrideScheduler: r.OverrideScheduler,
			Labels: r.Labels, Annotations: r.Annotations,
		}}
		if q := r.Queue; q != nil {
			queue, problem := q.resolve(t)
			m.Problem = problem
			if queue != "" {
				m.Settings.DefaultLabels = map[string]string{queueLabelKey: queue}
			}
		}
		return m
	}
	return nil
}

// resolve gives the queue for t, or a problem saying why there is none.
func (q *QueueSource) resolve(t Target) (string, string) {
	switch {
	case q.Value != "":
		return q.Value, ""
	case q.FromNamespaceLabel != "":
		return t.NamespaceLabels[q.FromNamespaceLabel], "" // present: Match refuses the rule otherwise
	default:
		if v := t.OwnerLabels[q.FromOwnerLabel]; v != "" {
			return v, ""
		}
		return "", fmt.Sprintf("the top owner has no label %s (queue.fromOwnerLabel)", q.FromOwnerLabel)
	}
}
