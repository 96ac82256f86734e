// Package onboard sets the scheduler name, labels and annotations that bring a workload to KAI
// Scheduler on its pods: on every pod template of every role of a workload manifest, found through
// the workload's definition (`gangmap onboard`), and on a pod at creation (the grouper's onboarding
// policy in the Pod CREATE webhook). Both go through Settings.Changes, so a pod and a template get
// the same fields under the same rules.
//
// A document here is a JSON-shaped tree (map[string]any, []any, string, numbers, bool, nil): an
// unstructured workload object or pod. A location in it is a Path: a list of map keys (string)
// and list indices (int).
package onboard

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// DefaultSchedulerName is the scheduler name Kubernetes gives a pod that names none; onboarding
// treats it like an empty one (the pod is not yet any other scheduler's).
const DefaultSchedulerName = "default-scheduler"

// Settings is what onboarding sets on a pod or pod template.
type Settings struct {
	// SchedulerName is set as spec.schedulerName (KAI's default: "kai-scheduler"); empty sets none.
	SchedulerName string
	// OverrideScheduler replaces a scheduler name other than "" and DefaultSchedulerName. Without
	// it a pod or template that names another scheduler is left alone entirely (SkipError).
	OverrideScheduler bool
	// Labels are set, replacing any value already there.
	Labels map[string]string
	// DefaultLabels are set only where the key is absent (a queue the workload's author chose
	// wins over the policy's).
	DefaultLabels map[string]string
	// OptionalLabels are set, replacing any value already there, where the pod or template has a
	// place for labels; where it has none they are left out without an error (the queue label,
	// which KAI also reads on the top owner).
	OptionalLabels map[string]string
	// Annotations are set, replacing any value already there.
	Annotations map[string]string
}

// Empty reports whether s sets nothing.
func (s Settings) Empty() bool {
	return s.SchedulerName == "" && len(s.Labels) == 0 && len(s.DefaultLabels) == 0 && len(s.OptionalLabels) == 0 && len(s.Annotations) == 0
}

// Path is a location in a document: map keys (string) and list indices (int).
type Path []any

// String renders p as a jq path (.spec.replicatedJobs[0].template), the form definitions use.
func (p Path) String() string {
	var b strings.Builder
	for _, e := range p {
		switch v := e.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		case string:
			if isIdent(v) {
				b.WriteString("." + v)
			} else {
				b.WriteString("[" + strconv.Quote(v) + "]")
			}
		default:
			fmt.Fprintf(&b, "[%v]", v)
		}
	}
	if b.Len() == 0 {
		return "."
	}
	return b.String()
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}

// Child returns p extended by elems, never sharing p's backing array.
func (p Path) Child(elems ...any) Path {
	out := make(Path, 0, len(p)+len(elems))
	return append(append(out, p...), elems...)
}

// Slots says where one pod's (or pod template's) fields live in a document. A nil path means the
// document has no place for that field (a fragmented definition without schedulerNamePath).
type Slots struct {
	// SchedulerName is the path of the scheduler name string.
	SchedulerName Path
	// Labels and Annotations are the paths of the label and annotation maps.
	Labels, Annotations Path
}

// PodSlots are a pod's (or a pod template's, below its own path) fields.
func PodSlots(prefix Path) Slots {
	return Slots{
		SchedulerName: prefix.Child("spec", "schedulerName"),
		Labels:        prefix.Child("metadata", "labels"),
		Annotations:   prefix.Child("metadata", "annotations"),
	}
}

// Change is one field onboarding sets: Path is the field (the scheduler name, or a map entry
// whose last element is the key), Old its value before (Absent when there was none).
type Change struct {
	Path Path
	Old  string
	// Absent: the field did not exist.
	Absent bool
	New    string
}

// SkipError says a pod or template names a scheduler other than the default one and Settings do
// not override it: onboarding leaves it alone.
type SkipError struct {
	// Scheduler is the name it carries.
	Scheduler string
}

func (e *SkipError) Error() string {
	return fmt.Sprintf("it names scheduler %q (not the default one); left alone without override", e.Scheduler)
}

// MissingSlotError says settings need a field the document has no place for.
type MissingSlotError struct {
	// Field is "schedulerName", "labels" or "annotations".
	Field string
}

func (e *MissingSlotError) Error() string {
	return fmt.Sprintf("the definition gives no path for the pod's %s", e.Field)
}

