package podview

import (
	"unicode/utf8"
)

// scanner is a validating JSON scanner over one document, for decodeFast: it reads the members
// decodeFast wants and skips every other value, checking it is well-formed JSON as
// encoding/json's scanner does (strings, escapes, numbers, literals, nesting). Every method
// returns false for input it does not handle; the caller then decodes with sigs.k8s.io/json,
// which gives the error or handles the rare shape. Decoded strings are substrings of str (one
// copy of the whole document), so a decoded pod keeps its document's bytes alive.
type scanner struct {
	raw []byte
	str string
	i   int
	// keyAt is where the member name object is reading starts (for ScanPod's marks).
	keyAt int
}

// maxSkipDepth bounds the nesting the scanner skips; deeper documents are left to encoding/json
// (whose own bound is 10,000).
const maxSkipDepth = 1000

// ws skips JSON whitespace.
func (s *scanner) ws() {
	for s.i < len(s.raw) {
		switch s.raw[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// is consumes c (after whitespace) and reports whether it was there.
func (s *scanner) is(c byte) bool {
	s.ws()
	if s.i < len(s.raw) && s.raw[s.i] == c {
		s.i++
		return true
	}
	return false
}

// null consumes a null literal (after whitespace) and reports whether it was there.
func (s *scanner) null() bool {
	s.ws()
	if len(s.raw)-s.i >= 4 && string(s.raw[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// span scans the string token at s.i (after whitespace) and returns its content's bounds,
// whether it holds an escape, and whether its content is valid UTF-8. ok is false for anything
// but a well-formed JSON string (a control character, a bad escape, no closing quote).
func (s *scanner) span() (start, end int, escaped, validUTF8, ok bool) {
	s.ws()
	if s.i >= len(s.raw) || s.raw[s.i] != '"' {
		return 0, 0, false, false, false
	}
	start = s.i + 1
	ascii := true
	for j := start; j < len(s.raw); j++ {
		c := s.raw[j]
		if !stringStop[c] {
			continue
		}
		switch {
		case c == '"':
			s.i = j + 1
			return start, j, escaped, ascii || utf8.Valid(s.raw[start:j]), true
		case c == '\\':
			escaped = true
			n, good := escapeLen(s.raw[j:])
			if !good {
				return 0, 0, false, false, false
			}
			j += n - 1
		case c < 0x20:
			return 0, 0, false, false, false
		default:
			ascii = false
		}
	}
	return 0, 0, false, false, false
}

// stringStop marks the bytes span looks at inside a string: the closing quote, a backslash,
// control characters (invalid) and non-ASCII bytes (UTF-8 to check).
var stringStop = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf
	}
	return t
}()

// escapeLen is the length of the JSON escape at the start of b (which starts with a backslash).
func escapeLen(b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, false
	}
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, true
	case 'u':
		if len(b) < 6 {
			return 0, false
		}
		for _, h := range b[2:6] {
			if !isHex(h) {
				return 0, false
			}
		}
		return 6, true
	}
	return 0, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// text reads a string value without escapes and with valid UTF-8 (what encoding/json would decode
// unchanged); null reads as "" (encoding/json leaves a string as it was, and decodeFast's are new).
func (s *scanner) text() (string, bool) {
	if s.null() {
		return "", true
	}
	a, b, esc, valid, ok := s.span()
	if !ok || esc || !valid {
		return "", false
	}
	return s.str[a:b], true
}

// key reads a member name without escapes (an escaped name could spell a member decodeFast reads)
// and with valid UTF-8 (encoding/json replaces invalid bytes with U+FFFD, and a key may become a
// map key: a label, an annotation, a resource name).
func (s *scanner) key() (string, bool) {
	a, b, esc, valid, ok := s.span()
	if !ok || esc || !valid {
		return "", false
	}
	return s.str[a:b], true
}

// object reads an object, calling member for each member with the scanner at its value; member
// must consume the value. ok is false for anything but an object.
func (s *scanner) object(member func(key string) bool) bool {
	if !s.is('{') {
		return false
	}
	if s.is('}') {
		return true
	}
	for {
		s.keyAt = s.i
		k, ok := s.key()
		if !ok || !s.is(':') || !member(k) {
			return false
		}
		if s.is(',') {
			continue
		}
		return s.is('}')
	}
}

// array reads an array, calling elem for each element with the scanner at it; elem must consume
// it. ok is false for anything but an array.
func (s *scanner) array(elem func() bool) bool {
	if !s.is('[') {
		return false
	}
	if s.is(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.is(',') {
			continue
		}
		return s.is(']')
	}
}

// token skips one value and returns its bytes.
func (s *scanner) token() ([]byte, bool) {
	s.ws()
	start := s.i
	if !s.skip(0) {
		return nil, false
	}
	return s.raw[start:s.i], true
}

// skip skips one well-formed value of any kind.
func (s *scanner) skip(depth int) bool {
	s.ws()
	if s.i >= len(s.raw) || depth > maxSkipDepth {
		return false
	}
	switch c := s.raw[s.i]; {
	case c == '"':
		_, _, _, _, ok := s.span()
		return ok
	case c == '{':
		s.i++
		if s.is('}') {
			return true
		}
		for {
			if _, _, _, _, ok := s.span(); !ok || !s.is(':') || !s.skip(depth+1) {
				return false
			}
			if s.is(',') {
				continue
			}
			return s.is('}')
		}
	case c == '[':
		return s.array(func() bool { return s.skip(depth + 1) })
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if len(s.raw)-s.i >= len(lit) && string(s.raw[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// number skips a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	if s.i < len(s.raw) && s.raw[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.raw) && s.raw[s.i] == '0':
		s.i++
	case s.digits() == 0:
		return false
	}
	if s.i < len(s.raw) && s.raw[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return false
		}
	}
	if s.i < len(s.raw) && (s.raw[s.i] == 'e' || s.raw[s.i] == 'E') {
		s.i++
		if s.i < len(s.raw) && (s.raw[s.i] == '+' || s.raw[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.raw) && s.raw[s.i] >= '0' && s.raw[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// once sets bit in seen and reports whether it was clear: a member read twice is left to
// encoding/json (which keeps the last, or merges objects).
func once(seen *uint16, bit uint16) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}
