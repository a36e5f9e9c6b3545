package upstream

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/wire"
)

// Target describes one upstream: where to send and how to authenticate.
type Target struct {
	// Name is the configured upstream name.
	Name string
	// URL is the API base URL; Path is appended. It may name the model
	// with ModelPlaceholder (Azure OpenAI's deployment URLs): each call's
	// model goes there, path-escaped.
	URL string
	// Query is added to every request's query (Azure OpenAI's
	// api-version=…), "" for none.
	Query string
	// Tokens, when set, gives the bearer token every call is sent with
	// (a cloud's short-lived credentials) instead of APIKey.
	Tokens TokenSource
	// Signer, when set, signs every call (AWS Signature Version 4)
	// instead of APIKey.
	Signer Signer
	// Path is the endpoint below URL; "" is "/chat/completions".
	Path string
	// APIKey is sent in AuthHeader; empty sends no credentials.
	APIKey string
	// AuthHeader is "Authorization" (sent as "Bearer <key>") or another
	// header name that carries the key as is.
	AuthHeader string
	// Headers are extra headers sent on every request.
	Headers map[string]string
	// ForwardHeaders are client headers forwarded besides
	// ForwardedHeaders (canonical names).
	ForwardHeaders []string
	// ConnectTimeout bounds dialing and TLS; 0 is no bound.
	ConnectTimeout time.Duration
	// HeaderTimeout bounds the wait for response headers; 0 is no bound.
	HeaderTimeout time.Duration
	// MaxErrorBody caps the bytes captured from an error response.
	MaxErrorBody int64
	// ErrorBodyTimeout caps the time spent reading an error body; 0 is no
	// bound.
	ErrorBodyTimeout time.Duration
}

// Client sends chat-completions requests to one upstream. It is safe for
// concurrent use.
type Client struct {
	target Target
	base   *url.URL // the API base URL; nil when it does not parse (Forward then fails)
	url    string
	// tr sends the calls. It is used directly, not through an
	// http.Client: the gateway follows no redirects and sets no client
	// timeout, so a client's per-request work (a copy of the headers and
	// of the URL for redirects, the error wrapped with the URL) bought
	// nothing.
	tr *http.Transport
	// fresh sends on a new connection each time (keep-alives off): the
	// resend after a dead keep-alive connection must not draw another
	// dead one from the pool.
	fresh *http.Transport
	// bearer is the Authorization header's value for APIKey, made once.
	bearer []string
	// namesModel: the URL names the model (ModelPlaceholder), which each
	// call fills in.
	namesModel bool
}

// New returns a Client for t with its own connection pool. t is used as
// it is: its limits come resolved from the configuration, which holds the
// defaults.
func New(t Target) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: t.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = t.ConnectTimeout
	tr.ResponseHeaderTimeout = t.HeaderTimeout
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = 256
	tr.IdleConnTimeout = 90 * time.Second
	tr.ReadBufferSize = readBufferSize
	freshTr := tr.Clone()
	freshTr.DisableKeepAlives = true
	base, _ := url.Parse(t.URL) // checked at load
	return &Client{
		target: t,
		base:   base,
		url:    strings.TrimSuffix(t.URL, "/") + cmp.Or(t.Path, "/chat/completions"),
		// No timeout of its own: it would cut long streams. Deadlines come
		// from the caller's context.
		tr:         tr,
		fresh:      freshTr,
		bearer:     []string{"Bearer " + t.APIKey},
		namesModel: strings.Contains(t.URL, ModelPlaceholder),
	}
}

// Name returns the upstream's configured name.
func (c *Client) Name() string { return c.target.Name }

// CloseIdleConnections closes the client's idle connections.
func (c *Client) CloseIdleConnections() {
	c.tr.CloseIdleConnections()
	c.fresh.CloseIdleConnections()
}

// Kind classifies an upstream failure.
type Kind string

// Kinds of upstream failure; they are metric labels.
const (
	KindConnect  Kind = "connect"  // no response: dial, TLS, reset before headers
	KindTimeout  Kind = "timeout"  // a deadline passed (the call's or the header timeout)
	KindStatus   Kind = "status"   // the upstream answered with an error status
	KindCanceled Kind = "canceled" // the caller's context was cancelled (client gone)
)

