package observe

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// The server span says what the record says: a request whose first
// deployment answered 429 and cooled down and whose second answered, cut
// by max_output_chars.
func TestServerSpanFromRecord(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	_, span := tp.Tracer("t").Start(context.Background(), "POST /v1/chat/completions")
	r := &Record{Path: "/v1/chat/completions", Method: "POST", Status: 200, Outcome: OutcomeOK, RequestModel: "gpt-4o", Model: "gpt-4o-2024",
		Route: "r", Limited: "maxOutputChars", Repairs: []Count{{Name: "sealed", N: 2}, {Name: "moved", N: 1}}, CostUSD: 0.25, CostModel: "gpt-4o",
		Attempts: []Attempt{{Upstream: "east", Outcome: "status_429", Cooldown: "rate_limited", Provider: "openai"}, {Upstream: "west", Outcome: "ok", Verdict: "ok", Provider: "anthropic"}}}
	r.EndServerSpan(span)
	spans := exp.GetSpans().Snapshots()
	if len(spans) != 1 || spans[0].Name() != "chat gpt-4o" || spans[0].Status().Code == codes.Error {
		t.Fatalf("spans: %v", spans)
	}
	got := map[attribute.Key]attribute.Value{}
	for _, kv := range spans[0].Attributes() {
		got[kv.Key] = kv.Value
	}
	if c := got["toolgate.cooldowns"].AsStringSlice(); len(c) != 1 || c[0] != "east: rate_limited" {
		t.Errorf("cooldowns %v", c)
	}
	for k, want := range map[attribute.Key]string{"gen_ai.provider.name": "anthropic", "gen_ai.response.model": "gpt-4o-2024", "toolgate.budget.decision": "maxOutputChars", "toolgate.policy.outcome": "ok"} {
		if got[k].AsString() != want {
			t.Errorf("%s = %q, want %q", k, got[k].AsString(), want)
		}
	}
	if got["toolgate.repairs"].AsInt64() != 3 || got["toolgate.cost_usd"].AsFloat64() != 0.25 || got["toolgate.attempts"].AsInt64() != 2 {
		t.Errorf("numbers: %v", got)
	}
	if _, ok := got["gen_ai.usage.input_tokens"]; ok {
		t.Error("usage without tokens")
	}
}
