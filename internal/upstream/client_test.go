package upstream

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolgate/toolgate/internal/testing/wait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// An error body is captured within its size limit, and the upstream's
// message is extracted (docs/spec.md §6).
func TestErrorBodyCapturedBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"message":"boom"}}`+strings.Repeat(" ", 1<<20))
	}))
	defer srv.Close()
	c := newClient(Target{Name: "u", URL: srv.URL, MaxErrorBody: 1024})
	defer c.CloseIdleConnections()
	_, _, err := c.Send(context.Background(), Call{Body: []byte(`{}`), Header: nil, Stream: false})
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
	c := newClient(Target{Name: "u", URL: srv.URL, ErrorBodyTimeout: 50 * time.Millisecond})
	defer c.CloseIdleConnections()
	done := make(chan error, 1)
	go func() {
		_, _, err := c.Send(context.Background(), Call{Body: []byte(`{}`), Header: nil, Stream: false})
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

// A request whose context is already cancelled is not sent (docs/spec.md §6).
func TestCancelledContextSendsNothing(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	c := newClient(Target{Name: "u", URL: srv.URL})
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := c.Send(ctx, Call{Body: []byte(`{}`), Stream: true})
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
	c := newClient(Target{Name: "u", URL: srv.URL})
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, _, err := c.Send(ctx, Call{Body: []byte(`{}`), Stream: true})
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
		c := newClient(Target{Name: "u", URL: srv.URL + "/", APIKey: "k1", AuthHeader: tc.header, Headers: map[string]string{"X-Org": "o"}})
		resp, _, err := c.Send(context.Background(), Call{Body: []byte(`{}`), Header: http.Header{"Authorization": {"Bearer client"}}, Stream: false})
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

// A URL naming the model takes each call's, path-escaped, and every
// request carries the upstream's own query: beside a path's own, and in
// place of a forwarded request's parameter of the same name. A model that
// is a dot segment, or none, is refused before anything is sent.
func TestModelAndQueryInURL(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = append(got, r.URL.RequestURI()) }))
	defer srv.Close()
	c := newClient(Target{Name: "u", URL: srv.URL + "/openai/deployments/{model}", Query: "api-version=2024-10-21"})
	defer c.CloseIdleConnections()
	for _, call := range []Call{{Body: []byte(`{}`), Model: "gpt-4o"}, {Body: []byte(`{}`), Model: "a/b c"}, {Body: []byte(`{}`), Model: "m", Path: "/x:stream?alt=sse"}} {
		resp, _, err := c.Send(context.Background(), call)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, _, err := c.Forward(context.Background(), Forwarded{Method: "POST", Path: "/embeddings", Query: "api-version=old&user=x", Body: []byte(`{}`), Header: http.Header{}, Model: "emb"})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := []string{"/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21", "/openai/deployments/a%2Fb%20c/chat/completions?api-version=2024-10-21",
		"/openai/deployments/m/x:stream?alt=sse&api-version=2024-10-21", "/openai/deployments/emb/embeddings?user=x&api-version=2024-10-21"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
	for _, model := range []string{"", "..", "."} {
		var me *ModelError
		if _, _, err := c.Send(context.Background(), Call{Body: []byte(`{}`), Model: model}); !errors.As(err, &me) {
			t.Errorf("model %q: %v", model, err)
		}
	}
	var pe *ModelError
	if _, _, err := c.Forward(context.Background(), Forwarded{Method: "POST", Path: "/embeddings", Header: http.Header{}, Model: "a/b"}); !errors.As(err, &pe) {
		t.Errorf("a forwarded model with a '/': %v", err)
	}
	if len(got) != 4 {
		t.Errorf("%d requests sent, want 4", len(got))
	}
}

// Response headers: only the allow-listed ones pass (the upstream
// account's rate limits, organization and cookies stay), the upstream's
// request id is renamed, and a header the gateway set wins.
func TestCopyResponseHeaders(t *testing.T) {
	dst := http.Header{"Retry-After": {"mine"}}
	CopyResponseHeaders(dst, http.Header{
		"X-Ratelimit-Remaining-Requests": {"9"}, "Connection": {"X-Private"}, "X-Private": {"p"},
		"Content-Length": {"10"}, "X-Request-Id": {"up-1"}, "Set-Cookie": {"a=b"}, "Openai-Organization": {"org"},
		"Openai-Project": {"p"}, "Anthropic-Organization-Id": {"o"}, "Retry-After": {"3"}, "Content-Disposition": {"attachment"},
	})
	want := http.Header{"Retry-After": {"mine"}, "Content-Disposition": {"attachment"}, "X-Upstream-Request-Id": {"up-1"}}
	if !reflect.DeepEqual(dst, want) {
		t.Errorf("got %v, want %v", dst, want)
	}
}

// Request headers: only the allow-listed ones and the upstream's
// forward_headers go upstream, none the Connection header names.
func TestCopyRequestHeaders(t *testing.T) {
	dst := http.Header{}
	copyRequestHeaders(dst, http.Header{
		"User-Agent": {"sdk"}, "Idempotency-Key": {"i"}, "X-Title": {"app"}, "Authorization": {"Bearer c"},
		"X-Goog-Api-Key": {"g"}, "X-Real-Ip": {"1.2.3.4"}, "Anthropic-Beta": {"b"}, "Openai-Organization": {"o"},
		"Connection": {"Idempotency-Key"},
	}, []string{"X-Title"})
	want := http.Header{"User-Agent": {"sdk"}, "X-Title": {"app"}}
	if !reflect.DeepEqual(dst, want) {
		t.Errorf("got %v, want %v", dst, want)
	}
}

type connKey struct{}

// dyingServer answers the first request of each connection and drops the
// connection, unanswered, when a second request arrives on it: exactly
// what a client meets when an upstream closes keep-alive connections
// just as they are reused. It counts the connections it accepted.
func dyingServer(t testing.TB) (*httptest.Server, *atomic.Int64) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Context().Value(connKey{}).(*atomic.Int64).Add(1) > 1 {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		io.WriteString(w, `{"id":"x"}`)
	}))
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		conns.Add(1)
		return context.WithValue(ctx, connKey{}, new(atomic.Int64))
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// A request that meets a dead keep-alive connection is resent once on a
// fresh connection: every request succeeds, and each one after the first
// says it was resent.
func TestReconnectOnDeadKeepAlive(t *testing.T) {
	srv, conns := dyingServer(t)
	c := newClient(Target{Name: "u", URL: srv.URL})
	defer c.CloseIdleConnections()
	reconnects := 0
	for i := range 50 {
		resp, reconnected, err := c.Send(context.Background(), Call{Body: []byte(`{}`), Header: nil, Stream: false})
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if reconnected {
			reconnects++
		}
	}
	if reconnects == 0 || conns.Load() < 50 {
		t.Errorf("%d requests resent, %d connections", reconnects, conns.Load())
	}
}

func TestRetryAfter(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 0, "3": 3 * time.Second, "x": 0, "-1": 0,
		time.Now().Add(time.Hour).UTC().Format(http.TimeFormat): time.Hour} {
		if got := retryAfter(v); got < want-2*time.Second || got > want {
			t.Errorf("retryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

// newClient is New with the limits the configuration's defaults give,
// where the test sets none.
func newClient(t Target) *Client {
	if t.ConnectTimeout == 0 {
		t.ConnectTimeout = 10 * time.Second
	}
	if t.MaxErrorBody == 0 {
		t.MaxErrorBody = 64 << 10
	}
	if t.ErrorBodyTimeout == 0 {
		t.ErrorBodyTimeout = 5 * time.Second
	}
	return New(t)
}

// The body goes with a Content-Length (no chunked encoding, which some
// providers refuse), whole, and the request lets go of its bytes once they
// are sent, though its response is still being read.
func TestBodySentThenReleased(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store([]any{r.ContentLength, r.TransferEncoding, string(b)})
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	c := newClient(Target{Name: "u", URL: srv.URL})
	defer c.CloseIdleConnections()
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 100<<10) + `"}]}`)
	resp, _, err := c.Send(context.Background(), Call{Body: body, Header: nil, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if g := got.Load().([]any); g[0] != int64(len(body)) || g[1] != nil && len(g[1].([]string)) > 0 || g[2] != string(body) {
		t.Errorf("upstream got Content-Length %v, Transfer-Encoding %v, %d bytes", g[0], g[1], len(g[2].(string)))
	}
	ob, ok := resp.Request.Body.(*onceBody)
	if !ok {
		t.Fatalf("the request's body is %T", resp.Request.Body)
	}
	// The transport closes the body once written, on its own goroutine,
	// which may come after the response: wait for it, then look.
	wait.For(t, "the request's body closed", ob.closed.Load)
	if ob.b != nil {
		t.Errorf("the request's body still holds %d bytes", len(ob.b))
	}
}

// eofBody records whether it was read to its end before it was closed:
// net/http reuses a response's connection only then.
type eofBody struct {
	rest           io.Reader
	eof, closedEOF bool
	block          chan struct{} // non-nil: a read waits for it (a body held open)
	reads          int
}

func (b *eofBody) Read(p []byte) (int, error) {
	b.reads++
	if b.block != nil {
		<-b.block
		return 0, context.Canceled
	}
	n, err := b.rest.Read(p)
	b.eof = b.eof || err == io.EOF
	return n, err
}

func (b *eofBody) Close() error { b.closedEOF = b.eof; return nil }

// Finish reads what is left of a body once its answer was relayed — the
// end of the chunked encoding, which an upstream sends after its last
// event — before closing it, so that its connection is used again; a body
// held open past the wait is abandoned when the wait is over (the call's
// context cancelled).
func TestFinish(t *testing.T) {
	b := &eofBody{rest: strings.NewReader("\r\n0\r\n\r\n")}
	Finish(&callBody{ReadCloser: b, cancel: func() {}}, time.Minute)
	if !b.closedEOF {
		t.Error("the body was closed before its end")
	}
	held := &eofBody{block: make(chan struct{})}
	var cancelled atomic.Bool
	Finish(&callBody{ReadCloser: held, cancel: func() {
		if cancelled.CompareAndSwap(false, true) {
			close(held.block)
		}
	}}, 10*time.Millisecond)
	if !cancelled.Load() {
		t.Error("a held body was not abandoned")
	}

	// A body that reported its end while the answer was read (the chunked
	// encoding's end in the same read as the last event, or a non-streamed
	// body read whole) is closed without another read, so without a timer.
	ended := &eofBody{rest: strings.NewReader("")}
	cb := &callBody{ReadCloser: ended, cancel: func() {}}
	if _, err := io.ReadAll(cb); err != nil {
		t.Fatal(err)
	}
	reads := ended.reads
	Finish(cb, time.Minute)
	if ended.reads != reads || !ended.closedEOF {
		t.Errorf("the ended body was read %d more times, closed %v", ended.reads-reads, ended.closedEOF)
	}
}

// countingConn counts the writes made on a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int32
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// A small request goes out in one write, headers and body together; a
// large one lets go of its bytes once written (a onceBody), and goes out
// in two: the headers, then the body.
func TestRequestWrites(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	c := newClient(Target{Name: "u", URL: srv.URL})
	defer c.CloseIdleConnections()
	var writes atomic.Int32
	tr := c.tr
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		return countingConn{conn, &writes}, err
	}
	for _, tc := range []struct {
		size       int
		wantWrites int32
		once       bool
	}{{300, 1, false}, {smallBody + 1, 2, true}} {
		if _, once := requestBody(make([]byte, tc.size)).(*onceBody); once != tc.once {
			t.Errorf("%d bytes: sent from a onceBody %v, want %v", tc.size, once, tc.once)
		}
		writes.Store(0)
		body := append([]byte(`{"a":"`), strings.Repeat("x", tc.size-8)...)
		resp, _, err := c.Send(context.Background(), Call{Body: append(body, `"}`...)})
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := writes.Load(); got != tc.wantWrites {
			t.Errorf("%d bytes: %d writes, want %d", tc.size, got, tc.wantWrites)
		}
	}
}

