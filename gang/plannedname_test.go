package gang

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPlannedNameMatches: a planned alpha name with a key the plan cannot read,
// pg-<UID>-{.metadata.labels["e2e.example.com/job-name"]} (alphaPlannedName), is the name KAI
// gives each pod (pg-<UID>-<the pod's value>, calcPodGroupName): it matches any non-empty value,
// values with "-" included, and nothing else; a name without a placeholder matches itself only.
func TestPlannedNameMatches(t *testing.T) {
	planned := `pg-uid-1-{.metadata.labels["e2e.example.com/job-name"]}`
	assert.True(t, HasKeyPlaceholder(planned))
	assert.True(t, PlannedNameMatches(planned, "pg-uid-1-train"))
	assert.True(t, PlannedNameMatches(planned, "pg-uid-1-train-2"))
	assert.False(t, PlannedNameMatches(planned, "pg-uid-1-"), "KAI refuses an empty value")
	assert.False(t, PlannedNameMatches(planned, "pg-uid-2-train"), "another workload's")
	assert.False(t, PlannedNameMatches(planned, "pg-uid-1"))

	two := KAIAlphaName("uid-1", "{.metadata.labels.a}", "x", `{{"k": .metadata.labels["}"]} | .k}`)
	assert.True(t, HasKeyPlaceholder(two))
	assert.True(t, PlannedNameMatches(two, "pg-uid-1-a1-x-b2"), "nested braces and a quoted brace in the expression")
	assert.False(t, PlannedNameMatches(two, "pg-uid-1-a1-y-b2"), "the literal value must match")

	assert.False(t, HasKeyPlaceholder("pg-uid-1-train"))
	assert.True(t, PlannedNameMatches("pg-uid-1-train", "pg-uid-1-train"))
	assert.False(t, PlannedNameMatches("pg-uid-1-train", "pg-uid-1-train-2"))
	assert.False(t, HasKeyPlaceholder("pg-uid-{unclosed"), "an unclosed brace is text")
}
