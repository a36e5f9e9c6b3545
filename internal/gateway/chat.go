package gateway

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/wire"
)

// exchange is one chat request as it travels the path: who sent it, what
// it asked (decoded once, never changed: every stage derives what it sends
// from it, so a retry or a fallback decodes nothing again), and the
// record its stages' results are written into. It is owned by the
// request's goroutine.
type exchange struct {
	w        http.ResponseWriter
	r        *http.Request
	rec      *observe.Record
	key      *auth.Key // nil when the gateway is open
	req      *wire.ChatRequest
	plan     *plan // the route the model matched
	admitted bool  // counted admission ran (once per request, whatever the route)
	// reserved is the spend admission reserved (nano-dollars), in the
	// period holding admittedAt; settle replaces it by the real cost.
	reserved   int64
	admittedAt time.Time
	// outputLimit is a forwarded body's max_tokens (0: none), for its
	// reservation; model the model it names (the route's when none).
	outputLimit int64
	model       string
	// api is the client's API: it writes the answer and failures.
	api clientAPI
	// edge is the request of a client API other than chat completions
	// (a *responsesCall, a *messagesCall), nil for chat completions;
	// translations are its request as each shape of route takes it, req
	// the first's.
	edge         edge
	translations []translation
	// released: a stream committed and let go of req; nothing may be
	// tried again.
	released bool
}

// handle serves a request of one client API (POST /v1/chat/completions,
// /v1/responses, /v1/messages): receive the request, then serve it on its
// route and, while the upstream is what failed, on the route's fallbacks.
// Each stage is one call with one result; only handle and the functions
// it calls by name branch on them. A failure before anything was written
// is returned, for instrument to write in the API's shape.
//
//	receive  key, body, decoded request, route          (chat.go)
//	prepare  the request to send, derived per route     (prepare.go)
//	admit    the counted admission, once                (admit.go)
//	attempt  send, relay and judge, retried             (attempt.go, stream.go, whole.go)
//	fail     the one error table                        (errors.go)
func (g *Gateway) handle(api clientAPI) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, rec *observe.Record) error {
		x, err := g.receive(w, r, rec, api)
		if err != nil {
			return err
		}
		defer g.metrics.KeyStarted(rec.Key)()
		defer g.settle(x)
		return g.serve(x)
	}
}

// inbound decodes a request of another client API into x.edge (and what
// the answer's translation needs) and returns the plan of the route its
// model matches, for which it is translated first.
type inbound func(x *exchange, body []byte) (*plan, error)

// receive checks the key (before a byte of the body is read: a request
// without one costs no more than its headers), reads the body, translates
// it (in, for another client API), decodes it, and finds the route.
func (g *Gateway) receive(w http.ResponseWriter, r *http.Request, rec *observe.Record, api clientAPI) (*exchange, error) {
	key, err := g.checkKey(w, r)
	if err != nil {
		return nil, err
	}
	x := &exchange{w: w, r: r, rec: rec, key: key, api: api}
	if key != nil {
		rec.Key = key.Name
	}
	body, err := g.readBody(w, r)
	g.pending.received(r)
	rec.BytesIn = int64(len(body))
	if err != nil {
		return nil, err
	}
	if x.plan, err = g.decode(x, body, api.inbound(g)); err != nil {
		return nil, err
	}
	rec.Stream = x.req.Stream
	g.noteRequest(x)
	if n := len(x.req.Messages); n > g.cfg.Server.MaxMessages {
		return nil, &wire.DecodeError{Kind: wire.KindMissing, Param: "messages", Offset: -1,
			Msg: fmt.Sprintf("has %d messages; this gateway accepts at most %d (server.max_messages)", n, g.cfg.Server.MaxMessages)}
	}
	return x, nil
}

// planFor is the plan of the route model matches, once the request's
// key may use that model and is not at one of its rate or spend limits:
// decided from the model member before anything costly. The request is filed under that route from then on, so that a
// refusal's record names it.
func (g *Gateway) planFor(x *exchange, model string) (*plan, error) {
	p, _, ok := g.routeOf.find(model)
	if !ok {
		return nil, &RouteError{Model: model}
	}
	x.filed(p, model)
	if err := auth.Allow(x.key, model); err != nil {
		return p, err
	}
	return p, g.precheck(x)
}

