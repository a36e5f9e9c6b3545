package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// flaky answers its first `fail` requests with status (and Retry-After
// when set), then a complete stream or completion.
func flaky(t *testing.T, fail int, status int, retryAfter string) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if int(n) <= fail {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"message":"try later (%d)","type":"server_error"}}`, n)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// waits is a fake clock for backoff: it records each wait and returns at
// once, so the retry tests do not sleep.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) options() gatewaytest.Options {
	return gatewaytest.Options{Gateway: func(o *gateway.Options) {
		o.Rand = func() float64 { return 0.5 } // no jitter
		o.Sleep = func(ctx context.Context, d time.Duration) bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.d = append(w.d, d)
			return ctx.Err() == nil
		}
	}}
}

func (w *waits) take() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.d
	w.d = nil
	return d
}

// Before the first byte, a 5xx, a 429 or a refused connection is retried
// with backoff (doubled at each retry), honouring Retry-After up to
// retry_max_wait; every attempt is in the access log and
// toolgate_upstream_attempts_total. The clock is fake: the test asserts
// the waits the gateway asked for, and waits for none.
func TestRetries(t *testing.T) {
	post := func(e *gatewaytest.Env) (*http.Response, string) {
		resp := e.Post(t, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	clock := &waits{}
	start := func(url, yaml string) *gatewaytest.Env { return gatewaytest.Start(t, url, yaml, clock.options()) }
	cfg := func(retries int, extra string) string {
		return `
