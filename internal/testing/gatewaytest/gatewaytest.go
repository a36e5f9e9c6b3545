// Package gatewaytest runs a gateway under test: served the way
// cmd/gateway serves it (gateway.NewServer, with the pending-request
// guard), on a loopback port, in front of a real upstream (the simulator
// or an httptest server), with its logs observed and its metrics in a
// pedantic registry. It also keeps everything every gateway of the test
// binary logged and every response body its clients read, so that a
// package's TestMain can check that no secret ever appeared (Secrets).
package gatewaytest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/observetest"
	"github.com/toolgate/toolgate/internal/testing/wait"
	"github.com/toolgate/toolgate/internal/wire"
)

// Env is a running gateway in front of one upstream.
type Env struct {
	URL     string // the gateway's base URL, ending in /v1
	Addr    string // its host:port
	Logs    *observer.ObservedLogs
	Reg     *prometheus.Registry
	HTTP    *http.Client
	Gateway *gateway.Gateway
	close   func()
	metrics *observe.Metrics
	// answered counts the API responses HTTP received and closed: each
	// request's record (access line, metrics) is emitted once its
	// response has ended.
	answered *atomic.Int64
}

// Close stops the gateway now (the test's end stops it otherwise): a test
// that checks what is left once it is gone calls it.
func (e *Env) Close() { e.close() }

// UpstreamKey is the upstream key ${UPSTREAM_KEY} expands to in configs.
const UpstreamKey = "upstream-secret"

// SimConfig routes "my-alias" to the simulator's sim-text and every other
// model to the simulator as it is named.
const SimConfig = `
upstreams: [{name: sim, url: "UPSTREAM_URL/v1", api_key: "${UPSTREAM_KEY}"}]
routes:
  - {name: alias, model: "my-alias", upstream: sim, upstream_model: "sim-text"}
  - {name: default, model: "*", upstream: sim}
`

// Options adjust Start.
type Options struct {
	// Gateway changes the gateway's options before it is built (a clock,
	// a store).
	Gateway func(*gateway.Options)
	// Level is the least level observed in Logs; default info.
	Level zapcore.Level
	// Listener wraps the gateway's listener (connections that misbehave
	// as a test needs).
	Listener func(net.Listener) net.Listener
}

