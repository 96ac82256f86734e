// Package native holds the table of workload kinds that KAI Scheduler's pod-grouper groups with
// a native plugin. gangmap never groups those kinds: native wins. The table is data, per KAI
// release in podgrouper/core/kairelease (the default is the latest, v0.17's hub
// pkg/podgrouper/podgrouper/hub/hub.go, 42 entries), and flags can add or remove kinds for a KAI
// built with other plugins.
package native

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/podgrouper/core/kairelease"
)

// AnyVersion in a table entry matches every version of the group and kind (KAI's wildcard
// entries, such as nvidia.com/*/DynamoGraphDeployment).
const AnyVersion = "*"

// Table is a set of group/version/kind entries; a version may be AnyVersion.
type Table struct {
	entries map[schema.GroupVersionKind]bool
}

// DefaultRelease is the KAI release whose table is the default (the latest gangmap knows).
const DefaultRelease = kairelease.Latest

// DefaultTable is the latest known release's table.
func DefaultTable() *Table {
	t, _ := ForRelease(DefaultRelease)
	return t
}

// ForRelease returns the table of a KAI release (any form kairelease.Parse accepts: v0.9 …
// v0.17, a tag of one, or a newer release treated as the latest), or kairelease.Parse's error.
func ForRelease(release string) (*Table, error) {
	r, err := kairelease.Parse(release)
	if err != nil {
		return nil, err
	}
	return FromRelease(r), nil
}

// FromRelease returns the native table of a parsed KAI release (its NativeKinds).
func FromRelease(r *kairelease.Release) *Table {
	t := &Table{entries: map[schema.GroupVersionKind]bool{}}
	for _, e := range r.NativeKinds {
		if err := t.Add(e); err != nil {
			panic(err) // the built-in tables are well formed; a test checks them
		}
	}
	return t
}

// ParseGVK parses "group/version/Kind" ("core" or "" for the core group; version may be "*").
func ParseGVK(s string) (schema.GroupVersionKind, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("expected group/version/Kind (core for the core group, * for any version), got %q", s)
	}
	g := parts[0]
	if g == "core" {
		g = ""
	}
	return schema.GroupVersionKind{Group: g, Version: parts[1], Kind: parts[2]}, nil
}

// Add adds an entry in the ParseGVK form.
func (t *Table) Add(s string) error {
	gvk, err := ParseGVK(s)
	if err != nil {
		return err
	}
	t.entries[gvk] = true
	return nil
}

// Remove removes an entry in the ParseGVK form; removing "g/*/K" removes every version of g/K.
func (t *Table) Remove(s string) error {
	gvk, err := ParseGVK(s)
	if err != nil {
		return err
	}
	for e := range t.entries {
		if e == gvk || (gvk.Version == AnyVersion && e.Group == gvk.Group && e.Kind == gvk.Kind) {
			delete(t.entries, e)
		}
	}
	return nil
}

// Has reports whether KAI groups gvk natively: an exact entry, or a wildcard entry for its group
// and kind (KAI's hub lookup steps 1 and 2).
func (t *Table) Has(gvk schema.GroupVersionKind) bool {
	if t == nil {
		return false
	}
	if t.entries[gvk] {
		return true
	}
	return t.entries[schema.GroupVersionKind{Group: gvk.Group, Version: AnyVersion, Kind: gvk.Kind}]
}

// Entries lists the table in the ParseGVK form, sorted.
func (t *Table) Entries() []string {
	out := make([]string, 0, len(t.entries))
	for e := range t.entries {
		out = append(out, cmp.Or(e.Group, "core")+"/"+e.Version+"/"+e.Kind)
	}
	slices.Sort(out)
	return out
}
