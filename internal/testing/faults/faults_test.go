package faults

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
	"github.com/toolgate/toolgate/internal/testing/wait"
)

var full = flag.Bool("faults.full", false, "run the full-size suite (make faults)")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	chunk = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}` + "\n\n"
	final = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
)

// upstream misbehaves according to the request's model name.
func upstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var rateLimited sync.Map  // per request id: the first try is refused
	var canceled atomic.Int64 // healthy streams the caller left before their end
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		model := string(body)
		flush := func() { w.(http.Flusher).Flush() }
		switch {
		case strings.Contains(model, `"reset"`):
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, chunk+chunk)
			flush()
			panic(http.ErrAbortHandler) // the connection drops mid-stream
		case strings.Contains(model, `"stall-headers"`):
			// Silent until the gateway gives up on it: its timeout fires
			// because nothing ever comes, not because the machine is slow.
			<-r.Context().Done()
			return
		case strings.Contains(model, `"stall-stream"`):
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, chunk)
			flush()
			<-r.Context().Done()
			return
		case strings.Contains(model, `"huge"`):
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"`)
			big := strings.Repeat("x", 64<<10)
			for range 160 { // 10 MB in one event
				if _, err := io.WriteString(w, big); err != nil {
					return
				}
			}
			io.WriteString(w, `"}}]}`+"\n\n"+final)
		case strings.Contains(model, `"malformed"`):
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, chunk+`data: {"choices":[{"index":0,"delta":{"content":`+"\n\n"+final)
		case strings.Contains(model, `"rate-limited"`):
			id := r.Header.Get("X-Test-Id")
			if _, seen := rateLimited.LoadOrStore(id, true); !seen {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit_error"}}`)
				return
			}
			fallthrough
		default: // a healthy stream, 20 chunks 5 ms apart
			w.Header().Set("Content-Type", "text/event-stream")
			for range 20 {
				if _, err := io.WriteString(w, chunk); err != nil {
					canceled.Add(1)
					return
				}
				flush()
				select {
				case <-r.Context().Done():
					canceled.Add(1)
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
			io.WriteString(w, final)
		}
	}))
	return srv, &canceled
}

type env struct {
	*gatewaytest.Env
	// canceled counts the healthy streams whose caller (the gateway) left
	// before their end, seen from the upstream.
	canceled *atomic.Int64
	close    func()
}

func start(t testing.TB) *env {
	up, canceled := upstream(t.(*testing.T))
	// Two names for one upstream: the stalling models go through "stall",
	// whose short timeouts are what those faults test (the upstream never
	// answers, so they fire however fast the machine is); every other
	// fault goes through "up", whose timeouts are far longer than any
	// machine needs, so they never decide an outcome.
	e := gatewaytest.Start(t, up.URL, `
upstreams:
  - {name: up, url: "UPSTREAM_URL/v1", header_timeout: 60s, read_idle_timeout: 60s, max_event_bytes: 1048576, forward_headers: [x-test-id]}
  - {name: stall, url: "UPSTREAM_URL/v1", header_timeout: 1s, read_idle_timeout: 1s}
routes:
  - {model: "stall-*", upstream: stall, retries: 1, retry_backoff: 10ms}
  - {model: "*", upstream: up, retries: 1, retry_backoff: 10ms}
`)
	return &env{Env: e, canceled: canceled, close: func() { e.Close(); up.Close() }}
}

// result is what a client saw.
type result struct {
	status int
	body   string
	err    error
}

