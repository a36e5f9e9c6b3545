package observe

import (
	"io"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	l, stop, err := NewLogger(io.Discard, Info, time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	r := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		r.Log(l)
	}
}

// BenchmarkMetricsObserve is one request's metrics, in a loop.
func BenchmarkMetricsObserve(b *testing.B) {
	m := NewMetrics(prometheus.NewRegistry())
	r := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		m.Observe(r)
	}
}
