package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

const clientTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// attrs is a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// A streamed tool call whose first attempt gets a 500 and whose retry
// succeeds: one server span continuing the client's traceparent, two
// client spans (the attempts, siblings under it) with the GenAI
// conventions' attributes and toolgate's own; the upstream gets the
// trace of the attempt that reached it; the access line names the
// trace; no message content on any span unless capture_content is on.
func TestTraceStreamedToolCallWithRetry(t *testing.T) {
	for _, capture := range []bool{false, true} {
		s := sim.New(sim.Options{})
		var calls atomic.Int64
		var mu sync.Mutex
		var seen []string // traceparent per upstream request
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Header.Get("Traceparent"))
			mu.Unlock()
			if calls.Add(1) == 1 {
				w.WriteHeader(500)
				io.WriteString(w, `{"error":{"message":"boom","type":"server_error"}}`)
				return
			}
			s.ServeHTTP(w, r)
		}))
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		opts := gatewaytest.Options{Gateway: func(o *gateway.Options) {
			o.Tracer = tp
			o.Sleep = func(ctx context.Context, d time.Duration) bool { return ctx.Err() == nil }
		}}
		cfg := `
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: sim, retries: 1}]
`
		if capture {
			cfg += "telemetry: {capture_content: true}\n"
		}
		e := gatewaytest.Start(t, up.URL, cfg, opts)
		resp := e.Post(t, `{"model":"sim-tool","stream":true,"max_tokens":300,"messages":[{"role":"user","content":"weather in Paris?"}],
			"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`, "Traceparent", clientTraceparent)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "[DONE]") || !strings.Contains(string(body), "tool_calls") {
			t.Fatalf("response: %d %s", resp.StatusCode, body)
		}
		lines := e.WaitAccess(t, 1)
		up.Close()

		spans := exp.GetSpans().Snapshots()
		var server sdktrace.ReadOnlySpan
		var clients []sdktrace.ReadOnlySpan
		for _, sp := range spans {
			switch sp.SpanKind() {
			case trace.SpanKindServer:
				server = sp
			case trace.SpanKindClient:
				clients = append(clients, sp)
			}
		}
		if server == nil || len(clients) != 2 || len(spans) != 3 {
			t.Fatalf("spans: %d (server %v, %d client)", len(spans), server != nil, len(clients))
		}
		if server.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || server.Parent().SpanID().String() != "00f067aa0ba902b7" || !server.Parent().IsRemote() {
			t.Errorf("the server span does not continue the client's trace: %v parent %v", server.SpanContext().TraceID(), server.Parent().SpanID())
		}
		if server.Name() != "chat sim-tool" {
			t.Errorf("server span name %q", server.Name())
		}
		sa := attrs(server)
		for k, want := range map[attribute.Key]string{
			"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "sim-tool", "gen_ai.response.model": "sim-tool",
			"toolgate.route": "*", "toolgate.upstream": "sim", "toolgate.policy.outcome": "ok", "toolgate.budget.decision": "admitted", "toolgate.outcome": "ok",
		} {
			if got := sa[k].String(); got != want {
				t.Errorf("server span %s = %q, want %q", k, got, want)
			}
		}
		if sa["gen_ai.usage.input_tokens"].AsInt64() != 20 || sa["gen_ai.usage.output_tokens"].AsInt64() == 0 || sa["gen_ai.request.max_tokens"].AsInt64() != 300 ||
			sa["toolgate.attempts"].AsInt64() != 2 || sa["http.response.status_code"].AsInt64() != 200 {
			t.Errorf("server span numbers: %v", sa)
		}
		if fr := sa["gen_ai.response.finish_reasons"].AsStringSlice(); len(fr) != 1 || fr[0] != "tool_calls" {
			t.Errorf("finish reasons %v", fr)
		}
		if _, ok := sa["gen_ai.input.messages"]; ok != capture || capture && !strings.Contains(sa["gen_ai.input.messages"].AsString(), "weather in Paris?") {
			t.Errorf("capture_content %v: gen_ai.input.messages %q", capture, sa["gen_ai.input.messages"].AsString())
		}
		for i, c := range clients {
			ca := attrs(c)
			if c.Parent().SpanID() != server.SpanContext().SpanID() || c.SpanContext().TraceID() != server.SpanContext().TraceID() {
				t.Errorf("client span %d is not a child of the server span", i)
			}
			if c.Name() != "chat sim-tool" || ca["gen_ai.provider.name"].AsString() != "openai" || ca["gen_ai.request.model"].AsString() != "sim-tool" || ca["toolgate.upstream"].AsString() != "sim" {
				t.Errorf("client span %d: %s %v", i, c.Name(), ca)
			}
			for k, v := range ca {
				if strings.Contains(v.String(), "Paris") {
					t.Errorf("client span %d carries content in %s", i, k)
				}
			}
		}
		if o := attrs(clients[0])["toolgate.attempt.outcome"].AsString(); o != "status_5xx" || clients[0].Status().Code != codes.Error {
			t.Errorf("first attempt: %s %v", o, clients[0].Status())
		}
		if o := attrs(clients[1])["toolgate.attempt.outcome"].AsString(); o != "ok" || clients[1].Status().Code == codes.Error || !clients[0].EndTime().Before(clients[1].StartTime().Add(time.Nanosecond)) {
			t.Errorf("second attempt: %s %v", o, clients[1].Status())
		}
		mu.Lock()
		for i, c := range clients {
			if want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + c.SpanContext().SpanID().String() + "-01"; seen[i] != want {
				t.Errorf("upstream request %d traceparent %q, want %q", i+1, seen[i], want)
			}
		}
		mu.Unlock()
		if lines[0]["trace_id"] != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("access line trace_id: %v", lines[0]["trace_id"])
		}
	}
}