// Error is a failed upstream call. Message is the upstream's own message
// when it sent one (extracted from its error body), and Body the captured
// bytes of that body, at most Target.MaxErrorBody.
type Error struct {
	Upstream string
	Kind     Kind
	Status   int // the upstream's status for KindStatus, else 0
	Message  string
	Body     []byte
	// RetryAfter is the upstream's Retry-After, for KindStatus; 0 if none.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	switch e.Kind {
	case KindStatus:
		if e.Message != "" {
			return fmt.Sprintf("upstream %s answered %d: %s", e.Upstream, e.Status, e.Message)
		}
		return fmt.Sprintf("upstream %s answered %d", e.Upstream, e.Status)
	default:
		return fmt.Sprintf("upstream %s: %s: %v", e.Upstream, e.Kind, e.Err)
	}
}

func (e *Error) Unwrap() error { return e.Err }

// Call is one request to the upstream: its body, the client's headers
// (those safe to pass on are forwarded), whether the answer streams, and
// the endpoint below the upstream's URL when it is not the upstream's own
// (Target.Path): a protocol whose endpoint names the model (Gemini's
// /models/{model}:generateContent).
type Call struct {
	Body   []byte
	Header http.Header
	Stream bool
	Path   string
	// Model is the model the call is for, which a URL naming
	// ModelPlaceholder takes.
	Model string
	// Extra are headers sent as they are, besides the allowed ones of
	// Header (a Messages API client's anthropic-beta, to an Anthropic
	// upstream).
	Extra http.Header
}

// Send posts a call to the upstream's endpoint. On a 2xx
// status it returns the response, whose body the caller must close; on any
// other status it captures the error body, closes it and returns an *Error
// of KindStatus. Transport failures are *Error of the other kinds.
//
// A request that fails on a reused keep-alive connection before any
// response byte (the upstream closed it just as it was reused) is sent
// once more on a fresh connection: reconnected reports it.
func (c *Client) Send(ctx context.Context, call Call) (resp *http.Response, reconnected bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, &Error{Upstream: c.target.Name, Kind: KindCanceled, Err: context.Cause(ctx)}
	}
	if err := c.checkModel(call.Model); err != nil {
		return nil, false, err
	}
	token, signing, err := c.credentials(ctx)
	if err != nil {
		return nil, false, err
	}
	// The call's own cancel lets an error body's read be abandoned on time
	// (closing a body that is being read would wait for the read).
	ctx, cancel := context.WithCancel(ctx)
	resp, reconnected, err = c.roundTrip(ctx, func(ctx context.Context) *http.Request {
		return c.sign(withToken(c.request(ctx, call), token), call.Body, signing)
	})
	if err != nil {
		e := c.transportError(ctx, err)
		cancel()
		return nil, reconnected, e
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		resp.Body = &callBody{ReadCloser: resp.Body, cancel: cancel}
		return resp, reconnected, nil
	}
	b := c.scrub(c.capture(resp.Body, cancel))
	msg := wire.UpstreamMessage(b)
	if msg == "" && len(b) > 0 && !bytes.HasPrefix(bytes.TrimSpace(b), []byte("<")) {
		msg = strings.TrimSpace(string(b))
		if len(msg) > 512 {
			msg = msg[:512] + "…"
		}
	}
	wait := retryAfter(resp.Header.Get("Retry-After"))
	if wait == 0 {
		wait = retryInfo(b)
	}
	return nil, reconnected, &Error{Upstream: c.target.Name, Kind: KindStatus, Status: resp.StatusCode, Message: msg, Body: b,
		RetryAfter: wait, Err: fmt.Errorf("status %d", resp.StatusCode)}
}

// scrub replaces the upstream's key, wherever an error body echoes it,
// with "[redacted]": the body and its message reach the client and the
// log.
func (c *Client) scrub(b []byte) []byte {
	if key := c.target.APIKey; len(key) >= 8 && bytes.Contains(b, []byte(key)) {
		return bytes.ReplaceAll(b, []byte(key), []byte("[redacted]"))
	}
	return b
}

