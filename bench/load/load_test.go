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

func TestOpenLoop(t *testing.T) {
	srv := server(t, 5*time.Millisecond)
	c := NewClient(64)
	defer c.CloseIdleConnections()
	r := Open(context.Background(), c, Target{URL: srv.URL, Body: []byte(`{}`)}, 200, time.Second)
	if r.Requests != 200 || r.Errors != 0 || len(r.Latencies) != 200 {
		t.Fatalf("%d requests, %d errors, %d latencies (%s)", r.Requests, r.Errors, len(r.Latencies), r.FirstErr)
	}
	if rate := r.Rate(); rate < 150 || rate > 210 {
		t.Errorf("achieved %.0f/s, want about 200", rate)
	}
	if p50 := Quantile(r.Latencies, 0.5); p50 < 5*time.Millisecond || p50 > 200*time.Millisecond {
		t.Errorf("p50 %v, the server takes 5ms", p50)
	}
	r = Open(context.Background(), c, Target{URL: srv.URL, Body: []byte(`{"fail":1}`)}, 100, 200*time.Millisecond)
	if r.Errors != r.Requests || r.Requests == 0 || !strings.Contains(r.FirstErr, "500") {
		t.Errorf("errors %d of %d: %s", r.Errors, r.Requests, r.FirstErr)
	}
}

func TestClosedLoopStreams(t *testing.T) {
	srv := server(t, 10*time.Millisecond)
	c := NewClient(8)
	defer c.CloseIdleConnections()
	r := Closed(context.Background(), c, Target{URL: srv.URL, Body: []byte(`{"stream":true}`), Stream: true}, 4, 500*time.Millisecond)
	if r.Errors != 0 || len(r.Latencies) < 20 || len(r.TTFB) != len(r.Latencies) {
		t.Fatalf("%d ok, %d errors, %d ttfb (%s)", len(r.Latencies), r.Errors, len(r.TTFB), r.FirstErr)
	}
	if Quantile(r.TTFB, 0.5) >= Quantile(r.Latencies, 0.5) {
		t.Errorf("ttfb %v not below latency %v", Quantile(r.TTFB, 0.5), Quantile(r.Latencies, 0.5))
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
