package protocol

import (
	"errors"
	"testing"
)

func TestCheckJSONText(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       error
	}{
		{"plain", `{"message":"hello"}`, nil},
		{"a pair", `{"message":"\ud83d\ude00"}`, nil},
		{"a pair in capitals", `{"message":"\uD83D\uDE00"}`, nil},
		{"other escapes", `{"message":"\u00e9\n\"\\\u2028"}`, nil},
		{"an escaped backslash before u", `{"message":"\\ud800"}`, nil},
		{"UTF-8 itself", `{"message":"😀 é"}`, nil},
		{"a lone high", `{"message":"\ud800"}`, ErrLoneSurrogate},
		{"a lone high at the end", `"\ud800"`, ErrLoneSurrogate},
		{"a lone low", `{"message":"\udc00"}`, ErrLoneSurrogate},
		{"a high then a non-surrogate", `{"message":"\ud800\u0041"}`, ErrLoneSurrogate},
		{"a high then text", `{"message":"\ud800abcdef"}`, ErrLoneSurrogate},
		{"two highs", `{"message":"\ud800\ud800"}`, ErrLoneSurrogate},
		{"a low then a high", `{"message":"\udc00\ud800"}`, ErrLoneSurrogate},
		{"a pair then a lone low", `{"m":"\ud83d\ude00\ude00"}`, ErrLoneSurrogate},
		{"in a key", `{"\udfff":1}`, ErrLoneSurrogate},
		{"bad bytes", "{\"message\":\"\xff\"}", ErrNotUTF8},
		{"a trailing backslash", `"\`, nil}, // not JSON: the decoder refuses it
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CheckJSONText([]byte(tc.text)); !errors.Is(got, tc.want) {
				t.Fatalf("CheckJSONText(%s) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}
