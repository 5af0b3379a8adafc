package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"

	"chorus/protocol"
	"chorus/social"
)

// MaxBodyBytes is the largest request body accepted.
const MaxBodyBytes = 64 << 10

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	// The status is sent: a failed write means the client went away.
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads one JSON object from the request body into v. The body must
// be UTF-8 and escape no lone surrogate: the JSON decoder would quietly turn
// either into U+FFFD.
func decode(r *http.Request, v any) error {
	raw, err := io.ReadAll(r.Body)
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return errTooLarge
	}
	if err != nil {
		return newError(http.StatusBadRequest, "invalid_json", "The request body could not be read.")
	}
	switch err := protocol.CheckJSONText(raw); {
	case errors.Is(err, protocol.ErrNotUTF8):
		return newError(http.StatusBadRequest, "invalid_json", "The request body must be UTF-8.")
	case err != nil:
		return newError(http.StatusBadRequest, "invalid_json", "The request body is refused: "+err.Error()+".")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	err = dec.Decode(v)
	if err == nil && len(bytes.Trim(raw[dec.InputOffset():], " \t\r\n")) > 0 {
		err = errors.New("more than one JSON value")
	}
	if err == nil && protocol.IsObject(raw) {
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.As(err, &typeErr) && typeErr.Field == "":
		return newError(http.StatusBadRequest, "invalid_json", "The request body must be a JSON object.")
	case errors.As(err, &typeErr):
		return newError(http.StatusBadRequest, "invalid_json",
			fmt.Sprintf("The field %q must be %s.", typeErr.Field, jsonKind(typeErr.Type)))
	default:
		return newError(http.StatusBadRequest, "invalid_json", "The request body is not valid JSON: "+err.Error()+".")
	}
}

// jsonKind names what JSON value a field of Go type t takes.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// limitBody refuses bodies over MaxBodyBytes: at once when the length is
// declared, else when reading passes it.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBodyBytes {
			errTooLarge.write(w)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// Limits of list queries.
const (
	defaultLimit = 30
	maxLimit     = 100
	maxOffset    = 1 << 30
)

func intParam(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, newError(http.StatusBadRequest, "invalid_"+name,
			fmt.Sprintf("The %s must be a whole number from %d to %d.", name, lo, hi))
	}
	return n, nil
}

func pageParams(r *http.Request) (social.Page, error) {
	limit, err := intParam(r, "limit", defaultLimit, 1, maxLimit)
	if err != nil {
		return social.Page{}, err
	}
	offset, err := intParam(r, "offset", 0, 0, maxOffset)
	if err != nil {
		return social.Page{}, err
	}
	return social.Page{Limit: int(limit), Offset: int(offset)}, nil
}

func cursorParams(r *http.Request) (social.Cursor, error) {
	limit, err := intParam(r, "limit", defaultLimit, 1, maxLimit)
	if err != nil {
		return social.Cursor{}, err
	}
	q := r.URL.Query()
	if q.Has("before") && q.Has("after") {
		return social.Cursor{}, errBothCursors
	}
	before, err := intParam(r, "before", 0, 1, 1<<53)
	if err != nil {
		return social.Cursor{}, err
	}
	after, err := intParam(r, "after", 0, 0, 1<<53)
	if err != nil {
		return social.Cursor{}, err
	}
	return social.Cursor{Limit: int(limit), Before: before, After: after, Forward: q.Has("after")}, nil
}
