package definitions

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Source says where a definition came from. Precedence is Cluster > File > Catalog.
type Source string

// The definition sources, from the highest precedence to the lowest.
const (
	SourceCluster Source = "cluster"
	SourceFile    Source = "file"
	SourceCatalog Source = "catalog"
)

// Rank orders sources by precedence: a lower rank wins.
func (s Source) Rank() int {
	switch s {
	case SourceCluster:
		return 0
	case SourceFile:
		return 1
	default:
		return 2
	}
}

// Loaded is one decoded definition with where it came from and what decoding noticed.
type Loaded struct {
	Karta *Karta
	// Source and Origin say where it came from: Origin is a file path (with the document index),
	// "catalog:<file>", or "cluster:<name>".
	Source Source
	Origin string
	// Warnings are problems that do not stop the definition from being used: unknown fields when
	// decoding is not strict, fields lost in storage.
	Warnings field.ErrorList
}

// Name is the definition's metadata.name.
func (l *Loaded) Name() string { return l.Karta.Metadata.Name }

// DecodeOptions control decoding.
type DecodeOptions struct {
	// Strict turns unknown fields into errors; otherwise they are warnings.
	Strict bool
}

// Decode reads every YAML (or JSON) document of r, each a Karta, and returns them in order.
// Empty documents are skipped. origin names the input in messages (a file path).
//
// Errors: a document that is not valid YAML, is not a Karta (apiVersion run.ai/v1alpha1, kind
// Karta), or (with opts.Strict) has unknown fields, fails the whole call with an error that names
// origin, the document index and the field path.
func Decode(r io.Reader, origin string, source Source, opts DecodeOptions) ([]*Loaded, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out []*Loaded
	for doc := 0; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", origin, doc, err)
		}
		if len(bytes.TrimSpace(stripComments(raw))) == 0 {
			continue
		}
		docOrigin := fmt.Sprintf("%s#%d", origin, doc)
		l, err := DecodeDocument(raw, docOrigin, source, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
}

// DecodeDocument decodes one YAML or JSON document into a Karta. See Decode for errors. A
// mapping that names a key twice is refused, whatever opts say (YAML and JSON decoders otherwise
// keep the last value silently, so a definition could say two things and mean the second).
func DecodeDocument(doc []byte, origin string, source Source, opts DecodeOptions) (*Loaded, error) {
	// One parse for a valid document: the strict conversion's output is the lenient one's (both
	// unmarshal into interface{}; strictness only refuses a repeated key). On an error, the lenient
	// parse tells invalid YAML from a repeated key.
	jsonDoc, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		if _, lerr := yaml.YAMLToJSON(doc); lerr != nil {
			return nil, fmt.Errorf("%s: invalid YAML: %w", origin, lerr)
		}
		// It parsed leniently, so the strict decoder's only objection is a repeated key.
		return nil, fmt.Errorf("%s: %w", origin, duplicateKeys(err))
	}
	var generic map[string]any
	if err := json.Unmarshal(jsonDoc, &generic); err != nil {
		return nil, fmt.Errorf("%s: expected a YAML object: %w", origin, err)
	}
	return decodeMap(generic, origin, source, opts)
}

// FromUnstructured converts a Karta read from the API server. gangmap's additions are taken from
// spec.gangmap when the stored object kept it, else from the ExtensionsAnnotation. When the
// object's kubectl last-applied-configuration had fields that the stored object lacks (the
// upstream Karta CRD prunes unknown fields), a warning names each lost field path.
func FromUnstructured(u *unstructured.Unstructured) (*Loaded, error) {
	origin := "cluster:" + u.GetName()
	content := u.UnstructuredContent()
	l, err := decodeMap(content, origin, SourceCluster, DecodeOptions{})
	if err != nil {
		return nil, err
	}
	ann := u.GetAnnotations()
	if raw, ok := ann[ExtensionsAnnotation]; ok && l.Karta.Spec.Gangmap == nil {
		ext := &Extensions{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(raw), ext); err != nil {
			return nil, fmt.Errorf("%s: metadata.annotations[%s]: expected the JSON form of spec.gangmap: %w", origin, ExtensionsAnnotation, err)
		}
		l.Karta.Spec.Gangmap = ext
	}
	if applied, ok := ann["kubectl.kubernetes.io/last-applied-configuration"]; ok {
		var before map[string]any
		if json.Unmarshal([]byte(applied), &before) == nil {
			for _, p := range lostFields(before["spec"], content["spec"], field.NewPath("spec")) {
				if p == "spec.gangmap" && l.Karta.Spec.Gangmap != nil {
					continue // restored from the annotation
				}
				l.Warnings = append(l.Warnings, field.Invalid(mustParsePath(p), "<pruned>",
					"the applied definition had this field but the stored object lost it (the Karta CRD prunes unknown fields); "+
						"put gangmap additions in annotation "+ExtensionsAnnotation))
			}
		}
	}
	return l, nil
}

