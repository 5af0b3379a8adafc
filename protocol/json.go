package protocol

import (
	"bytes"
	"errors"
	"unicode/utf8"
)

// Errors of CheckJSONText.
var (
	ErrNotUTF8 = errors.New("not UTF-8")
	// ErrLoneSurrogate: a string escapes half of a UTF-16 surrogate pair
	// alone, as "\ud800", which names no character.
	ErrLoneSurrogate = errors.New(`a string holds a lone surrogate escape (\ud800 to \udfff without its pair)`)
)

// CheckJSONText refuses JSON text that Go's encoding/json would quietly
// change rather than refuse: bytes that are not UTF-8, and escapes of lone
// UTF-16 surrogates, which it turns into U+FFFD. The REST API's bodies and
// the stream's frames are checked with it before they are decoded, so that
// what a client sent is stored as sent or refused.
func CheckJSONText(data []byte) error {
	if !utf8.Valid(data) {
		return ErrNotUTF8
	}
	// Outside strings a backslash is no valid JSON at all, which the
	// decoder refuses: every escape found here is in a string.
	for i := 0; ; {
		j := bytes.IndexByte(data[i:], '\\')
		if j < 0 {
			return nil
		}
		i += j
		r, ok := escapedUnit(data[i:])
		switch {
		case !ok: // any other escape, two bytes, or a bad one the decoder refuses
			i += 2
		case r >= 0xdc00 && r <= 0xdfff:
			return ErrLoneSurrogate
		case r >= 0xd800 && r <= 0xdbff:
			low, ok := escapedUnit(data[i+6:])
			if !ok || low < 0xdc00 || low > 0xdfff {
				return ErrLoneSurrogate
			}
			i += 12
		default:
			i += 6
		}
		if i >= len(data) {
			return nil
		}
	}
}

// escapedUnit reads the UTF-16 code unit of a \uXXXX escape at the start of
// b; ok is false when b does not start with one.
func escapedUnit(b []byte) (r rune, ok bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// IsObject reports whether data, JSON text that decoded without error,
// is an object: encoding/json decodes null into a struct as if it were {},
// leaving it as it was.
func IsObject(data []byte) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && data[0] == '{'
}
