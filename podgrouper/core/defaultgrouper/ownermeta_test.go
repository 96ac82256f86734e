package defaultgrouper

import (
	"math/rand/v2"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// TestTopOwnerMetadataIsYAMLs: the top-owner-metadata text is exactly what sigs.k8s.io/yaml
// writes for KAI's {name,uid,group,version,kind}, for the owners of real workloads (written
// directly, no cache) and for 10,000 random values built from the characters and words that
// change how YAML writes a scalar (digits first, numbers, dates, booleans and null in any case,
// hexadecimal, exponents, dots, dashes, underscores, colons, spaces, quotes, empty values);
// whatever the direct path accepts, the encoder writes the same.
func TestTopOwnerMetadataIsYAMLs(t *testing.T) {
	g := &Grouper{}
	encoded := func(m topOwnerMetadata) string {
		b, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	real := []topOwnerMetadata{
		{Name: "w00042", UID: "1e0a9c2b-0f1d-4b7e-9a51-3d2b7c9e0f11", Group: "e2e.example.com", Version: "v1", Kind: "CustomJob"},
		{Name: "train-llm", UID: "917fa398-2e36-4c91-b811-e08ea3dbddf0", Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"},
		{Name: "sglang-large", UID: "12345678-1234-1234-1234-123456789012", Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"},
		{Name: "web", UID: "u-1", Group: "", Version: "v1", Kind: "Pod"},
	}
	rng := rand.New(rand.NewPCG(19, 6))
	for range 200 {
		uid := randomUID(rng)
		real = append(real, topOwnerMetadata{Name: "job-" + uid[:8], UID: uid, Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"})
	}
	for _, m := range real {
		text, ok := m.plainText()
		if !ok {
			t.Fatalf("%+v: not written directly", m)
		}
		if want := encoded(m); text != want {
			t.Fatalf("%+v: got %q, YAML writes %q", m, text, want)
		}
		if got := g.topOwnerMetadata(ownerOf(m)); got != text {
			t.Fatalf("%+v: topOwnerMetadata %q, want %q", m, got, text)
		}
	}
	if g.ownerYAML != nil {
		t.Errorf("the owners of real workloads were cached (%d)", g.ownerYAML.Len())
	}

	pieces := []string{"a", "e", "E", "x", "b", "o", "y", "n", "Y", "N", "0", "1", "9", "0x", "0b", "0o", ".", "-", "_", ":", " ", "'", "\"",
		"#", "yes", "No", "TRUE", "off", "On", "null", "Null", "~", ".inf", "nan", "1e3", "2024-01-02", "12:30", "+", "v1", "abc"}
	value := func() string {
		var b strings.Builder
		if rng.IntN(3) > 0 { // mostly a letter first: the values the direct path may take
			b.WriteString(pieces[rng.IntN(9)])
		}
		for range rng.IntN(4) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	direct := 0
	for range 10000 {
		m := topOwnerMetadata{Name: value(), UID: value(), Group: value(), Version: value(), Kind: value()}
		if rng.IntN(4) == 0 {
			m.UID = randomUID(rng)
		}
		want := encoded(m)
		if text, ok := m.plainText(); ok {
			direct++
			if text != want {
				t.Fatalf("%+v: got %q, YAML writes %q", m, text, want)
			}
		}
		if got := g.topOwnerMetadata(ownerOf(m)); got != want {
			t.Fatalf("%+v: topOwnerMetadata %q, YAML writes %q", m, got, want)
		}
	}
	t.Logf("%d of 10,000 random owners written directly", direct)
	if direct < 600 {
		t.Errorf("only %d random values written directly: the test checks too little", direct)
	}
}

func ownerOf(m topOwnerMetadata) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	apiVersion := m.Version
	if m.Group != "" {
		apiVersion = m.Group + "/" + m.Version
	}
	u.SetAPIVersion(apiVersion)
	u.SetKind(m.Kind)
	u.SetName(m.Name)
	u.SetUID(types.UID(m.UID))
	return u
}

// randomUID is a random UID as the API server writes them (8-4-4-4-12 lowercase hexadecimal).
func randomUID(rng *rand.Rand) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 36)
	for i := range b {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			b[i] = '-'
			continue
		}
		b[i] = hex[rng.IntN(16)]
	}
	return string(b)
}
