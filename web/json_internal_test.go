package web

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

// decode's refusals say what was wrong in the API's words: a body that is
// no object, a field of the wrong kind, anything after the object; never
// a Go type.
func TestDecodeRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ body, message string }{
		{`[1]`, "The request body must be a JSON object."},
		{`"x"`, "The request body must be a JSON object."},
		{` null `, "The request body must be a JSON object."},
		{`{"name":7}`, `The field "name" must be a string.`},
		{`{"count":"7"}`, `The field "count" must be a whole number.`},
		{`{"on":1}`, `The field "on" must be true or false.`},
		{`{"ids":{}}`, `The field "ids" must be an array.`},
		{`{"name":"x"}}`, "The request body is not valid JSON: more than one JSON value."},
		{`{"name":"x"} ]`, "The request body is not valid JSON: more than one JSON value."},
	} {
		var v struct {
			Name  *string `json:"name"`
			Count int64   `json:"count"`
			On    bool    `json:"on"`
			IDs   []int64 `json:"ids"`
		}
		err := decode(httptest.NewRequest("POST", "/", strings.NewReader(c.body)), &v)
		var apiErr *apiError
		if !errors.As(err, &apiErr) || apiErr.Body.Code != "invalid_json" || apiErr.Body.Message != c.message {
			t.Errorf("%s: %v, want invalid_json %q", c.body, err, c.message)
		}
	}
	var v struct{ Name string }
	if err := decode(httptest.NewRequest("POST", "/", strings.NewReader(" {\"name\":\"x\"}\r\n\t ")), &v); err != nil || v.Name != "x" {
		t.Errorf("an object with white space around it: %v, %+v", err, v)
	}
}
