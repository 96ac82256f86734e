package sources

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gangmap/gangmap/definitions"
	"github.com/gangmap/gangmap/definitions/expr"
)

// Files.Synced is false until the first read of the files is in the registry, then true.
func TestFilesSyncedAfterFirstRead(t *testing.T) {
	compiler, err := expr.NewCompiler(expr.Limits{})
	require.NoError(t, err)
	reg := definitions.NewRegistry(compiler)
	f := &Files{Registry: reg, Paths: []string{"testdata/customjob-karta.yaml"}, Interval: time.Hour}
	assert.False(t, f.Synced())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	require.Eventually(t, f.Synced, 10*time.Second, 10*time.Millisecond)
	assert.NotNil(t, reg.Lookup(schema.GroupVersionKind{Group: "e2e.example.com", Version: "v1", Kind: "CustomJob"}))
	cancel()
	require.NoError(t, <-done)
}
