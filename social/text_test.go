package social

import (
	"errors"
	"testing"
)

func TestNameRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"Alice Liddell", true},
		{"Zoë Ōsaka 山田", true},
		{"  padded  ", true},
		{"right\u200fmark", true}, // a mark, not an embedding or override
		{"nul\x00", false},
		{"esc\x1b[31mred", false},
		{"tab\there", false},
		{"del\x7f", false},
		{"c1\u0080start", false},
		{"csi\u009bend", false},
		{"nel\u0085mid", false},
		{"lre\u202a", false},
		{"rle\u202b", false},
		{"pdf\u202c", false},
		{"lro\u202d", false},
		{"gnp.exe\u202e", false},
		{"lri\u2066", false},
		{"rli\u2067", false},
		{"fsi\u2068", false},
		{"pdi\u2069", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := validateSignUp("someone", tc.name, "kettle-drum-41")
			var inv *InvalidError
			switch {
			case tc.ok && err != nil:
				t.Fatalf("name %q: %v, want accepted", tc.name, err)
			case !tc.ok && (!errors.As(err, &inv) || inv.Field != "name"):
				t.Fatalf("name %q: %v, want an invalid name", tc.name, err)
			}
		})
	}
}

func TestMessageRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		message string
		ok      bool
	}{
		{"hello", true},
		{"tab\tseparated", true},
		{"two\nlines", true},
		{"windows\r\nlines", true},
		{"arabic \u202eoverride", true}, // not a control character
		{"nul\x00byte", false},
		{"esc\x1b[2Jclear", false},
		{"bell\x07", false},
		{"vertical\vtab", false},
		{"del\x7fchar", false},
		{"c1\u0080start", false},
		{"csi\u009bend", false},
		{"nel\u0085mid", false},
	} {
		t.Run(tc.message, func(t *testing.T) {
			_, err := ValidateMessage(tc.message)
			var inv *InvalidError
			switch {
			case tc.ok && err != nil:
				t.Fatalf("message %q: %v, want accepted", tc.message, err)
			case !tc.ok && (!errors.As(err, &inv) || inv.Field != "message"):
				t.Fatalf("message %q: %v, want an invalid message", tc.message, err)
			}
		})
	}
}