upstreams: [{name: up, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: up, retries: ` + strconv.Itoa(retries) + `, retry_backoff: 10ms` + extra + `}]
`
	}

	up, calls := flaky(t, 2, 503, "")
	e := start(up.URL, cfg(2, ""))
	if resp, body := post(e); resp.StatusCode != 200 || calls.Load() != 3 {
		t.Fatalf("two 503s then ok, 2 retries: %d %s after %d calls", resp.StatusCode, body, calls.Load())
	}
	if w := clock.take(); !slices.Equal(w, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}) {
		t.Errorf("waits %v, want 10ms then 20ms", w)
	}
	a := e.WaitAccess(t, 1)[0]
	if a["attempts"] != int64(3) || a["attempt_outcomes"] != "status_5xx,status_5xx,ok" {
		t.Errorf("access line %v", a)
	}
	if n := e.Metric(t, "toolgate_upstream_attempts_total", map[string]string{"outcome": "status_5xx", "upstream": "up"}); n != 2 {
		t.Errorf("attempts{status_5xx} = %v", n)
	}

	up, calls = flaky(t, 3, 503, "")
	e = start(up.URL, cfg(2, ""))
	if resp, _ := post(e); resp.StatusCode != 503 || calls.Load() != 3 {
		t.Errorf("retries exhausted: %d after %d calls", resp.StatusCode, calls.Load())
	}

	clock.take()
	up, calls = flaky(t, 1, 429, "1")
	e = start(up.URL, cfg(1, ""))
	if resp, body := post(e); resp.StatusCode != 200 || calls.Load() != 2 {
		t.Errorf("a 429 with Retry-After 1: %d %s after %d calls", resp.StatusCode, body, calls.Load())
	}
	if w := clock.take(); !slices.Equal(w, []time.Duration{time.Second}) {
		t.Errorf("waits %v, want the upstream's Retry-After: 1s", w)
	}

	up, calls = flaky(t, 1, 429, "60")
	e = start(up.URL, cfg(3, ", retry_max_wait: 5s"))
	if resp, _ := post(e); resp.StatusCode != 429 || calls.Load() != 1 || resp.Header.Get("Retry-After") != "60" {
		t.Errorf("Retry-After over retry_max_wait: %d after %d calls, Retry-After %q", resp.StatusCode, calls.Load(), resp.Header.Get("Retry-After"))
	}
	if w := clock.take(); len(w) != 0 {
		t.Errorf("waited %v for a Retry-After over retry_max_wait", w)
	}

	up, calls = flaky(t, 5, 400, "")
	e = start(up.URL, cfg(3, ""))
	if resp, _ := post(e); resp.StatusCode != 400 || calls.Load() != 1 {
		t.Errorf("a 400 is not retried: %d after %d calls", resp.StatusCode, calls.Load())
	}

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	e = start(dead, cfg(2, ""))
	if resp, _ := post(e); resp.StatusCode != 502 {
		t.Errorf("nothing listening: %d", resp.StatusCode)
	}
	if a := e.WaitAccess(t, 1)[0]; a["attempt_outcomes"] != "connect,connect,connect" {
		t.Errorf("access line %v", a)
	}
}

// An upstream that closes every connection after one response (without
// saying so) costs no request, even with no retries configured: 1,000
// sequential and 1,000 concurrent streamed requests all succeed.
func TestUpstreamClosingConnections(t *testing.T) {
	stream := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	var conns atomic.Int64
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " + strconv.Itoa(len(stream)) + "\r\n\r\n" + stream)
		buf.Flush()
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	e := gatewaytest.Start(t, up.URL, `
upstreams: [{name: up, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: up}]
`)
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`
	check := func(i int) error {
		resp := e.Post(t, body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
			return fmt.Errorf("request %d: %d %s", i, resp.StatusCode, b)
		}
		return nil
	}
	for i := range 1000 {
		if err := check(i); err != nil {
			t.Fatalf("sequential %v", err)
		}
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	var first atomic.Value
	for i := range 1000 {
		wg.Go(func() {
			if err := check(i); err != nil {
				failed.Add(1)
				first.CompareAndSwap(nil, err.Error())
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		for _, l := range e.Access() {
			if l["status"] != int64(200) {
				t.Logf("%v %v", l["attempt_outcomes"], l["error"])
				break
			}
		}
		t.Fatalf("%d of 1,000 concurrent requests failed; first: %v", failed.Load(), first.Load())
	}
	if conns.Load() < 2000 {
		t.Errorf("%d upstream connections for 2,000 requests: the upstream did not close them", conns.Load())
	}
	t.Logf("resent on a fresh connection: %v", e.Metric(t, "toolgate_upstream_attempts_total", map[string]string{"outcome": "reconnected"}))
}

// Fallback routes: when a route's attempts fail before the first byte for
// a reason of the upstream's, the next route in its fallbacks serves the
// request as the client sent it; a request the upstream refused (400) is
// not sent elsewhere.
func TestFallbacks(t *testing.T) {
	down, downCalls := flaky(t, 1000, 503, "")
	bad, badCalls := flaky(t, 1000, 400, "")
	e, s := gatewaytest.StartSim(t, sim.Options{}, strings.NewReplacer("DOWN", down.URL, "BAD", bad.URL).Replace(`
upstreams:
  - {name: down, url: "DOWN/v1"}
  - {name: bad, url: "BAD/v1"}
  - {name: sim, url: "UPSTREAM_URL/v1"}
routes:
  - {name: primary, model: "gpt-x", upstream: down, retries: 1, retry_backoff: 5ms, fallbacks: [backup]}
  - {name: refusing, model: "gpt-bad", upstream: bad, fallbacks: [backup]}
  - {name: backup, model: "backup", upstream: sim, upstream_model: sim-text}
`))
	resp := e.Post(t, `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasSuffix(string(b), "data: [DONE]\n\n") || downCalls.Load() != 2 {
		t.Fatalf("fallback: %d after %d calls to the primary: %s", resp.StatusCode, downCalls.Load(), b)
	}
	if sent := string(s.LastRequest()); !strings.Contains(sent, `"model":"sim-text"`) {
		t.Errorf("the fallback did not send its own model: %s", sent)
	}
	a := e.WaitAccess(t, 1)[0]
	if a["fallback"] != "backup" || a["route"] != "backup" || a["attempt_outcomes"] != "status_5xx,status_5xx,ok" {
		t.Errorf("access line %v", a)
	}
	if n := e.Metric(t, "toolgate_upstream_attempts_total", map[string]string{"upstream": "down", "outcome": "status_5xx"}); n != 2 {
		t.Errorf("attempts on the primary: %v", n)
	}
	resp = e.Post(t, `{"model":"gpt-bad","messages":[{"role":"user","content":"x"}]}`)
	resp.Body.Close()
	if resp.StatusCode != 400 || badCalls.Load() != 1 {
		t.Errorf("a 400 fell back: %d after %d calls", resp.StatusCode, badCalls.Load())
	}
}

// The upstream is the config's, whatever the request says: an
// X-Forwarded-Host header and a base_url field change nothing (the field
// is passed on like any unknown field).
func TestUpstreamFromConfigOnly(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{})
	before := s.Requests()
	resp := e.Post(t, `{"model":"sim-text","base_url":"http://attacker.invalid/v1","messages":[{"role":"user","content":"x"}]}`,
		"X-Forwarded-Host", "attacker.invalid", "X-Forwarded-Proto", "http")
	resp.Body.Close()
	if resp.StatusCode != 200 || s.Requests() != before+1 {
		t.Errorf("status %d, simulator requests %d → %d", resp.StatusCode, before, s.Requests())
	}
}
