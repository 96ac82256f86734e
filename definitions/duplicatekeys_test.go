package definitions_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gangmap/gangmap/definitions"
)

// A definition that names a key twice says two things; YAML and JSON decoders keep the last
// silently. Decoding refuses it, strict or not, naming the line and key of every repeat.
func TestBadInputDuplicateKeysRefused(t *testing.T) {
	// The worker's replicasPath twice (line 23): the second would win.
	doc := withWorker(t, "        scaleDefinition: {replicasPath: .spec.worker.replicas}\n",
		"        scaleDefinition:\n          replicasPath: .spec.worker.replicas\n          replicasPath: .spec.coordinator.replicas\n")
	for _, strict := range []bool{false, true} {
		_, err := badDecode(t, doc, strict)
		require.ErrorIs(t, err, definitions.ErrDuplicateKey, "strict=%v", strict)
		assert.EqualError(t, err, `bad.yaml#0: duplicate key (each key may appear once in a mapping; the last would silently win): line 23: key "replicasPath"`)
	}

	// Two repeats at the top level of a later document (lines count from the document's start).
	doc2 := badBase + "---\n" + badBase + "kind: Karta\nmetadata: {name: other}\n"
	_, err := badDecode(t, doc2, false)
	assert.EqualError(t, err, `bad.yaml#1: duplicate key (each key may appear once in a mapping; the last would silently win): line 22: key "kind"; line 23: key "metadata"`)

	// JSON documents too.
	_, err = badDecode(t, `{"apiVersion": "run.ai/v1alpha1", "kind": "Karta", "kind": "Karta", "metadata": {"name": "j"}}`, false)
	assert.EqualError(t, err, `bad.yaml#0: duplicate key (each key may appear once in a mapping; the last would silently win): line 1: key "kind"`)
}
