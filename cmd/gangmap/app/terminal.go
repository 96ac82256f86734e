package app

import (
	"fmt"
	"io"
)

// controlEscaper writes what the commands print with every terminal control character spelt out
// as text, so that a workload's author cannot drive the terminal of whoever runs gangmap on it:
// role and instance names, status messages, labels and error values come from live objects and
// manifests, and an ESC sequence among them could recolour, rewrite or hide lines, or set the
// window title (the class of kubectl's CVE-2021-25743). C0 controls but newline and tab, DEL
// (0x7f) and the C1 controls U+0080–U+009F (UTF-8 0xC2 0x80–0x9F) become Go escapes: "\x1b",
// "\r", "\u009b". gangmap itself prints no control sequence, and its JSON and YAML output already
// escapes these characters, so only hostile text changes. Other bytes, UTF-8 included, pass as
// they are. Call flush when done writing.
type controlEscaper struct {
	w io.Writer
	// pendingC2 says the previous Write ended with 0xC2, the first byte of a possible C1 control.
	pendingC2 bool
}

// Write implements io.Writer. It reports len(p) when every byte was written (escapes count as
// the byte they replace).
func (e *controlEscaper) Write(p []byte) (int, error) {
	out := make([]byte, 0, len(p)+8)
	i := 0
	if e.pendingC2 {
		e.pendingC2 = false
		if len(p) > 0 && p[0] >= 0x80 && p[0] <= 0x9f {
			out = fmt.Appendf(out, `\u%04x`, p[0])
			i = 1
		} else {
			out = append(out, 0xc2)
		}
	}
	for ; i < len(p); i++ {
		b := p[i]
		switch {
		case b == '\n' || b == '\t':
			out = append(out, b)
		case b == '\r':
			out = append(out, `\r`...)
		case b < 0x20 || b == 0x7f:
			out = fmt.Appendf(out, `\x%02x`, b)
		case b == 0xc2 && i+1 == len(p):
			e.pendingC2 = true
		case b == 0xc2 && p[i+1] >= 0x80 && p[i+1] <= 0x9f:
			out = fmt.Appendf(out, `\u%04x`, p[i+1])
			i++
		default:
			out = append(out, b)
		}
	}
	if _, err := e.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flush writes a 0xC2 held back at the end of the last Write (no C1 control followed it).
func (e *controlEscaper) flush() {
	if e.pendingC2 {
		e.pendingC2 = false
		_, _ = e.w.Write([]byte{0xc2})
	}
}