// Changes returns the changes that bring the pod (or template) at slots in doc to s, in a stable
// order (scheduler name, labels by key, annotations by key); none when it already carries them.
// Errors: *SkipError when the document names another scheduler and s does not override it;
// *MissingSlotError when s sets a field slots has no path for; an error naming the path when a
// value there has the wrong type (a label map that is a string). doc is not modified.
func (s Settings) Changes(doc map[string]any, slots Slots) ([]Change, error) {
	var out []Change
	if s.SchedulerName != "" {
		if slots.SchedulerName == nil {
			return nil, &MissingSlotError{Field: "schedulerName"}
		}
		cur, found, err := stringAt(doc, slots.SchedulerName)
		if err != nil {
			return nil, err
		}
		if found && cur != "" && cur != DefaultSchedulerName && cur != s.SchedulerName && !s.OverrideScheduler {
			return nil, &SkipError{Scheduler: cur}
		}
		if !found || cur != s.SchedulerName {
			out = append(out, Change{Path: slots.SchedulerName, Old: cur, Absent: !found, New: s.SchedulerName})
		}
	}
	set := s.Labels
	if slots.Labels != nil && len(s.OptionalLabels) > 0 {
		set = merged(s.OptionalLabels, s.Labels)
	}
	labels, err := mapChanges(doc, slots.Labels, "labels", set, s.DefaultLabels)
	if err != nil {
		return nil, err
	}
	annotations, err := mapChanges(doc, slots.Annotations, "annotations", s.Annotations, nil)
	if err != nil {
		return nil, err
	}
	return append(append(out, labels...), annotations...), nil
}

// mapChanges returns the entries of set (always) and defaults (where absent) that the map at p
// lacks or holds with another value.
func mapChanges(doc map[string]any, p Path, field string, set, defaults map[string]string) ([]Change, error) {
	if len(set) == 0 && len(defaults) == 0 {
		return nil, nil
	}
	if p == nil {
		return nil, &MissingSlotError{Field: field}
	}
	v, found, err := lookup(doc, p)
	if err != nil {
		return nil, err
	}
	cur := map[string]any{}
	if found && v != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: expected a map of strings, got %T", p, v)
		}
		cur = m
	}
	var out []Change
	for _, k := range sortedKeys(set, defaults) {
		want, forced := set[k]
		old, had := cur[k]
		oldStr, _ := old.(string)
		if !forced {
			if had {
				continue
			}
			want = defaults[k]
		}
		if had && oldStr == want {
			continue
		}
		out = append(out, Change{Path: p.Child(k), Old: oldStr, Absent: !had, New: want})
	}
	return out, nil
}

// merged returns a new map with a's entries, then b's (b wins).
func merged(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func sortedKeys(maps ...map[string]string) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range maps {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// stringAt reads the string at p: found false when absent or null.
func stringAt(doc map[string]any, p Path) (string, bool, error) {
	v, found, err := lookup(doc, p)
	if err != nil || !found || v == nil {
		return "", false, err
	}
	s, ok := v.(string)
	if !ok {
		return "", false, fmt.Errorf("%s: expected a string, got %T", p, v)
	}
	return s, true, nil
}

// lookup returns the value at p; found is false when a map key on the way is absent or a value on
// the way is null. A list index out of range or a value of the wrong kind on the way is an error.
func lookup(doc map[string]any, p Path) (any, bool, error) {
	var cur any = doc
	for i, e := range p {
		if cur == nil {
			return nil, false, nil
		}
		switch k := e.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false, fmt.Errorf("%s: expected an object, got %T", p[:i], cur)
			}
			v, ok := m[k]
			if !ok {
				return nil, false, nil
			}
			cur = v
		case int:
			l, ok := cur.([]any)
			if !ok || k < 0 || k >= len(l) {
				return nil, false, fmt.Errorf("%s: no list element %d", p[:i], k)
			}
			cur = l[k]
		default:
			return nil, false, fmt.Errorf("%s: bad path element %T", p[:i], e)
		}
	}
	return cur, true, nil
}

// Apply writes changes into doc, creating the maps on the way that do not exist yet. It fails,
// naming the path, when a value on the way is neither an object nor absent; doc may then be
// partly written, so callers apply to a copy (see Workload).
func Apply(doc map[string]any, changes []Change) error {
	for _, c := range changes {
		if err := setString(doc, c.Path, c.New); err != nil {
			return err
		}
	}
	return nil
}

func setString(doc map[string]any, p Path, value string) error {
	if len(p) == 0 {
		return fmt.Errorf("empty path")
	}
	var cur any = doc
	for i, e := range p[:len(p)-1] {
		next, err := child(cur, e, p[:i+1])
		if err != nil {
			return err
		}
		cur = next
	}
	m, ok := cur.(map[string]any)
	key, isKey := p[len(p)-1].(string)
	if !ok || !isKey {
		return fmt.Errorf("%s: expected an object field", p)
	}
	m[key] = value
	return nil
}

// child returns the value at e in cur, creating an empty object for a missing or null map entry.
func child(cur any, e any, at Path) (any, error) {
	switch k := e.(type) {
	case string:
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: expected an object, got %T", at[:len(at)-1], cur)
		}
		v := m[k]
		if v == nil {
			v = map[string]any{}
			m[k] = v
		}
		return v, nil
	case int:
		l, ok := cur.([]any)
		if !ok || k < 0 || k >= len(l) {
			return nil, fmt.Errorf("%s: no list element %d", at[:len(at)-1], k)
		}
		return l[k], nil
	default:
		return nil, fmt.Errorf("%s: bad path element %T", at, e)
	}
}