// filed files the request under route p, before anything is sent: a
// refusal's record names the route it matched.
func (x *exchange) filed(p *plan, model string) {
	x.rec.Route, x.rec.Upstream, x.rec.Model = p.name, p.upstream.name, wire.Clip(p.targetModel(model))
}

// decode reads the request and returns the plan of its route: a chat
// request as it is, another client API's through in (which finds the
// plan), then translated for its route's upstream.
func (g *Gateway) decode(x *exchange, body []byte, in inbound) (*plan, error) {
	if in == nil {
		var err error
		if x.req, err = wire.DecodeRequest(body); err != nil {
			return nil, err
		}
		if err := x.req.CheckNumbers(); err != nil {
			return nil, err
		}
		return g.planFor(x, x.req.Model)
	}
	p, err := in(x, body)
	if err != nil {
		return nil, err
	}
	t, err := g.requestFor(x, p)
	x.req = t.req
	return p, err
}

// noteRequest records, for the trace, what the client asked (model,
// output limit) and, with telemetry.capture_content, puts its messages on
// the server span. With tracing off it does nothing.
func (g *Gateway) noteRequest(x *exchange) {
	if g.tracer == nil {
		return
	}
	x.rec.RequestModel = wire.Clip(x.req.Model)
	for _, name := range []string{"max_completion_tokens", "max_tokens"} {
		if raw, ok := x.req.Get(name); ok {
			if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
				x.rec.MaxTokens = n
				break
			}
		}
	}
	if g.capture {
		if span := trace.SpanFromContext(x.r.Context()); span.IsRecording() {
			if raw, ok := x.req.Get("messages"); ok {
				span.SetAttributes(attribute.String("gen_ai.input.messages", string(raw)))
			}
		}
	}
}

// serve runs the request on its route, then on the route's fallbacks in
// order (their own fallbacks are not followed), until one answers or a
// failure is not the upstream's doing. It returns the failure it did not
// write.
func (g *Gateway) serve(x *exchange) error {
	p := x.plan
	var failed error
	for i := 0; ; i++ {
		last := i == len(x.plan.fallbacks)
		err := g.deploy(x, p, g.route, nil)
		if err == nil {
			return nil
		}
		failed = moveOn(failed, err)
		if last || x.released || !classify(err).fallback || x.r.Context().Err() != nil {
			return failed
		}
		next := x.plan.fallbacks[i]
		g.log.Debug("falling back", zap.String("request_id", x.rec.RequestID), zap.String("from", p.name), zap.String("to", next.name), zap.Error(err))
		x.rec.Fallback, p = next.name, next
	}
}

// route serves the request on one route: the request to send, derived
// from the client's; the counted admission (once per request); the
// attempts. A failure before anything reached the client is returned
// unwritten: the next deployment or route may serve.
func (g *Gateway) route(x *exchange, p *plan) error {
	x.filed(p, x.req.Model)
	base, err := g.requestFor(x, p)
	if err != nil {
		return &RefusedError{Route: p.name, Upstream: p.upstream.name, Protocol: p.upstream.protocol, Err: err}
	}
	pr, err := g.prepare(x, p, base)
	if err != nil {
		return err
	}
	g.notePrepared(x, pr)
	if !x.admitted {
		if err := g.admit(x, pr); err != nil {
			return err
		}
		x.admitted = true
	}
	return g.attempts(x, pr)
}

// session returns the request's session id: the configured header, else
// the request's "user" field, else its metadata's "session_id", else ""
// (not counted).
func (g *Gateway) session(x *exchange) string {
	if id := x.r.Header.Get(g.cfg.Sessions.Header); id != "" {
		return id
	}
	if x.req == nil { // a forwarded body (the rest of /v1) is not decoded
		return ""
	}
	if raw, ok := x.req.Get("user"); ok {
		var user string
		if json.Unmarshal(raw, &user) == nil && user != "" {
			return user
		}
	}
	if raw, ok := x.req.Get("metadata"); ok {
		var md struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal(raw, &md) == nil {
			return md.SessionID
		}
	}
	return ""
}
