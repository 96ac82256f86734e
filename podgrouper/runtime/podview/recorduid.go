package podview

import "k8s.io/apimachinery/pkg/types"

// packUID returns the 16 bytes of uid when it is a canonical UUID as the API server makes them
// (36 characters, lowercase hexadecimal, dashes at 8, 13, 18 and 23), so that unpackUID gives
// back the same text; false for any other text.
func packUID(uid types.UID) ([16]byte, bool) {
	var out [16]byte
	s := string(uid)
	if len(s) != 36 {
		return out, false
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return out, false
			}
			i++
			continue
		}
		hi, ok1 := hexDigit(s[i])
		lo, ok2 := hexDigit(s[i+1])
		if !ok1 || !ok2 {
			return out, false
		}
		out[j] = hi<<4 | lo
		j++
		i += 2
	}
	return out, true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// unpackUID is the canonical text of a packed UID.
func unpackUID(b [16]byte) types.UID {
	const digits = "0123456789abcdef"
	var out [36]byte
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			out[i] = '-'
			i++
			continue
		}
		out[i], out[i+1] = digits[b[j]>>4], digits[b[j]&0xf]
		j++
		i += 2
	}
	return types.UID(out[:])
}