// Scrub is scrub for a message the upstream sent in its answer (an error
// event in the middle of a stream, an error object in a whole answer),
// which the gateway relays and logs.
func (c *Client) Scrub(msg string) string {
	if key := c.target.APIKey; len(key) >= 8 && strings.Contains(msg, key) {
		return strings.ReplaceAll(msg, key, "[redacted]")
	}
	return msg
}

// retryInfo reads the wait a Google API error body asks for
// (google.rpc.RetryInfo in error.details: "retryDelay": "30s"); 0 when it
// has none.
func retryInfo(body []byte) time.Duration {
	var e struct {
		Error struct {
			Details []struct {
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return 0
	}
	for _, d := range e.Error.Details {
		if w, err := time.ParseDuration(d.RetryDelay); err == nil && w > 0 {
			return w
		}
	}
	return 0
}

// readBufferSize is the upstream connection's read buffer: 2 KB, not
// net/http's 4 KB. A stream holds it for as long as it waits. A body of
// known length is read in bulk past it (the event reader's reads of up
// to 64 KB go straight to the connection while the upstream is busy); a
// chunked one is not (each chunk's header is read through the buffer),
// so a burst costs a read per 2 KB. That was measured not to matter: a
// tool-call stream of 178 KB in one burst (4 calls × 200 fragments, 100
// streams a second) cost 1.46–1.68 ms of CPU with 2 KB and 1.60–1.64 ms
// with 4 KB (three alternating pairs of 10 s, perf stat), with 40% fewer
// read calls.
const readBufferSize = 2 << 10

// smallBody is the largest request body sent from a bytes.Reader, which
// the transport writes in one system call with the headers when both fit
// its 4 KB write buffer; a larger one is a onceBody, for which the
// transport writes the headers first, then the body (net/http flushes the
// headers before any body it does not know to be in memory) — two writes,
// as a body larger than the buffer takes anyway. Sending one write
// instead of two is worth holding a small body for the life of its
// response, not a large one.
const smallBody = 4 << 10

// requestBody is the reader a request's body is sent from.
func requestBody(b []byte) io.Reader {
	if len(b) <= smallBody {
		return bytes.NewReader(b)
	}
	return &onceBody{b: b}
}

// onceBody is a request body that lets go of its bytes once they are
// read: the transport keeps the request as long as its response is read,
// and a long stream of a large transcript would otherwise hold the whole
// encoded body to its end. It cannot be rewound (the request has no
// GetBody): a redirect of the POST is not followed, and the reconnect in
// Send builds a new request instead.
type onceBody struct {
	b []byte
	// closed is set once Close let go of b: the transport closes the body
	// on its own goroutine, which another may wait for through closed.
	closed atomic.Bool
}

// Close lets go of the bytes (the transport closes a request's body once
// it is written, or when the request fails).
func (o *onceBody) Close() error {
	o.b = nil
	o.closed.Store(true)
	return nil
}

func (o *onceBody) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		o.b = nil
		return 0, io.EOF
	}
	n := copy(p, o.b)
	o.b = o.b[n:]
	if len(o.b) == 0 {
		o.b = nil
	}
	return n, nil
}

// Forwarded is a client's request of the rest of the API, as Forward sends
// it: its method, its path below the upstream's base URL (without its /v1:
// "/embeddings"), its raw query, its body and its headers (of which only
// the content type, Accept and the allowed headers go on), and the model
// it names, which a URL naming ModelPlaceholder takes.
type Forwarded struct {
	Method, Path, Query string
	Body                []byte
	Header              http.Header
	Model               string
}

// ModelPlaceholder in an upstream's URL stands for each call's model (a
// deployment's name: https://R.openai.azure.com/openai/deployments/{model}).
const ModelPlaceholder = "{model}"

// credentials are what a call is authenticated with now: the bearer token
// (token) and the signature's credentials (signing), either or neither.
func (c *Client) credentials(ctx context.Context) (token string, signing any, err error) {
	if token, err = c.token(); err != nil {
		return "", nil, err
	}
	signing, err = c.signing(ctx)
	return token, signing, err
}