// Tracing off: no span, the client's traceparent goes upstream as it
// came, and the access line still names the client's trace.
func TestTraceOff(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{})
	resp := e.Post(t, `{"model":"sim-text","messages":[{"role":"user","content":"x"}]}`, "Traceparent", clientTraceparent)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := s.LastHeader().Get("Traceparent"); got != clientTraceparent {
		t.Errorf("traceparent upstream %q", got)
	}
	if l := e.WaitAccess(t, 1); l[0]["trace_id"] != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("access line: %v", l[0])
	}
}

// gen_ai.response.model is the model the upstream reported (its answer
// says "m"), streamed or not; gen_ai.request.model the client's.
func TestTraceResponseModel(t *testing.T) {
	up, _ := usageUpstream(t)
	exp := tracetest.NewInMemoryExporter()
	e := gatewaytest.Start(t, up.URL, `
upstreams: [{name: up, url: "UPSTREAM_URL"}]
routes: [{model: "*", upstream: up}]
`, gatewaytest.Options{Gateway: func(o *gateway.Options) { o.Tracer = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)) }})
	for i, stream := range []bool{false, true} {
		exp.Reset()
		resp := e.Post(t, `{"model":"gpt-x","stream":`+map[bool]string{true: "true", false: "false"}[stream]+`,"messages":[{"role":"user","content":"x"}]}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		e.WaitAccess(t, i+1) // the span ends before the access line is written
		var server sdktrace.ReadOnlySpan
		for _, s := range exp.GetSpans().Snapshots() {
			if s.SpanKind() == trace.SpanKindServer {
				server = s
			}
		}
		if server == nil {
			t.Fatalf("stream %v: no server span", stream)
		}
		a := attrs(server)
		if a["gen_ai.response.model"].AsString() != "m" || a["gen_ai.request.model"].AsString() != "gpt-x" {
			t.Errorf("stream %v: response model %q, request model %q", stream, a["gen_ai.response.model"].AsString(), a["gen_ai.request.model"].AsString())
		}
	}
}