func (e *env) post(ctx context.Context, model string, id int) result {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+"/chat/completions",
		strings.NewReader(`{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Test-Id", strconv.Itoa(id))
	resp, err := e.HTTP.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, body: string(b), err: err}
}

func (e *env) metric(t testing.TB, name, label, value string) float64 {
	return e.Metric(t, name, map[string]string{label: value})
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Each fault, requests at a time: what the client receives, the metric
// that counts it, and afterwards no goroutine left and memory back to its
// baseline.
func TestFaults(t *testing.T) {
	n := 20
	if *full {
		n = 500
	}
	streamEnded := func(r result) string { // an error event and no [DONE]
		if r.status != 200 || !strings.Contains(r.body, `"error":{`) || strings.Contains(r.body, "[DONE]") {
			return fmt.Sprintf("want an error event: %d %q %v", r.status, trim(r.body), r.err)
		}
		return ""
	}
	status := func(code int, errCode string) func(result) string {
		return func(r result) string {
			if r.status != code || !strings.Contains(r.body, errCode) {
				return fmt.Sprintf("want %d %s: %d %q %v", code, errCode, r.status, trim(r.body), r.err)
			}
			return ""
		}
	}
	for _, f := range []struct {
		model  string
		check  func(result) string
		metric [3]string // name, label, value: must count n
	}{
		{"reset", streamEnded, [3]string{"toolgate_upstream_attempts_total", "outcome", "incomplete"}},
		{"stall-headers", status(504, "upstream_timeout"), [3]string{"toolgate_upstream_errors_total", "kind", "timeout"}},
		{"stall-stream", streamEnded, [3]string{"toolgate_upstream_attempts_total", "outcome", "incomplete"}},
		{"huge", status(502, "upstream_stream_incomplete"), [3]string{"toolgate_upstream_attempts_total", "outcome", "incomplete"}},
		{"malformed", streamEnded, [3]string{"toolgate_completions_total", "outcome", "violation"}},
		{"rate-limited", func(r result) string { // a successful retry
			if r.status != 200 || !strings.HasSuffix(r.body, "data: [DONE]\n\n") {
				return fmt.Sprintf("want a retried stream: %d %q %v", r.status, trim(r.body), r.err)
			}
			return ""
		}, [3]string{"toolgate_upstream_attempts_total", "outcome", "status_429"}},
	} {
		t.Run(f.model, func(t *testing.T) {
			base, ignore := heap(), goleak.IgnoreCurrent()
			e := start(t)
			var wg sync.WaitGroup
			var failures atomic.Int64
			var first atomic.Value
			sem := make(chan struct{}, 50)
			for i := range n {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					if msg := f.check(e.post(context.Background(), f.model, i)); msg != "" {
						failures.Add(1)
						first.CompareAndSwap(nil, msg)
					}
				})
			}
			wg.Wait()
			if failures.Load() > 0 {
				t.Errorf("%d of %d: %v", failures.Load(), n, first.Load())
			}
			// huge: each of the route's two attempts breaks off.
			want := float64(n)
			if f.model == "huge" {
				want = float64(2 * n)
			}
			if got := e.metric(t, f.metric[0], f.metric[1], f.metric[2]); got != want {
				outcomes := map[string]int{}
				for _, l := range e.Access() {
					outcomes[fmt.Sprint(l["attempt_outcomes"])]++
				}
				t.Errorf("%s{%s=%q} = %v, want %v; attempts seen: %v", f.metric[0], f.metric[1], f.metric[2], got, want, outcomes)
			}
			e.close()
			settle(t, ignore, base)
		})
	}
}

// Clients that leave at random points, each before its stream's end:
// each departure cancels its upstream call (counted on the upstream's
// side), each is counted as a client disconnect, and nothing leaks.
func TestClientsLeave(t *testing.T) {
	n := 40
	if *full {
		n = 1000
	}
	base, ignore := heap(), goleak.IgnoreCurrent()
	e := start(t)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 50)
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+"/chat/completions",
				strings.NewReader(`{"model":"healthy","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			resp, err := e.HTTP.Do(req)
			if err != nil {
				return
			}
			// At most 7 of the stream's 22 events: the client always leaves
			// before the end.
			r := bufio.NewReader(resp.Body)
			for range rand.IntN(15) {
				if _, err := r.ReadString('\n'); err != nil {
					break
				}
			}
			cancel()
			resp.Body.Close()
		})
	}
	wg.Wait()
	wait.Until(wait.Patience, func() bool {
		return e.canceled.Load() >= int64(n) && e.metric(t, "toolgate_client_disconnects_total", "route", "*") >= float64(n)
	})
	if got := e.canceled.Load(); got != int64(n) {
		t.Errorf("%d of %d departures cancelled their upstream call", got, n)
	}
	if got := e.metric(t, "toolgate_client_disconnects_total", "route", "*"); got != float64(n) {
		t.Errorf("toolgate_client_disconnects_total = %v, want %d", got, n)
	}
	e.close()
	settle(t, ignore, base)
}

// settle waits for every goroutine the test started to end (those running
// before it, ignore, aside) and checks that the heap is back near its
// baseline.
func settle(t *testing.T, ignore goleak.Option, heapBase uint64) {
	t.Helper()
	wait.NoLeaks(t, ignore)
	if h := heap(); h > heapBase+8<<20 {
		t.Errorf("heap %d MB after the fault, %d MB before", h>>20, heapBase>>20)
	}
}

// A load run: concurrent streams for a while, 5% of them faulted (reset,
// stalled or malformed), counting completed, errored and leaked, with the
// process's peak RSS.
func TestLoad(t *testing.T) {
	streams, d := 200, 3*time.Second
	if *full {
		streams, d = 2000, 60*time.Second
	}
	ignore := goleak.IgnoreCurrent()
	e := start(t)

	faults := []string{"reset", "stall-stream", "malformed"}
	var completed, errored, unexpected atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for w := range streams {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				model, faulted := "healthy", rand.IntN(100) < 5
				if faulted {
					model = faults[(w+i)%len(faults)]
				}
				r := e.post(context.Background(), model, w*1_000_000+i)
				ok := r.status == 200 && strings.HasSuffix(r.body, "data: [DONE]\n\n")
				switch {
				case ok && !faulted:
					completed.Add(1)
				case !ok && faulted:
					errored.Add(1)
				default:
					unexpected.Add(1)
				}
			}
		})
	}
	wg.Wait()
	e.close()
	t.Logf("%d streams for %v: %d completed, %d faulted and reported as errors, %d unexpected, peak RSS %s",
		streams, d, completed.Load(), errored.Load(), unexpected.Load(), peakRSS())
	if unexpected.Load() > 0 || completed.Load() == 0 {
		t.Errorf("unexpected outcomes %d, completed %d", unexpected.Load(), completed.Load())
	}
	wait.NoLeaks(t, ignore)
}

func peakRSS() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