func decodeMap(generic map[string]any, origin string, source Source, opts DecodeOptions) (*Loaded, error) {
	apiVersion, _ := generic["apiVersion"].(string)
	kind, _ := generic["kind"].(string)
	if apiVersion != APIVersion || kind != Kind {
		return nil, fmt.Errorf("%s: expected apiVersion %s and kind %s, got apiVersion %q kind %q", origin, APIVersion, Kind, apiVersion, kind)
	}
	delete(generic, "status")
	if md, ok := generic["metadata"].(map[string]any); ok {
		// Only the metadata fields the model keeps; server-set ones (managedFields, timestamps)
		// are not unknown fields of the definition.
		kept := map[string]any{}
		for _, k := range []string{"name", "labels", "annotations", "uid", "resourceVersion", "generation"} {
			if v, ok := md[k]; ok {
				kept[k] = v
			}
		}
		generic["metadata"] = kept
	}
	normalizeForwardShape(generic)
	data, err := json.Marshal(generic)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", origin, err)
	}
	k := &Karta{}
	strictErrs, err := sigsjson.UnmarshalStrict(data, k)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", origin, err)
	}
	l := &Loaded{Karta: k, Source: source, Origin: origin}
	for _, se := range strictErrs {
		msg := se.Error()
		p := unknownFieldPath(msg)
		hint := proposedStatusHint(p)
		if opts.Strict {
			return nil, fmt.Errorf("%s: definition %q: %s: unknown field (strict mode)%s", origin, k.Metadata.Name, p, hint)
		}
		l.Warnings = append(l.Warnings, field.Invalid(mustParsePath(p), "<unknown field>", "unknown field: not part of the Workload Map format"+hint))
	}
	return l, nil
}

// proposedStatusHint explains an unknown statusMappings key that upstream has proposed but not
// merged: "pending" and "progressing", the split of "initializing" in dsx-ai-factory/workload-map
// issue #347 (open; the run.ai/v1alpha1 StatusMappings on upstream main has initializing, running,
// completed, failed, degraded, suspended, suspending, resuming). "" for any other path.
func proposedStatusHint(path string) string {
	i := strings.LastIndex(path, ".statusMappings.")
	if i < 0 {
		return ""
	}
	switch path[i+len(".statusMappings."):] {
	case "pending", "progressing":
		return "; pending and progressing are upstream's proposed split of initializing (dsx-ai-factory/workload-map#347, not merged), not words of the run.ai/v1alpha1 format: map both under initializing"
	}
	return ""
}

// normalizeForwardShape renames forward-shape accessor keys to the published *Path names: an
// object key K whose value is an accessor object {expression: ...} becomes K+"Path" ("replicas"
// becomes "replicasPath"; "key" becomes "keyPath"; "id" becomes "idPath"), unless K+"Path" is
// already present. It recurses through the whole document.
func normalizeForwardShape(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			normalizeForwardShape(val)
			if m, ok := val.(map[string]any); ok && isAccessor(m) && !strings.HasSuffix(strings.ToLower(k), "path") && k != "byExpression" && k != "when" && k != "firstInstances" && k != "holds" {
				if _, exists := t[k+"Path"]; !exists {
					t[k+"Path"] = val
					delete(t, k)
				}
			}
		}
	case []any:
		for _, e := range t {
			normalizeForwardShape(e)
		}
	}
}

func isAccessor(m map[string]any) bool {
	_, ok := m["expression"]
	return ok && len(m) == 1
}

// ErrDuplicateKey says a definition document names a key twice in one mapping.
var ErrDuplicateKey = errors.New("duplicate key")

// duplicateKeys turns the strict YAML decoder's error (`yaml: unmarshal errors:\n  line 4: key
// "c" already set in map`, one line per repeated key) into one line naming every repeat.
func duplicateKeys(err error) error {
	var found []string
	for _, line := range strings.Split(err.Error(), "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "line ") {
			found = append(found, strings.TrimSuffix(line, " already set in map"))
		}
	}
	if len(found) == 0 {
		return fmt.Errorf("%w: %v", ErrDuplicateKey, err)
	}
	return fmt.Errorf("%w (each key may appear once in a mapping; the last would silently win): %s", ErrDuplicateKey, strings.Join(found, "; "))
}

// unknownFieldPath extracts the field path from sigs.k8s.io/json's strict error text
// (`unknown field "spec.foo"`).
func unknownFieldPath(msg string) string {
	if i := strings.Index(msg, `"`); i >= 0 {
		if j := strings.LastIndex(msg, `"`); j > i {
			return msg[i+1 : j]
		}
	}
	return msg
}

// mustParsePath turns "spec.a[1].b" into a *field.Path for field.Error values.
func mustParsePath(p string) *field.Path {
	var path *field.Path
	for _, part := range strings.Split(p, ".") {
		name, idx := part, ""
		if i := strings.Index(part, "["); i >= 0 {
			name, idx = part[:i], part[i:]
		}
		if path == nil {
			path = field.NewPath(name)
		} else {
			path = path.Child(name)
		}
		for idx != "" {
			end := strings.Index(idx, "]")
			if end < 0 {
				break
			}
			path = path.Key(idx[1:end])
			idx = idx[end+1:]
		}
	}
	return path
}

// lostFields lists the paths present in before and absent in after.
func lostFields(before, after any, p *field.Path) []string {
	var out []string
	switch b := before.(type) {
	case map[string]any:
		a, _ := after.(map[string]any)
		for k, v := range b {
			av, ok := a[k]
			if !ok {
				out = append(out, p.Child(k).String())
				continue
			}
			out = append(out, lostFields(v, av, p.Child(k))...)
		}
	case []any:
		a, _ := after.([]any)
		for i, v := range b {
			if i < len(a) {
				out = append(out, lostFields(v, a[i], p.Index(i))...)
			}
		}
	}
	return out
}

func stripComments(b []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.Split(b, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' || bytes.Equal(t, []byte("---")) {
			continue
		}
		out.Write(line)
	}
	return out.Bytes()
}
