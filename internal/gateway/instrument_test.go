package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/observe"
)

// A panic after an answer started breaks the connection off, once the
// request's record is out: the client reads a cut response — an error in
// every SDK — never a stream that merely stops, which an SDK that takes EOF
// for the end would take as complete (docs/spec.md §6). Before anything
// went out, it is a 500 (the scope guard).
func TestPanicAfterCommitBreaksOff(t *testing.T) {
	cfg, err := config.Parse([]byte("upstreams: [{name: u, url: \"http://127.0.0.1:1/v1\"}]\nroutes: [{model: \"*\", upstream: u}]\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	metrics := observe.NewMetrics(reg)
	g, err := New(Options{Config: cfg, Logger: zap.NewNop(), Metrics: metrics, Pending: NewPending(cfg.Server, metrics)})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.instrument(chatAPI{}, func(w http.ResponseWriter, r *http.Request, rec *observe.Record) error {
		if r.URL.Path == "/late" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"choices\":[]}\n\n")
			w.(http.Flusher).Flush()
		}
		panic("a bug")
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/late")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || !strings.Contains(string(b), "choices") {
		t.Errorf("a panic after the answer started: read %q, %v; want the first event, then an error", b, err)
	}
	resp, err = http.Get(srv.URL + "/early")
	if err != nil || resp.StatusCode != 500 {
		t.Fatalf("a panic before anything went out: %v %v", resp, err)
	}
	resp.Body.Close()
}
