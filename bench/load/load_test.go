package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server answers JSON after delay, or an SSE stream ending with [DONE];
// a body containing "fail" gets a 500.
func server(t *testing.T, delay time.Duration) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		buf := make([]byte, 512)
		n, _ := r.Body.Read(buf)
		b.Write(buf[:n])
		time.Sleep(delay)
		switch {
		case strings.Contains(b.String(), "fail"):
			w.WriteHeader(500)
		case strings.Contains(b.String(), "stream"):
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: {}\n\n"))
			w.(http.Flusher).Flush()
			time.Sleep(delay)
			w.Write([]byte("data: [DONE]\n\n"))
		default:
			w.Write([]byte(`{}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// An open loop sends exactly rate × duration requests, each timed from
// its scheduled start (so no latency is below the server's own delay),
// and counts the failed ones. What rate a machine achieves is what make
// bench reports, not something a test can assert.
func TestOpenLoop(t *testing.T) {
	srv := server(t, 5*time.Millisecond)
	c := NewClient(64)
	defer c.CloseIdleConnections()
	r := Open(context.Background(), c, Target{URL: srv.URL, Body: []byte(`{}`)}, 200, time.Second)
	if r.Requests != 200 || r.Errors != 0 || len(r.Latencies) != 200 {
		t.Fatalf("%d requests, %d errors, %d latencies (%s)", r.Requests, r.Errors, len(r.Latencies), r.FirstErr)
	}
	if least := Quantile(r.Latencies, 0); least < 5*time.Millisecond {
		t.Errorf("a latency of %v, below the server's 5ms", least)
	}
	r = Open(context.Background(), c, Target{URL: srv.URL, Body: []byte(`{"fail":1}`)}, 100, 200*time.Millisecond)
	if r.Requests != 20 || r.Errors != r.Requests || !strings.Contains(r.FirstErr, "500") {
		t.Errorf("errors %d of %d: %s", r.Errors, r.Requests, r.FirstErr)
	}
}

// A closed loop keeps each client busy until the duration is over (each
// completes at least one stream), and times each stream's first byte
// before its end (the server pauses between them).
func TestClosedLoopStreams(t *testing.T) {
	srv := server(t, 10*time.Millisecond)
	c := NewClient(8)
	defer c.CloseIdleConnections()
	r := Closed(context.Background(), c, Target{URL: srv.URL, Body: []byte(`{"stream":true}`), Stream: true}, 4, 500*time.Millisecond)
	if r.Errors != 0 || len(r.Latencies) < 4 || len(r.TTFB) != len(r.Latencies) || len(r.Latencies) != r.Requests {
		t.Fatalf("%d requests, %d ok, %d errors, %d ttfb (%s)", r.Requests, len(r.Latencies), r.Errors, len(r.TTFB), r.FirstErr)
	}
	if Quantile(r.TTFB, 1) >= Quantile(r.Latencies, 1) || Quantile(r.TTFB, 0) >= Quantile(r.Latencies, 0) {
		t.Errorf("ttfb %v–%v not below latency %v–%v", Quantile(r.TTFB, 0), Quantile(r.TTFB, 1), Quantile(r.Latencies, 0), Quantile(r.Latencies, 1))
	}
}

func TestHold(t *testing.T) {
	srv := server(t, 2*time.Second)
	c := NewClient(100)
	defer c.CloseIdleConnections()
	var seen int
	open, err := Hold(context.Background(), c, Target{URL: srv.URL, Body: []byte(`{"stream":true}`)}, 50, 500, func(n int) { seen = n })
	if err != nil || open != 50 || seen != 50 {
		t.Fatalf("open %d, seen %d, err %v", open, seen, err)
	}
}

func TestQuantile(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if Quantile(d, 0.5) != 6 || Quantile(d, 0.99) != 10 || Quantile(d, 0) != 1 || Quantile(nil, 0.5) != 0 {
		t.Errorf("%v %v %v", Quantile(d, 0.5), Quantile(d, 0.99), Quantile(d, 0))
	}
}
