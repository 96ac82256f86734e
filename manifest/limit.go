package manifest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"
)

// MaxInputBytes bounds one input (a file or standard input) of the CLI: 32 MiB, ten times the
// API server's largest request body (3 MiB, k8s.io/apiserver's DefaultMaxRequestBodyBytes), so
// that a manifest of many objects fits while a mistaken or hostile input (/dev/zero, a stream
// that never ends, a generated file of gigabytes) fails at once instead of taking the machine's
// memory.
const MaxInputBytes = 32 << 20

// ErrTooLarge says an input holds more than MaxInputBytes.
var ErrTooLarge = fmt.Errorf("larger than %d MiB (the API server takes at most 3 MiB per object): not a manifest this tool reads", MaxInputBytes>>20)

// Limit returns a reader of r that fails with ErrTooLarge once more than MaxInputBytes were
// read (an input of exactly MaxInputBytes is read whole).
func Limit(r io.Reader) io.Reader { return &limitedReader{r: r, left: MaxInputBytes} }

type limitedReader struct {
	r    io.Reader
	left int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	if l.left -= int64(n); l.left < 0 {
		return 0, ErrTooLarge
	}
	return n, err
}

// ReadBytes reads one input whole, at most MaxInputBytes ("-" is standard input). Errors name
// the path.
func ReadBytes(path string) ([]byte, error) {
	r, origin := io.Reader(os.Stdin), "<stdin>"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err // *fs.PathError: names the operation and the path
		}
		defer f.Close()
		r, origin = f, path
	}
	b, err := io.ReadAll(Limit(r))
	if errors.Is(err, ErrTooLarge) {
		return nil, fmt.Errorf("%s: %w", origin, err)
	}
	return b, err
}

// maxErrorText bounds the text of a decoding error that quotes the input (apimachinery's
// "Object 'Kind' is missing in '<the whole document>'"), in bytes.
const maxErrorText = 300

// shortError is err's text cut to maxErrorText bytes (at a rune boundary), marked when cut.
func shortError(err error) string {
	s := err.Error()
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes more)", s[:cut], len(s)-cut)
}
