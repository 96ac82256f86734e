package manifest

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// zeros is an endless input (as /dev/zero is).
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// An input of exactly MaxInputBytes is read whole; one byte more fails with ErrTooLarge.
func TestLimitBoundsAnInput(t *testing.T) {
	n, err := io.Copy(io.Discard, Limit(io.LimitReader(zeros{}, MaxInputBytes)))
	require.NoError(t, err)
	assert.EqualValues(t, MaxInputBytes, n)
	_, err = io.Copy(io.Discard, Limit(io.LimitReader(zeros{}, MaxInputBytes+1)))
	assert.ErrorIs(t, err, ErrTooLarge)
}

// An endless input (plan -f /dev/zero, a stream) fails, naming the input, instead of taking
// the memory of the machine; so does ReadBytes of an endless standard input or a large file.
func TestReadRefusesEndlessInput(t *testing.T) {
	_, err := Read(zeros{}, "/dev/zero")
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Equal(t, "/dev/zero: document 0: larger than 32 MiB (the API server takes at most 3 MiB per object): not a manifest this tool reads", err.Error())

	big := filepath.Join(t.TempDir(), "big.yaml")
	f, err := os.Create(big)
	require.NoError(t, err)
	_, err = io.Copy(f, io.LimitReader(zeros{}, MaxInputBytes+10))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = ReadBytes(big)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.True(t, strings.HasPrefix(err.Error(), big+": larger than 32 MiB"), err.Error())
}

// A document that is no object is refused with a quote of it cut to a few hundred bytes: the
// error of a 10 MB document was 10 MB long.
func TestReadErrorQuotesLittleOfTheInput(t *testing.T) {
	_, err := Read(strings.NewReader("a: "+strings.Repeat("x", 1_000_000)), "big.yaml")
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 500)
	assert.True(t, strings.HasPrefix(err.Error(), `big.yaml: document 0: expected a Kubernetes object with apiVersion and kind: Object 'Kind' is missing in '{"a":"xxx`), err.Error())
	assert.True(t, strings.HasSuffix(err.Error(), "bytes more)"), err.Error())
	assert.False(t, errors.Is(err, ErrTooLarge))
}
