package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// An error body is captured within its size limit, and the upstream's
// message is extracted (SPEC §6).
func TestErrorBodyCapturedBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"message":"boom"}}`+strings.Repeat(" ", 1<<20))
	}))
	defer srv.Close()
	c := New(Target{Name: "u", URL: srv.URL, MaxErrorBody: 1024})
	defer c.CloseIdleConnections()
	_, err := c.Send(context.Background(), []byte(`{}`), nil, false)
	e, ok := errors.AsType[*Error](err)
	if !ok || e.Kind != KindStatus || e.Status != 500 || len(e.Body) != 1024 {
		t.Fatalf("err = %v (body %d bytes)", err, len(e.Body))
	}
	// The body was cut at 1024 bytes, so it is not valid JSON; the message
	// falls back to the text.
	if !strings.Contains(e.Message, "boom") {
		t.Errorf("message %q", e.Message)
	}
}

// An error body that never ends is abandoned after ErrorBodyTimeout.
func TestErrorBodyTimeLimit(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(503)
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c := New(Target{Name: "u", URL: srv.URL, ErrorBodyTimeout: 50 * time.Millisecond})
	defer c.CloseIdleConnections()
	done := make(chan error, 1)
	go func() {
		_, err := c.Send(context.Background(), []byte(`{}`), nil, false)
		done <- err
	}()
	select {
	case err := <-done:
		if e, ok := errors.AsType[*Error](err); !ok || e.Status != 503 || string(e.Body) != "partial" {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("capturing a stalled error body did not stop")
	}
}

// A request whose context is already cancelled is not sent (SPEC §6).
func TestCancelledContextSendsNothing(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	c := New(Target{Name: "u", URL: srv.URL})
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Send(ctx, []byte(`{}`), nil, true)
	if e, ok := errors.AsType[*Error](err); !ok || e.Kind != KindCanceled || hits.Load() != 0 {
		t.Fatalf("err = %v, hits %d", err, hits.Load())
	}
}

// A deadline passing while waiting for headers is a timeout.
func TestDeadlineIsTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // the server notices a closed connection only once the body is read
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := New(Target{Name: "u", URL: srv.URL})
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.Send(ctx, []byte(`{}`), nil, true)
	if e, ok := errors.AsType[*Error](err); !ok || e.Kind != KindTimeout {
		t.Fatalf("err = %v", err)
	}
}

// The key goes in the configured header: Bearer for Authorization, raw
// otherwise; configured headers are added.
func TestAuthHeader(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Clone() }))
	defer srv.Close()
	for _, tc := range []struct{ header, name, want string }{
		{"", "Authorization", "Bearer k1"},
		{"api-key", "Api-Key", "k1"},
	} {
		c := New(Target{Name: "u", URL: srv.URL + "/", APIKey: "k1", AuthHeader: tc.header, Headers: map[string]string{"X-Org": "o"}})
		resp, err := c.Send(context.Background(), []byte(`{}`), http.Header{"Authorization": {"Bearer client"}}, false)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		c.CloseIdleConnections()
		if got.Get(tc.name) != tc.want || got.Get("X-Org") != "o" {
			t.Errorf("%s: headers %v", tc.header, got)
		}
		if tc.header != "" && got.Get("Authorization") != "" {
			t.Errorf("client Authorization forwarded: %v", got)
		}
	}
}

// Response headers: hop-by-hop and framing headers are dropped, the
// upstream's request id is renamed.
func TestCopyResponseHeaders(t *testing.T) {
	dst := http.Header{}
	CopyResponseHeaders(dst, http.Header{
		"X-Ratelimit-Remaining-Requests": {"9"}, "Connection": {"X-Private"}, "X-Private": {"p"},
		"Content-Length": {"10"}, "X-Request-Id": {"up-1"}, "Set-Cookie": {"a=b"},
	})
	if dst.Get("X-Ratelimit-Remaining-Requests") != "9" || dst.Get("X-Upstream-Request-Id") != "up-1" ||
		dst.Get("X-Private") != "" || dst.Get("Content-Length") != "" || dst.Get("Set-Cookie") != "" || dst.Get("X-Request-Id") != "" {
		t.Errorf("got %v", dst)
	}
}
