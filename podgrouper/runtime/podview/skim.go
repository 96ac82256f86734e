package podview

import (
	"bytes"
	"unicode/utf8"
)

var (
	schedulerNameKey = []byte(`"schedulerName":`)
	unicodeEscape    = []byte(`\u`)
)

// SchedulerName finds spec.schedulerName in a pod's JSON without decoding it, for a webhook that
// must pass over the pods of other schedulers cheaply. It reports ok only when the object holds
// exactly one "schedulerName" member, and no \u escape anywhere (so no member is that name
// spelled with escapes), and the member's value is a string without escapes
// and valid UTF-8. A quote inside a
// string value is always escaped, so the bytes cannot come from a label, an annotation or any
// other string: the member is spec.schedulerName, or else the pod has none (and DecodePod reads
// ""), since keys are matched case-sensitively as by the API server. Anything else (no such
// member, two, an escape, whitespace it does not expect) gives ok false, and the caller decodes
// the pod instead.
func SchedulerName(raw []byte) (name string, ok bool) {
	if bytes.Contains(raw, unicodeEscape) {
		return "", false
	}
	i := bytes.Index(raw, schedulerNameKey)
	if i < 0 || bytes.Index(raw[i+len(schedulerNameKey):], schedulerNameKey) >= 0 {
		return "", false
	}
	v := raw[i+len(schedulerNameKey):]
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	end := bytes.IndexByte(v[1:], '"')
	if end < 0 {
		return "", false
	}
	s := v[1 : 1+end]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}