// token is the bearer token the upstream's credentials give a call now
// ("" for an upstream authenticated by its key); an upstream's failure,
// nothing sent, when they give none.
func (c *Client) token() (string, error) {
	if c.target.Tokens == nil {
		return "", nil
	}
	t, err := c.target.Tokens.Token()
	if err != nil {
		return "", &Error{Upstream: c.target.Name, Kind: KindConnect, Err: err}
	}
	return t, nil
}

// signing are the credentials the upstream's Signer signs a call with
// now (nil without a Signer); an upstream's failure, nothing sent, when
// there are none.
func (c *Client) signing(ctx context.Context) (any, error) {
	if c.target.Signer == nil {
		return nil, nil
	}
	creds, err := c.target.Signer.Credentials(ctx)
	if err != nil {
		return nil, &Error{Upstream: c.target.Name, Kind: KindConnect, Err: err}
	}
	return creds, nil
}

// sign signs req (its headers all set) with the credentials, when the
// upstream signs its calls. A request the signer cannot sign goes
// unsigned, and the upstream refuses it.
func (c *Client) sign(req *http.Request, body []byte, creds any) *http.Request {
	if creds != nil {
		_ = c.target.Signer.Sign(req, body, creds)
	}
	return req
}

// withToken sends req with the bearer token, when there is one.
func withToken(req *http.Request, token string) *http.Request {
	if token != "" {
		req.Header["Authorization"] = []string{"Bearer " + token}
	}
	return req
}

// ModelError is a model an upstream's URL cannot name (ModelPlaceholder):
// nothing was sent.
type ModelError struct {
	Model, Reason string
}

func (e *ModelError) Error() string { return "the model " + wire.Clip(e.Model) + " " + e.Reason }

// checkModel refuses a model a URL naming ModelPlaceholder cannot take:
// none, or a dot segment, which would name another path.
func (c *Client) checkModel(model string) error {
	if !c.namesModel {
		return nil
	}
	switch model {
	case "":
		return &ModelError{Reason: "is needed: this upstream's URL names the model, and the request names none"}
	case ".", "..":
		return &ModelError{Model: model, Reason: "is a dot segment, which this upstream's URL cannot name"}
	}
	return nil
}

// ownQuery is a client's query without the parameters the upstream's own
// query sets (a client's api-version does not go beside the configured
// one).
func (c *Client) ownQuery(q string) string {
	if c.target.Query == "" || q == "" {
		return q
	}
	var kept []string
	for p := range strings.SplitSeq(q, "&") {
		name, _, _ := strings.Cut(p, "=")
		if !strings.Contains("&"+c.target.Query, "&"+name+"=") {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "&")
}

// withQuery adds the upstream's own query (Target.Query) to a URL.
func (c *Client) withQuery(u string) string {
	switch {
	case c.target.Query == "":
		return u
	case strings.Contains(u, "?"):
		return u + "&" + c.target.Query
	}
	return u + "?" + c.target.Query
}

// Forward sends a request of the rest of the API (embeddings,
// moderations, files…) below the upstream's base URL, with the client's
// query, body, content type and safe headers, and the upstream's
// credentials. It
// returns the response whatever its status (the caller passes it on), an
// *Error for a transport failure, or a *PathError, having sent nothing,
// for a path CheckPath refuses; a request that fails on a reused
// keep-alive connection before any response byte is sent once more on a
// fresh one (reconnected).
func (c *Client) Forward(ctx context.Context, f Forwarded) (resp *http.Response, reconnected bool, err error) {
	method, body, in := f.Method, f.Body, f.Header
	if err := ctx.Err(); err != nil {
		return nil, false, &Error{Upstream: c.target.Name, Kind: KindCanceled, Err: context.Cause(ctx)}
	}
	if c.base == nil {
		return nil, false, &Error{Upstream: c.target.Name, Kind: KindConnect, Err: fmt.Errorf("the upstream URL %q does not parse", c.target.URL)}
	}
	if err := c.checkModel(f.Model); err != nil {
		return nil, false, err
	}
	if c.namesModel && strings.Contains(f.Model, "/") {
		return nil, false, &ModelError{Model: f.Model, Reason: "holds a '/', which this upstream's URL cannot name on the rest of the API"}
	}
	base := *c.base
	base.Path = strings.Replace(base.Path, ModelPlaceholder, f.Model, 1)
	target, err := joinPath(&base, f.Path, c.ownQuery(f.Query))
	if err != nil {
		return nil, false, err
	}
	target = c.withQuery(target)
	token, signing, err := c.credentials(ctx)
	if err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithCancel(ctx)
	build := func(ctx context.Context) *http.Request {
		var b io.Reader
		if method != http.MethodGet && method != http.MethodHead && method != http.MethodDelete || len(body) > 0 {
			b = requestBody(body)
		}
		req, _ := http.NewRequestWithContext(ctx, method, target, b)
		req.ContentLength = int64(len(body))
		copyRequestHeaders(req.Header, in, c.target.ForwardHeaders)
		if ct := in.Get("Content-Type"); ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		if a := in.Get("Accept"); a != "" {
			req.Header.Set("Accept", a)
		}
		c.authorize(req)
		return c.sign(withToken(req, token), body, signing)
	}
	resp, reconnected, err = c.roundTrip(ctx, build)
	if err != nil {
		e := c.transportError(ctx, err)
		cancel()
		return nil, reconnected, e
	}
	resp.Body = &callBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, reconnected, nil
}

// roundTrip sends the request build makes for ctx. When it fails on a
// reused keep-alive connection before any response (the upstream closed
// the connection as it was reused), it sends a new one once on a fresh
// connection: reconnected reports it.
func (c *Client) roundTrip(ctx context.Context, build func(context.Context) *http.Request) (resp *http.Response, reconnected bool, err error) {
	var reused bool
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }}
	resp, err = c.tr.RoundTrip(build(httptrace.WithClientTrace(ctx, trace)))
	if err != nil && reused && ctx.Err() == nil && !isTimeout(err) {
		reconnected = true
		resp, err = c.fresh.RoundTrip(build(ctx))
	}
	return resp, reconnected, err
}

