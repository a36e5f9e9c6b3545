package gateway

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/internal/observe"
)

// Tracing (Options.Tracer): a server span per request, continuing the
// client's traceparent, and a client span per upstream attempt under it,
// whose context goes upstream in traceparent. What the spans say comes
// from the record (observe.Record.EndServerSpan). With tracing off
// nothing is started (no allocation on the request path) and the
// client's traceparent is forwarded as it came; either way the access
// line names the trace.

// startSpan starts the request's server span, returning the request
// carrying it, and notes the trace id in the record. Off, the span is a
// no-op and the trace id is the client's, if it sent one.
func (g *Gateway) startSpan(r *http.Request, rec *observe.Record) (*http.Request, trace.Span) {
	if g.tracer == nil {
		if r.Header.Get("Traceparent") != "" {
			if sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))); sc.HasTraceID() {
				rec.TraceID = sc.TraceID().String()
			}
		}
		return r, trace.SpanFromContext(r.Context())
	}
	parent := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := g.tracer.Start(parent, r.Method+" "+r.URL.Path, trace.WithSpanKind(trace.SpanKindServer))
	if sc := span.SpanContext(); sc.HasTraceID() {
		rec.TraceID = sc.TraceID().String()
	}
	return r.WithContext(ctx), span
}

// startAttempt starts an upstream attempt's client span and puts its
// context in the traceparent sent upstream.
func (g *Gateway) startAttempt(ctx context.Context, x *exchange, a *observe.Attempt) (context.Context, trace.Span) {
	if g.tracer == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	ctx, span := g.tracer.Start(ctx, "chat "+a.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(a.ClientSpanStart()...))
	if span.IsRecording() {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(x.r.Header))
	}
	return ctx, span
}