// Start runs the gateway with config yaml, where UPSTREAM_URL stands for
// upstreamURL. It stops when the test ends.
func Start(t testing.TB, upstreamURL, yaml string, opts ...Options) *Env {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Level == 0 {
		o.Level = zapcore.InfoLevel
	}
	cfg, err := config.Parse([]byte(strings.ReplaceAll(yaml, "UPSTREAM_URL", upstreamURL)), func(k string) string {
		return map[string]string{"UPSTREAM_KEY": UpstreamKey}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(o.Level)
	reg := prometheus.NewPedanticRegistry()
	metrics := observe.NewMetrics(reg, observe.MetricsOptions{HideKeyNames: !*cfg.Metrics.KeyLabels})
	pending := gateway.NewPending(cfg.Server, metrics)
	gopts := gateway.Options{Config: cfg, Logger: zap.New(zapcore.NewTee(core, seenCore())), Metrics: metrics, Pending: pending}
	if o.Gateway != nil {
		o.Gateway(&gopts)
	}
	g, err := gateway.New(gopts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = gateway.NewServer(cfg.Server, g, pending, nil)
	if o.Listener != nil {
		srv.Listener = o.Listener(srv.Listener)
	}
	srv.Start()
	tr := &http.Transport{MaxIdleConnsPerHost: 2048}
	answered := &atomic.Int64{}
	stop := sync.OnceFunc(func() {
		tr.CloseIdleConnections()
		srv.Close()
		g.Close()
	})
	t.Cleanup(stop)
	return &Env{URL: srv.URL + "/v1", Addr: srv.Listener.Addr().String(), Logs: logs, Reg: reg,
		HTTP: &http.Client{Transport: recording{tr, answered}}, Gateway: g, close: stop, answered: answered, metrics: metrics}
}

// StartSim runs the simulator on loopback and the gateway in front of it,
// with SimConfig or the given config.
func StartSim(t testing.TB, opts sim.Options, yaml ...string) (*Env, *sim.Sim) {
	t.Helper()
	s := sim.New(opts)
	up := httptest.NewServer(s)
	t.Cleanup(up.Close)
	cfg := SimConfig
	if len(yaml) > 0 {
		cfg = yaml[0]
	}
	return Start(t, up.URL, cfg), s
}

// Client is an openai-go client of the gateway presenting key, without
// retries.
func (e *Env) Client(key string) *openai.Client {
	c := openai.NewClient(option.WithBaseURL(e.URL+"/"), option.WithAPIKey(key),
		option.WithMaxRetries(0), option.WithHTTPClient(e.HTTP))
	return &c
}

// Post sends body to /v1/chat/completions with the given header pairs.
func (e *Env) Post(t testing.TB, body string, hdr ...string) *http.Response {
	t.Helper()
	return e.send(t, http.MethodPost, "/chat/completions", body, hdr)
}

// send sends body (JSON, when not empty) to the API path with the given
// header pairs.
func (e *Env) send(t testing.TB, method, path, body string, hdr []string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, e.URL+strings.TrimPrefix(path, "/v1"), strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Do sends body (JSON, when not empty) to the API path (under /v1, e.g.
// "/embeddings") with the given header pairs, and returns the response
// with its body read and closed.
func (e *Env) Do(t testing.TB, method, path, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	resp := e.send(t, method, path, body, hdr)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// Registry is the gateway's metrics registry, for observetest.
func (e *Env) Registry() observetest.Registry {
	return observetest.Registry{Gatherer: e.Reg, Metrics: e.metrics}
}

// Access returns the access-log lines as field maps.
func (e *Env) Access() []map[string]any {
	var out []map[string]any
	for _, l := range e.Logs.FilterMessage("access").All() {
		out = append(out, l.ContextMap())
	}
	return out
}

// WaitAccess polls until n access lines were written (the line is
// written after the response, so a client can finish first).
func (e *Env) WaitAccess(t testing.TB, n int) []map[string]any {
	t.Helper()
	wait.For(t, fmt.Sprintf("%d access lines", n), func() bool { return len(e.Access()) >= n })
	return e.Access()
}

// Metric is the value of a metric family's series whose labels include
// want (observetest.Value), once every request whose response was read
// and closed has emitted its record (it does so after its response: a
// client can read the whole answer first).
func (e *Env) Metric(t testing.TB, name string, want map[string]string) float64 {
	t.Helper()
	wait.For(t, "the records of the responses read", func() bool {
		return len(e.Logs.FilterMessage("access").All()) >= int(e.answered.Load())
	})
	return observetest.Value(t, e.Registry(), name, want)
}

// WithField returns the first access line whose field key equals want,
// or nil. Lines of concurrent or back-to-back requests can be written in
// either order.
func WithField(lines []map[string]any, key string, want any) map[string]any {
	for _, l := range lines {
		if l[key] == want {
			return l
		}
	}
	return nil
}

// ReadError reads and closes resp's body, which must be an OpenAI error
// body.
func ReadError(t testing.TB, resp *http.Response) (wire.ErrorBody, []byte) {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var body wire.ErrorBody
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("the body is not an OpenAI error body: %s", b)
	}
	return body, b
}

// KeyHash is the configured form of a client key: its hex SHA-256.
func KeyHash(k string) string { h := sha256.Sum256([]byte(k)); return hex.EncodeToString(h[:]) }

// UserMsg is a one-message transcript.
func UserMsg(s string) []openai.ChatCompletionMessageParamUnion {
	return []openai.ChatCompletionMessageParamUnion{openai.UserMessage(s)}
}

// seen is everything the gateways of this test binary logged at any
// level (debug included) and every response body their clients read.
var seen struct {
	mu sync.Mutex
	b  strings.Builder
}

type seenWriter struct{}

func (seenWriter) Write(p []byte) (int, error) {
	seen.mu.Lock()
	defer seen.mu.Unlock()
	return seen.b.Write(p)
}

// seenCore logs every entry, as JSON, into seen.
func seenCore() zapcore.Core {
	enc := zap.NewProductionEncoderConfig()
	return zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(seenWriter{}), zapcore.DebugLevel)
}

// recording tees every response body into seen, and counts the API's
// responses whose body was closed (their record follows).
type recording struct {
	rt       http.RoundTripper
	answered *atomic.Int64
}

func (r recording) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	if err == nil {
		body := &countedBody{Reader: io.TeeReader(resp.Body, seenWriter{}), c: resp.Body}
		if strings.HasPrefix(req.URL.Path, "/v1/") { // the API, not the admin listener
			body.answered = r.answered
		}
		resp.Body = body
	}
	return resp, err
}

// countedBody counts, once, the closing of an API response's body.
type countedBody struct {
	io.Reader
	c        io.Closer
	answered *atomic.Int64
	once     sync.Once
}

func (b *countedBody) Close() error {
	if b.answered != nil {
		b.once.Do(func() { b.answered.Add(1) })
	}
	return b.c.Close()
}

// Seen returns everything the gateways started by Start logged (at any
// level) and every response body their Env's clients read, so far.
func Seen() string {
	seen.mu.Lock()
	defer seen.mu.Unlock()
	return seen.b.String()
}

// Held is an upstream whose streams send their first text chunk, then
// hold until Release (or until their caller leaves) before they end: a
// test sees a stream in flight for as long as it needs, however slow the
// machine.
type Held struct {
	URL     string // its base URL (without /v1)
	release chan struct{}
	once    sync.Once
}

// StartHeld starts a Held upstream that stops when the test ends.
func StartHeld(t testing.TB) *Held {
	h := &Held{release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"first"},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	h.URL = srv.URL
	t.Cleanup(func() { h.Release(); srv.Close() })
	return h
}

// Release lets every held stream, and every later one, end.
func (h *Held) Release() { h.once.Do(func() { close(h.release) }) }

// ProcessCPU is the CPU time (user and system) the test process has used
// so far: the client's, the gateway's and the upstream's together, so the
// difference between two runs of one workload is what the one that costs
// more adds.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
