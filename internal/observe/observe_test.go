package observe

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// One access line per record, with the fields a reader needs and nothing
// that was not set.
func TestRecordLog(t *testing.T) {
	var buf bytes.Buffer
	log, _, err := NewLogger(&buf, Info, 0)
	if err != nil {
		t.Fatal(err)
	}
	(&Record{RequestID: "r1", Method: "POST", Path: "/v1/chat/completions", Route: "default", Upstream: "sim",
		Model: "m", Stream: true, Status: 200, Outcome: OutcomeOK, Duration: 1500 * time.Microsecond,
		TTFB: 250 * time.Microsecond, Repair: "sealed=1; dropped=0; moved=0"}).Log(log)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	if line["msg"] != "access" || line["request_id"] != "r1" || line["duration_ms"] != 1.5 || line["ttfb_ms"] != 0.25 ||
		line["repair"] != "sealed=1; dropped=0; moved=0" || line["route"] != "default" {
		t.Errorf("%v", line)
	}
	if _, ok := line["error"]; ok {
		t.Errorf("an unset field was logged: %v", line)
	}
	if _, err := Level(0).Parse("loud"); err == nil || err.Error() != `must be debug, info, warn or error, got "loud"` {
		t.Errorf("a bad level: %v", err)
	}
}

// Buffered logs: info lines wait for the flush (or stop), warnings are
// written at once.
func TestBufferedLog(t *testing.T) {
	var buf syncBuffer
	log, stop, err := NewLogger(&buf, Info, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("access")
	if buf.String() != "" {
		t.Fatalf("an info line was not buffered: %s", buf.String())
	}
	log.Warn("state store unavailable")
	if !strings.Contains(buf.String(), "state store unavailable") || strings.Contains(buf.String(), "access") {
		t.Fatalf("the warning was held, or the info line was not: %s", buf.String())
	}
	stop()
	if !strings.Contains(buf.String(), `"msg":"access"`) {
		t.Fatalf("stop did not write the pending line: %s", buf.String())
	}
}

// Flushes write the buffered lines and never sync the writer: an fsync
// of a stderr sent to a file would hold every line's lock while the disk
// works.
func TestBufferedLogDoesNotSync(t *testing.T) {
	w := &syncCounter{}
	log, stop, err := NewLogger(w, Info, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("access")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(w.String(), `"msg":"access"`) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	log.Warn("urgent")
	stop()
	if !strings.Contains(w.String(), `"msg":"access"`) || !strings.Contains(w.String(), `"msg":"urgent"`) {
		t.Fatalf("lines not written: %s", w.String())
	}
	if n := w.syncs.Load(); n != 0 {
		t.Errorf("the log's writer was synced %d times", n)
	}
}

// syncCounter is a syncBuffer with a Sync method, as an *os.File has.
type syncCounter struct {
	syncBuffer
	syncs atomic.Int32
}

func (s *syncCounter) Sync() error { s.syncs.Add(1); return nil }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// The request id is the client's when sensible, else generated; it is
// returned and reaches the handler's context.
func TestRequestID(t *testing.T) {
	var seen string
	h := RequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = RequestIDFrom(r.Context()) }))
	for _, tc := range []struct{ in, want string }{{"abc-1", "abc-1"}, {"", ""}, {strings.Repeat("x", 200), ""}, {"a b", ""}} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set(RequestIDHeader, tc.in)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		got := w.Header().Get(RequestIDHeader)
		if got != seen || (tc.want != "" && got != tc.want) || (tc.want == "" && len(got) != 24) {
			t.Errorf("in %q: header %q, context %q", tc.in, got, seen)
		}
	}
}