// A transport error names the upstream and what failed, not the URL it
// was sent to (which may carry more than the host: a path, a query).
func TestTransportErrorWithoutURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: the connection is refused
	c := newClient(Target{Name: "u", URL: "http://" + addr + "/v1/secret-path"})
	defer c.CloseIdleConnections()
	_, _, err = c.Send(context.Background(), Call{Body: []byte(`{}`)})
	e, ok := errors.AsType[*Error](err)
	if !ok || e.Kind != KindConnect || strings.Contains(err.Error(), "secret-path") || !strings.Contains(err.Error(), "upstream u") {
		t.Fatalf("error %v (kind %v)", err, e)
	}
}

// An AWS endpoint's host names its region.
func TestRegionOf(t *testing.T) {
	for host, want := range map[string]string{"bedrock-runtime.us-east-1.amazonaws.com": "us-east-1", "bedrock-runtime.eu-west-3.amazonaws.com:443": "eu-west-3",
		"bedrock-runtime-fips.us-gov-west-1.amazonaws.com": "us-gov-west-1", "proxy.example": "", "127.0.0.1:8080": ""} {
		if got := RegionOf(host); got != want {
			t.Errorf("%s: %q, want %q", host, got, want)
		}
	}
}

// A token endpoint's answer: its expiry as expires_in (Entra ID's, a
// number) or expires_on (a managed identity's, a string of seconds since
// the epoch); an error answer names what the endpoint said.
func TestTokenResponse(t *testing.T) {
	in := time.Now().Add(time.Hour).Unix()
	for _, tc := range []struct {
		status      int
		body, token string
		wantExpiry  bool
	}{
		{200, `{"access_token":"a","expires_in":3599,"token_type":"Bearer"}`, "a", true},
		{200, `{"access_token":"b","expires_on":"` + strconv.FormatInt(in, 10) + `"}`, "b", true},
		{400, `{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided."}`, "", false},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(tc.body))
		}))
		req, _ := http.NewRequest("GET", srv.URL, nil)
		token, expires, err := tokenResponse(req)
		srv.Close()
		switch {
		case tc.token == "" && (err == nil || !strings.Contains(err.Error(), "AADSTS7000215")):
			t.Errorf("%s: %q %v", tc.body, token, err)
		case tc.token != "" && (err != nil || token != tc.token || time.Until(expires) < 50*time.Minute):
			t.Errorf("%s: %q %v %v", tc.body, token, expires, err)
		}
	}
}
