package definitions_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProposedStatusWordsAreExplained: "pending" and "progressing" are upstream's proposed split
// of "initializing" (dsx-ai-factory/workload-map#347, open), not keys of run.ai/v1alpha1's
// statusMappings (upstream main's StatusMappings has the eight words of the common vocabulary).
// A definition using them is not silently half-read: strict decoding fails and lenient decoding
// warns, both naming the proposal and what to write instead; another unknown key gets no hint.
func TestProposedStatusWordsAreExplained(t *testing.T) {
	const statusPath = "spec.structureDefinition.rootComponent.statusDefinition.statusMappings."
	for _, word := range []string{"pending", "progressing"} {
		doc := strings.Replace(badBase, "          running: [{byPhase: Running}]\n",
			"          running: [{byPhase: Running}]\n          "+word+": [{byPhase: Pending}]\n", 1)
		_, err := badDecode(t, doc, true)
		require.Error(t, err, word)
		assert.Contains(t, err.Error(), statusPath+word+": unknown field (strict mode); pending and progressing are upstream's proposed split of initializing (dsx-ai-factory/workload-map#347, not merged)")
		assert.Contains(t, err.Error(), "map both under initializing")

		ld, err := badDecode(t, doc, false)
		require.NoError(t, err, word)
		require.Len(t, ld.Warnings, 1)
		assert.Contains(t, ld.Warnings[0].Error(), statusPath+word+`: Invalid value: "<unknown field>": unknown field: not part of the Workload Map format; pending and progressing are upstream's proposed split`)
	}
	doc := strings.Replace(badBase, "          running: [{byPhase: Running}]\n", "          running: [{byPhase: Running}]\n          stopped: [{byPhase: Stopped}]\n", 1)
	_, err := badDecode(t, doc, true)
	require.Error(t, err)
	assert.True(t, strings.HasSuffix(err.Error(), statusPath+"stopped: unknown field (strict mode)"), err.Error())
}
