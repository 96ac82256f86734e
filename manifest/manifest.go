// Package manifest reads Kubernetes workload manifests (multi-document YAML or JSON, and
// kind: List) into unstructured objects, for offline plans, describes and tests.
package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Read decodes every document of r. Empty documents are skipped; the items of a kind: List are
// returned one by one. origin names the input in errors. Errors: invalid YAML, a document that is
// not an object, or one without apiVersion and kind, each naming origin and the document index
// (a quote of the input cut to a few hundred bytes); an input over MaxInputBytes (ErrTooLarge).
func Read(r io.Reader, origin string) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(Limit(r)))
	var out []*unstructured.Unstructured
	for doc := 0; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", origin, doc, err)
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: invalid YAML: %s", origin, doc, shortError(err))
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("%s: document %d: expected a Kubernetes object with apiVersion and kind: %s", origin, doc, shortError(err))
		}
		if u.IsList() {
			l, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", origin, doc, err)
			}
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			continue
		}
		out = append(out, u)
	}
}

// ReadFile reads the manifests of one file ("-" is standard input).
func ReadFile(path string) ([]*unstructured.Unstructured, error) {
	if path == "-" {
		return Read(os.Stdin, "<stdin>")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path)
}
