package definitions

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gangmap/gangmap/definitions/expr"
)

func TestAdvisoriesParse(t *testing.T) {
	require.NoError(t, advisoriesErr)
	require.NotEmpty(t, advisories)
	compiler, err := expr.NewCompiler(expr.Limits{})
	require.NoError(t, err)
	for _, a := range advisories {
		_, err := compiler.Compile(expr.JQ, a.When, expr.Object, expr.Read)
		assert.NoError(t, err, a.When)
		assert.Contains(t, []string{"replicasPath", "minReplicasPath"}, a.Field)
		assert.NotEmpty(t, a.Note)
	}
}
