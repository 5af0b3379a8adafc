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
		{"فارسی\u200cنیم\u200cفاصله", true}, // the zero-width non-joiner Persian needs
		{"family \U0001F468\u200d\U0001F469\u200d\U0001F467", true},
		{"flag \U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F", true},
		{"right\u200fmark", false},
		{"left\u200emark", false},
		{"arabic\u061cmark", false},
		{"zero\u200bwidth", false},
		{"word\u2060joiner", false},
		{"\ufeffbom", false},
		{"soft\u00adhyphen", false},
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
		{"right\u200fmark", true}, // marks order mixed text, as it needs
		{"arabic\u061cmark", true},
		{"thai\u200bbreak", true}, // a line break opportunity
		{"family \U0001F468\u200d\U0001F469", true},
		{"lre\u202a", false},
		{"rle\u202b", false},
		{"pdf\u202c", false},
		{"lro\u202d", false},
		{"gnp.exe\u202e", false},
		{"lri\u2066", false},
		{"rli\u2067", false},
		{"fsi\u2068", false},
		{"pdi\u2069", false},
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
