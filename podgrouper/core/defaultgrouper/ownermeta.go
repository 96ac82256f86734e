package defaultgrouper

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/lru"
	"sigs.k8s.io/yaml"
)

// topOwnerMetadata is KAI's top-owner-metadata (KAI pkg/podgrouper/topowner: name, uid, group,
// version, kind), which the default grouper writes as YAML on every PodGroup.
type topOwnerMetadata struct {
	Name    string `json:"name"`
	UID     string `json:"uid"`
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// ownerYAMLCacheSize bounds the annotations cached for owners whose names need YAML's encoder.
const ownerYAMLCacheSize = 512

// topOwnerMetadata renders KAI's kai.scheduler/top-owner-metadata annotation: the YAML
// sigs.k8s.io/yaml.Marshal writes for {name,uid,group,version,kind} (keys sorted). Values that
// are plain YAML scalars (plainYAML: every Kubernetes name, group, version and kind that starts
// with a letter, and every UID) are written directly, with nothing cached (the encoder took most
// of a per-pod decision's time, and a cache of every workload's text most of its memory); others
// go through the encoder, cached per owner (at most ownerYAMLCacheSize).
// TestTopOwnerMetadataIsYAMLs checks the direct text against the encoder's.
func (g *Grouper) topOwnerMetadata(topOwner *unstructured.Unstructured) string {
	gvk := topOwner.GroupVersionKind()
	m := topOwnerMetadata{Name: topOwner.GetName(), UID: string(topOwner.GetUID()), Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
	if text, ok := m.plainText(); ok {
		return text
	}
	g.once.Do(func() { g.ownerYAML = lru.New(ownerYAMLCacheSize) })
	if v, ok := g.ownerYAML.Get(m); ok {
		return v.(string)
	}
	b, _ := yaml.Marshal(m)
	text := string(b)
	g.ownerYAML.Add(m, text)
	return text
}

// plainText is the YAML text of m when every value is written plain or is empty, else ok is
// false.
func (m topOwnerMetadata) plainText() (string, bool) {
	fields := [5][2]string{{"group", m.Group}, {"kind", m.Kind}, {"name", m.Name}, {"uid", m.UID}, {"version", m.Version}}
	n := 0
	for _, f := range fields {
		if f[1] != "" && !plainYAML(f[1]) {
			return "", false
		}
		n += len(f[0]) + 2 + len(f[1]) + 3
	}
	var b strings.Builder
	b.Grow(n)
	for _, f := range fields {
		b.WriteString(f[0])
		b.WriteString(": ")
		if f[1] == "" {
			b.WriteString(`""`)
		} else {
			b.WriteString(f[1])
		}
		b.WriteByte('\n')
	}
	return b.String(), true
}

// plainYAML says YAML's encoder (go.yaml.in/yaml/v2, under sigs.k8s.io/yaml) writes s as a plain
// scalar, conservatively: s is at most 253 characters of letters, digits, '-', '.' and '_', and
// either starts with a letter and is not one of YAML 1.1's booleans or null in any case (y, yes,
// n, no, true, false, on, off, null: the encoder would quote them), or is a UID (8-4-4-4-12
// lowercase hexadecimal digits, which no YAML number or timestamp matches). Anything else (a name
// starting with a digit may read as a number or a date) is left to the encoder.
func plainYAML(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	if !isLetter(s[0]) {
		return isUID(s)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && !isDigit(c) && c != '-' && c != '.' && c != '_' {
			return false
		}
	}
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "true", "false", "on", "off", "null":
		return false
	}
	return true
}

// isUID says s is 8-4-4-4-12 lowercase hexadecimal digits (the form the API server gives UIDs).
func isUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if c := s[i]; !isDigit(c) && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