// The metrics pass the linter and count from records.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	m.Observe(&Record{Route: "", Status: 404, Duration: time.Millisecond})
	m.Observe(&Record{Route: "r", Upstream: "u", Status: 502, ErrorKind: "status", Duration: time.Millisecond, UpstreamDuration: time.Millisecond,
		Attempts: []Attempt{{Route: "r", Upstream: "u", Outcome: "violation", Verdict: "violation", Fixes: []Count{{Name: "index_reuse", N: 2}}}}})
	done := m.StreamStarted("r")
	done()
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("%v %v", err, problems)
	}
	want := `
# HELP toolgate_requests_total Requests handled, by route and HTTP status code (499: the client went away first).
# TYPE toolgate_requests_total counter
toolgate_requests_total{code="404",route="none"} 1
toolgate_requests_total{code="502",route="r"} 1
# HELP toolgate_upstream_errors_total Failed upstream calls, by upstream and kind (connect, timeout, status, stream, protocol).
# TYPE toolgate_upstream_errors_total counter
toolgate_upstream_errors_total{kind="status",upstream="u"} 1
# HELP toolgate_normalizations_total Response normalizations applied to an upstream's tool-call stream, by upstream and kind.
# TYPE toolgate_normalizations_total counter
toolgate_normalizations_total{kind="index_reuse",upstream="u"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "toolgate_requests_total", "toolgate_upstream_errors_total", "toolgate_normalizations_total"); err != nil {
		t.Error(err)
	}
}

// With key names hidden (metrics.key_labels: false), the per-key series are
// labelled by a pseudonym, the same for a key every time, and no key's
// name appears on /metrics.
func TestHiddenKeyNames(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg, MetricsOptions{HideKeyNames: true})
	for range 2 {
		m.Observe(&Record{Route: "r", Key: "team-secret-name", Status: 200, PromptTokens: 5, CostModel: "m", CostUSD: 0.5})
	}
	m.KeyStarted("team-secret-name")()
	var out strings.Builder
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		out.WriteString(mf.String())
	}
	if strings.Contains(out.String(), "team-secret-name") {
		t.Error("a key's name is on /metrics")
	}
	p := KeyPseudonym("team-secret-name")
	if got := testutil.ToFloat64(m.cost.WithLabelValues(p, "r", "m")); got != 1 || len(p) != len("key-")+8 || p == KeyPseudonym("other") {
		t.Errorf("cost under %s: %v", p, got)
	}
}

// The Grafana dashboard in deploy/ charts only metrics toolgate exports.
func TestDashboardMetrics(t *testing.T) {
	b, err := os.ReadFile("../../deploy/grafana/toolgate.json")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	// Touch every family so that Gather lists it.
	m.Observe(&Record{Route: "r", Key: "k", Status: 200, Stream: true, TTFB: 1, UpstreamDuration: 1, Upstream: "u", ClientGone: true, ErrorKind: "connect",
		Repairs: []Count{{Name: "sealed", N: 1}}, InvalidArguments: 1, ReasoningMiss: 1, ReasoningRestored: 1, Reasoning: "low", Limited: "maxCalls",
		PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2, StateErrors: []string{"admit"}, StateMode: "fail_open",
		CostUSD: 0.5, CostModel: "m",
		Attempts: []Attempt{{Route: "r", Upstream: "u", Outcome: "ok", Verdict: "ok", Fixes: []Count{{Name: "k", N: 1}}, Cooldown: "rate_limited"}}})
	m.KeyStarted("k")()
	m.UpstreamInFlight("u").Inc()
	m.StreamStarted("r")()
	m.PendingRefused("ip")
	mfs, _ := reg.Gather()
	known := map[string]bool{}
	for _, mf := range mfs {
		known[mf.GetName()] = true
	}
	used := regexp.MustCompile(`(toolgate|process|go)_[a-z_]+`).FindAllString(string(b), -1)
	if len(used) < 10 {
		t.Fatalf("only %d metric names in the dashboard", len(used))
	}
	for _, name := range used {
		base := strings.TrimSuffix(name, "_bucket")
		if !known[name] && !known[base] {
			t.Errorf("the dashboard charts %s, which toolgate does not export", name)
		}
	}
}
