package observe

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The server span's and the client spans' attributes come from the
// record, as the log line and the metrics do: the OpenTelemetry GenAI
// semantic conventions' (gen_ai.*) and toolgate's own (toolgate.*). No
// message content: that is the gateway's to add, and only when
// telemetry.capture_content says so.

// EndServerSpan names the request's server span after what it served
// ("chat gpt-4o"), sets its attributes and status from the finished
// record, and ends it.
func (r *Record) EndServerSpan(span trace.Span) {
	if !span.IsRecording() {
		return
	}
	op := "chat"
	if r.Path != "/v1/chat/completions" && r.Path != "/v1/responses" {
		op = r.Path
	}
	if r.RequestModel != "" {
		span.SetName(op + " " + r.RequestModel)
	}
	span.SetAttributes(r.ownAttributes(r.genAIAttributes())...)
	if r.Status >= 500 || r.Outcome != OutcomeOK && r.Outcome != OutcomeRejected && r.Outcome != OutcomeClientGone {
		span.SetStatus(codes.Error, r.Outcome)
	}
	span.End()
}

// genAIAttributes are the server span's attributes by the GenAI semantic
// conventions (and HTTP's).
func (r *Record) genAIAttributes() []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("http.request.method", r.Method),
		attribute.String("url.path", r.Path),
		attribute.Int("http.response.status_code", r.Status),
	}
	responseModel := r.ResponseModel
	if responseModel == "" {
		responseModel = r.Model // the model it was sent to
	}
	attrs = appendNonEmpty(attrs, "gen_ai.request.model", r.RequestModel, "gen_ai.response.model", responseModel)
	if n := len(r.Attempts); n > 0 {
		attrs = appendNonEmpty(attrs, "gen_ai.provider.name", r.Attempts[n-1].Provider)
	}
	if r.FinishReason != "" {
		attrs = append(attrs, attribute.StringSlice("gen_ai.response.finish_reasons", []string{r.FinishReason}))
	}
	if r.MaxTokens > 0 {
		attrs = append(attrs, attribute.Int64("gen_ai.request.max_tokens", r.MaxTokens))
	}
	if r.TotalTokens > 0 {
		attrs = append(attrs, attribute.Int64("gen_ai.usage.input_tokens", r.PromptTokens), attribute.Int64("gen_ai.usage.output_tokens", r.CompletionTokens))
	}
	return attrs
}

// ownAttributes appends toolgate's own: what it did to the request.
func (r *Record) ownAttributes(attrs []attribute.KeyValue) []attribute.KeyValue {
	attrs = append(attrs, attribute.String("toolgate.outcome", r.Outcome), attribute.String("toolgate.request_id", r.RequestID),
		attribute.Int("toolgate.attempts", r.Calls()))
	attrs = appendNonEmpty(attrs, "toolgate.route", r.Route, "toolgate.key", r.Key, "toolgate.upstream", r.Upstream,
		"toolgate.repair", r.Repair, "toolgate.normalize", r.Normalize, "toolgate.normalizations", r.Fixes(),
		"toolgate.fallback", r.Fallback, "toolgate.reasoning", r.Reasoning, "toolgate.error_kind", r.ErrorKind)
	var cooled []string // deployments this request put in cooldown
	for _, a := range r.Attempts {
		if a.Cooldown != "" {
			cooled = append(cooled, a.Upstream+": "+a.Cooldown)
		}
	}
	if len(cooled) > 0 {
		attrs = append(attrs, attribute.StringSlice("toolgate.cooldowns", cooled))
	}
	if n := len(r.Attempts); n > 0 {
		attrs = appendNonEmpty(attrs, "toolgate.policy.outcome", r.Attempts[n-1].Verdict)
	}
	if r.CostModel != "" {
		attrs = append(attrs, attribute.Float64("toolgate.cost_usd", r.CostUSD))
	}
	// The budget's decision: what refused or cut the request, else admitted.
	decision := "admitted"
	if r.Limited != "" {
		decision = r.Limited
	}
	attrs = append(attrs, attribute.String("toolgate.budget.decision", decision))
	if repairs := total(r.Repairs); repairs > 0 {
		attrs = append(attrs, attribute.Int("toolgate.repairs", repairs))
	}
	return attrs
}

// ClientSpanStart is a client span's attributes known before the call:
// what is asked of which provider.
func (a *Attempt) ClientSpanStart() []attribute.KeyValue {
	return appendNonEmpty([]attribute.KeyValue{attribute.String("gen_ai.operation.name", "chat")},
		"gen_ai.provider.name", a.Provider, "gen_ai.request.model", a.Model, "toolgate.route", a.Route, "toolgate.upstream", a.Upstream)
}

// EndClientSpan sets what became of an upstream attempt on its client
// span and ends it.
func (a *Attempt) EndClientSpan(span trace.Span) {
	if !span.IsRecording() {
		return
	}
	attrs := appendNonEmpty([]attribute.KeyValue{attribute.String("toolgate.attempt.outcome", string(a.Outcome))},
		"toolgate.policy.outcome", a.Verdict)
	if fixes := total(a.Fixes); fixes > 0 {
		attrs = append(attrs, attribute.Int("toolgate.normalizations", fixes))
	}
	span.SetAttributes(attrs...)
	if a.Outcome != AttemptOK {
		span.SetStatus(codes.Error, string(a.Outcome))
	}
	span.End()
}

// total sums counts.
func total(counts []Count) int {
	n := 0
	for _, c := range counts {
		n += c.N
	}
	return n
}

// appendNonEmpty appends string attributes given as key, value pairs,
// leaving out empty values.
func appendNonEmpty(attrs []attribute.KeyValue, kv ...string) []attribute.KeyValue {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			attrs = append(attrs, attribute.String(kv[i], kv[i+1]))
		}
	}
	return attrs
}