// request builds one upstream request for a call.
func (c *Client) request(ctx context.Context, call Call) *http.Request {
	u := c.url
	if call.Path != "" {
		u = strings.TrimSuffix(c.target.URL, "/") + call.Path
	}
	if c.namesModel {
		u = strings.Replace(u, ModelPlaceholder, url.PathEscape(call.Model), 1)
	}
	u = c.withQuery(u)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, requestBody(call.Body))
	if err != nil { // a path the translator escaped does not fail; the base URL was checked at load
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, c.url, requestBody(call.Body))
	}
	req.ContentLength = int64(len(call.Body))
	copyRequestHeaders(req.Header, call.Header, c.target.ForwardHeaders)
	for k, v := range call.Extra {
		req.Header[k] = v
	}
	req.Header["Content-Type"] = jsonType
	if call.Stream {
		req.Header["Accept"] = eventStreamType
	} else {
		req.Header["Accept"] = jsonType
	}
	c.authorize(req)
	return req
}

// The media types a call's request states, shared by every request: a
// header value set from them is never changed in place (the transport
// only reads it).
var (
	jsonType        = []string{"application/json"}
	eventStreamType = []string{"text/event-stream"}
)

// authorize sets the upstream's own headers and credentials on req.
func (c *Client) authorize(req *http.Request) {
	for k, v := range c.target.Headers {
		req.Header.Set(k, v)
	}
	if c.target.APIKey != "" {
		if strings.EqualFold(c.target.AuthHeader, "Authorization") || c.target.AuthHeader == "" {
			req.Header["Authorization"] = c.bearer
		} else {
			req.Header.Set(c.target.AuthHeader, c.target.APIKey)
		}
	}
}

func isTimeout(err error) bool {
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}

// RetryAfter is a response's Retry-After: seconds, or an HTTP date; 0
// when absent or unreadable.
func RetryAfter(h http.Header) time.Duration { return retryAfter(h.Get("Retry-After")) }

// retryAfter reads a Retry-After header: seconds, or an HTTP date; 0 when
// absent or unreadable.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// capture reads at most MaxErrorBody bytes of an error body within
// ErrorBodyTimeout, then closes it (docs/spec.md §6).
func (c *Client) capture(r io.ReadCloser, cancel context.CancelFunc) []byte {
	if c.target.ErrorBodyTimeout > 0 {
		t := time.AfterFunc(c.target.ErrorBodyTimeout, cancel)
		defer t.Stop()
	}
	b, _ := io.ReadAll(io.LimitReader(r, c.target.MaxErrorBody))
	r.Close()
	cancel()
	return b
}

