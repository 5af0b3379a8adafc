package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// requestTimeout bounds every REST call the tool makes.
const requestTimeout = 30 * time.Second

// apiError is a REST answer outside 2xx, in the API's error shape when the
// server sent one.
type apiError struct {
	Method, URL string
	Status      int
	Code        string
	Message     string
}

func (e *apiError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.URL, e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("%s %s: HTTP %d", e.Method, e.URL, e.Status)
}

// transient tells whether a failed call is worth trying again: the network
// failed, Redis was unavailable, or the server asked to slow down.
func transient(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status == http.StatusServiceUnavailable || ae.Status == http.StatusTooManyRequests || ae.Status >= 500
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF)
}

// apiClient speaks the REST half of the public API.
type apiClient struct {
	http *http.Client
}

func newAPIClient(maxConns int) *apiClient {
	tr := &http.Transport{
		Proxy:               nil, // only ever the URLs given
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        maxConns,
		MaxIdleConnsPerHost: maxConns,
		IdleConnTimeout:     30 * time.Second,
	}
	return &apiClient{http: &http.Client{Transport: tr, Timeout: requestTimeout}}
}

// close drops the idle connections of the client's pool.
func (c *apiClient) close() { c.http.CloseIdleConnections() }

// do sends one request to base+path, with token as Bearer credentials when
// set, and decodes a 2xx answer's body into out when out is not nil.
func (c *apiClient) do(ctx context.Context, method, base, path, token string, body, out any) error {
	u := strings.TrimRight(base, "/") + path
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: encode body: %w", method, u, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer func() { _ = res.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, u, err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		ae := &apiError{Method: method, URL: u, Status: res.StatusCode}
		var shape struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(raw, &shape) == nil {
			ae.Code, ae.Message = shape.Error.Code, shape.Error.Message
		}
		return ae
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, u, err)
		}
	}
	return nil
}

// retry runs call up to attempts times while it fails transiently, waiting
// a little longer each time.
func retry(ctx context.Context, attempts int, call func() error) error {
	var err error
	for i := range attempts {
		if err = call(); err == nil || !transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(i+1) * 500 * time.Millisecond):
		}
	}
	return err
}

// streamURL is the WebSocket address of the deployment at base.
func streamURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/api/v1/stream"
	return u.String(), nil
}
