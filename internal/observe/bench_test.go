package observe

import (
	"bytes"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// benchRecord is a streamed request's record as the benchmark's load
// point leaves it: answered, with usage.
func benchRecord() *Record {
	return &Record{RequestID: "01JABCDEFGHJKMNPQRSTVWXYZ0", Method: "POST", Path: "/v1/chat/completions", Status: 200,
		Outcome: "ok", Duration: 1500 * time.Microsecond, BytesIn: 450, BytesOut: 9000, Route: "*", Upstream: "sim",
		Model: "gpt-4o-mini", UpstreamDuration: time.Millisecond, Stream: true, TTFB: 800 * time.Microsecond,
		TotalTokens: 60, PromptTokens: 10, CompletionTokens: 50, FinishReason: "stop"}
}

// BenchmarkRecordLog is the access line of one request, with the gateway's
// encoder and buffer, in a loop (warm caches): docs/performance.md sets it
// beside the same line's share of a request in the running gateway.
func BenchmarkRecordLog(b *testing.B) {
	var out countingWriter
	l, stop, err := NewLogger(&out, Info, time.Second)
	if err != nil {
		b.Fatal(err)
	}
	r := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		r.Log(l)
	}
	stop()
	if out.lines < b.N {
		b.Fatalf("%d access lines written for %d requests", out.lines, b.N)
	}
}

// countingWriter counts the lines written to it.
type countingWriter struct{ lines int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.lines += bytes.Count(p, []byte("\n"))
	return len(p), nil
}

// BenchmarkMetricsObserve is one request's metrics, in a loop.
func BenchmarkMetricsObserve(b *testing.B) {
	m := NewMetrics(prometheus.NewRegistry())
	r := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		m.Observe(r)
	}
	if n := testutil.ToFloat64(m.requests.WithLabelValues(routeLabel(r.Route), "200")); n != float64(b.N) {
		b.Fatalf("%v requests counted for %d", n, b.N)
	}
}