// Finish closes a body the caller is done with, once it has read what is
// left of it — after an answer's end marker, usually nothing but the end
// of the chunked encoding — so that its connection goes back to the pool
// instead of being closed: an upstream connection (a TLS handshake, with
// a real provider) saved per streamed answer. It reads at most 64 KB and
// waits at most wait; an upstream that holds the body open after its end
// marker has its connection closed then.
//
// A body that has already reported its end (a non-streamed answer read
// whole, or a stream whose chunked encoding ended in the same read as its
// end marker) is only closed: no timer is armed, since arming the
// process's earliest timer wakes the network poller. A Go upstream ends
// its chunked encoding in a write of its own, after the end marker, so
// for its streams the wait stays.
func Finish(body io.ReadCloser, wait time.Duration) {
	if cb, ok := body.(*callBody); ok && !cb.ended {
		t := time.AfterFunc(wait, cb.cancel)
		_, _ = io.Copy(io.Discard, io.LimitReader(cb.ReadCloser, 64<<10))
		t.Stop()
	}
	body.Close()
}

// callBody releases the call's context when the caller closes it, and
// notes when its body has reported its end (for Finish).
type callBody struct {
	io.ReadCloser
	cancel context.CancelFunc
	ended  bool
}

func (b *callBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.ended = true
	}
	return n, err
}

func (b *callBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

func (c *Client) transportError(ctx context.Context, err error) *Error {
	e := &Error{Upstream: c.target.Name, Kind: KindConnect, Err: err}
	if ctx.Err() != nil {
		e.Err = context.Cause(ctx)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			e.Kind = KindTimeout
		} else {
			e.Kind = KindCanceled
		}
		return e
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		e.Kind = KindTimeout
	}
	return e
}

// ForwardedHeaders are the client headers sent upstream (besides the
// content type and accept headers the gateway sets itself, and an
// upstream's forward_headers): every other header a client sends stays at
// the gateway — its credentials, cookies, account and organization
// headers, another provider's keys and betas, addresses, hop-by-hop
// headers.
var ForwardedHeaders = []string{"User-Agent", "Idempotency-Key", "Openai-Beta", "Traceparent", "Tracestate"}

// copyRequestHeaders copies into dst the headers of src that are in
// ForwardedHeaders or extra (canonical names), except those its
// Connection header names.
func copyRequestHeaders(dst, src http.Header, extra []string) {
	conn := src.Values("Connection")
	for _, list := range [][]string{ForwardedHeaders, extra} {
		for _, k := range list {
			if vv := src[k]; vv != nil && !listedIn(conn, k) {
				dst[k] = append([]string(nil), vv...)
			}
		}
	}
}

// PassedHeaders are the upstream's response headers passed back to the
// client (the content type is set apart): the upstream's X-Request-Id is
// passed as X-Upstream-Request-Id (the client's X-Request-Id is the
// gateway's). Every other header stays at the gateway — the upstream
// account's rate limits, organization and project, cookies, servers.
var PassedHeaders = []string{"Retry-After", "Content-Disposition", "Cache-Control"}

// CopyResponseHeaders copies the upstream's response headers that are in
// PassedHeaders. A header already in dst (one the gateway set itself, such
// as its x-ratelimit-* for a client key) is kept.
func CopyResponseHeaders(dst, src http.Header) {
	for _, k := range PassedHeaders {
		if vv := src[k]; vv != nil && dst[k] == nil {
			dst[k] = append([]string(nil), vv...)
		}
	}
	if id := src.Get("X-Request-Id"); id != "" {
		dst.Set("X-Upstream-Request-Id", id)
	}
}

func listedIn(connection []string, key string) bool {
	for _, v := range connection {
		for f := range strings.SplitSeq(v, ",") {
			if http.CanonicalHeaderKey(strings.TrimSpace(f)) == key {
				return true
			}
		}
	}
	return false
}
