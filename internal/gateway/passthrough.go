package gateway

import (
	"fmt"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
)

// PassthroughError is a /v1 request no route forwards: an unknown path,
// a method its route does not forward there, or a path the route's
// upstream does not serve.
type PassthroughError struct {
	Method, Path string
	// Upstream names the upstream of the route that was found, when its
	// protocol has no such path.
	Upstream string
	// Methods lists the methods the route forwards on the path when
	// Method is not one of them (405).
	Methods []string
	// Outside: the path is outside /v1, which is all the gateway serves.
	Outside bool
}

func (e *PassthroughError) Error() string {
	switch {
	case e.Upstream != "":
		return "the upstream " + e.Upstream + " does not serve " + wire.Clip(e.Path)
	case len(e.Methods) > 0:
		return wire.Clip(e.Method) + " is not forwarded on " + wire.Clip(e.Path)
	}
	return "no route forwards " + wire.Clip(e.Method) + " " + wire.Clip(e.Path)
}

// passthrough serves the rest of /v1 (embeddings, completions,
// moderations, and the paths routes allow): the key and its model list,
// the key's rate limits, retries before the first byte, the access line
// and metrics — and the body and the answer passed on byte for byte, no
// repair, no policy.
func (g *Gateway) passthrough(w http.ResponseWriter, r *http.Request, rec *observe.Record) error {
	if _, own := ownMethods(r.URL.Path); own {
		return g.methodNotAllowed(w, r, rec)
	}
	x, body, err := g.receivePassthrough(w, r, rec)
	if err != nil {
		return err
	}
	defer g.metrics.KeyStarted(rec.Key)()
	defer g.settle(x)
	if err := g.statedOutput(x, body); err != nil {
		return err
	}
	if err := g.admitWith(x, budget.Unlimited, len(body), x.outputLimit); err != nil {
		return err
	}
	x.admitted = true
	return g.forward(x, body)
}

// receivePassthrough checks the key before the body, reads the body and
// finds the route: by the body's model, else by the routes' paths.
func (g *Gateway) receivePassthrough(w http.ResponseWriter, r *http.Request, rec *observe.Record) (*exchange, []byte, error) {
	key, err := g.checkKey(w, r)
	if err != nil {
		return nil, nil, err
	}
	x := &exchange{w: w, r: r, rec: rec, key: key, api: chatAPI{}}
	rec.Key = keyName(key)
	body, err := g.readAnyBody(w, r)
	g.pending.received(r)
	rec.BytesIn = int64(len(body))
	if err != nil {
		return nil, nil, err
	}
	model, limit, err := bodyModel(body)
	if err != nil {
		return nil, nil, err
	}
	x.outputLimit = limit
	p, _, found := g.routeOf.find(model)
	if model == "" {
		var route *config.Route
		if route, found = g.cfg.MatchPath(r.URL.Path); found {
			p = g.plans[route.Name]
		}
	}
	if !found {
		if model != "" {
			return nil, nil, &RouteError{Model: model}
		}
		return nil, nil, &PassthroughError{Method: r.Method, Path: r.URL.Path}
	}
	route := p.route
	if model == "" {
		model = route.Model
	}
	if err := auth.Allow(key, model); err != nil {
		return nil, nil, err
	}
	x.plan = p
	switch route.Forwards(r.Method, r.URL.Path) {
	case config.NotForwarded:
		return nil, nil, &PassthroughError{Method: r.Method, Path: r.URL.Path}
	case config.MethodNotAllowed:
		return nil, nil, &PassthroughError{Method: r.Method, Path: r.URL.Path, Methods: route.MethodsFor(r.URL.Path)}
	}
	if x.plan.upstream.protocol != translate.OpenAI {
		return nil, nil, &PassthroughError{Method: r.Method, Path: r.URL.Path, Upstream: x.plan.upstream.name}
	}
	rec.Route, rec.Upstream, rec.Model = route.Name, x.plan.upstream.name, wire.Clip(model)
	x.model = model
	return x, body, nil
}

// statedOutput refuses a priced key's JSON request, on a path whose
// answer is written in output tokens, that states no output limit: the
// body is forwarded as it is, so without max_tokens (or
// max_completion_tokens) as a positive integer the upstream's own
// default, unknown here, would bound what it costs, not the reservation.
// Embeddings and moderations write no output tokens.
func (g *Gateway) statedOutput(x *exchange, body []byte) error {
	if !g.priced(x) || x.outputLimit > 0 || !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		return nil
	}
	switch x.r.URL.Path {
	case "/v1/embeddings", "/v1/moderations":
		return nil
	}
	return &wire.DecodeError{Kind: wire.KindMissing, Param: "max_tokens", Offset: -1,
		Msg: "must be given, as an integer from 1: this key has a spend limit (max_cost_usd), and a request forwarded as it is is reserved for the output limit it states"}
}

// bodyModel is a JSON object body's model ("" for any other body) and
// its output limit (max_completion_tokens or max_tokens, 0 when none).
// The body's top level is scanned as chat's is (wire.ParseTop): a
// repeated member, or two whose names differ only in case, is refused,
// since the body is forwarded as it is and the upstream might read
// another model than the one the key was checked and the request priced
// for.
func bodyModel(body []byte) (string, int64, error) {
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		return "", 0, nil
	}
	obj, err := wire.ParseTop(body)
	if err != nil {
		return "", 0, err
	}
	var limit int64
	for _, f := range []string{"max_completion_tokens", "max_tokens"} {
		if v, ok := obj.Get(f); ok {
			if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n > 0 {
				limit = n
				break
			}
		}
	}
	v, ok := obj.Get("model")
	if !ok || string(v) == "null" {
		return "", limit, nil
	}
	var model string
	if json.Unmarshal(v, &model) != nil {
		return "", 0, &wire.DecodeError{Kind: wire.KindValue, Param: "model", Offset: -1, Msg: "must be a string"}
	}
	return model, limit, nil
}

// forward sends the request upstream and passes the answer on as it
// came, counting the tokens its usage reports. It goes through the same
// loops as a chat request (deploy, retrying): the route's deployments
// that speak OpenAI's protocol are tried as chat requests try theirs,
// each with the route's retries, and an upstream failure is retried,
// moves to another deployment and cools one down as it would there. When
// no deployment serves it, the last upstream answer — an error the
// upstream wrote — is passed on as it came.
func (g *Gateway) forward(x *exchange, body []byte) error {
	r := x.r
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() { // the upstream continues the request's trace
		propagation.TraceContext{}.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	}
	var held *http.Response // the last failed answer, passed on if no deployment serves
	send := func(x *exchange, p *plan) error {
		if held != nil {
			held.Body.Close()
			held = nil
		}
		x.rec.Upstream = p.upstream.name
		p.upstream.inFlight.Inc()
		defer p.upstream.inFlight.Dec()
		resp, err := g.forwardTo(x, p, body)
		if err == nil {
			g.relayAnswer(x, resp)
			return nil
		}
		held = resp
		return err
	}
	err := g.deploy(x, x.plan, send, func(p *plan) bool { return p.upstream.protocol == translate.OpenAI })
	if held != nil {
		g.relayAnswer(x, held)
		return nil
	}
	return err
}

// forwardTo sends the request to one deployment, retried before the
// first byte on a failure of the upstream's (no connection, 429, 5xx). It
// returns the answer to relay, or the error of the last attempt (with
// the answer when the upstream wrote one).
func (g *Gateway) forwardTo(x *exchange, p *plan, body []byte) (*http.Response, error) {
	r := x.r
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	var last *http.Response
	err := g.retrying(r.Context(), x, p, func() error {
		if last != nil {
			last.Body.Close()
			last = nil
		}
		sent := time.Now()
		resp, reconnected, err := p.upstream.client.Forward(r.Context(), upstream.Forwarded{Method: r.Method, Path: path, Query: r.URL.RawQuery, Body: body, Header: r.Header,
			Model: p.targetModel(x.model)})
		x.rec.UpstreamDuration += time.Since(sent)
		a := x.noteAttempt(observe.Attempt{Route: p.name, Upstream: p.upstream.name, Provider: p.upstream.protocol.String()}, reconnected)
		if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			// The upstream refused the gateway's credentials: answered as
			// on every other endpoint (502 upstream_auth_failed), its body —
			// which may echo the key — never relayed.
			resp.Body.Close()
			err = &upstream.Error{Upstream: p.upstream.name, Kind: upstream.KindStatus, Status: resp.StatusCode}
			a.Outcome = classify(err).attempt
			return err
		}
		if err == nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500) {
			last = resp
			err = &upstream.Error{Upstream: p.upstream.name, Kind: upstream.KindStatus, Status: resp.StatusCode, RetryAfter: upstream.RetryAfter(resp.Header)}
		}
		if err != nil {
			a.Outcome = classify(err).attempt
			return err
		}
		a.Outcome = observe.AttemptOK
		last = resp
		return nil
	})
	return last, err
}

// relayAnswer writes the upstream's answer as it came: its status, its
// headers (hop-by-hop and cookies aside), its body, flushed as it arrives
// (streams); the usage in the body's last bytes is counted.
func (g *Gateway) relayAnswer(x *exchange, resp *http.Response) {
	defer resp.Body.Close()
	h := x.w.Header()
	upstream.CopyResponseHeaders(h, resp.Header)
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		h.Set("Content-Type", ct)
	}
	x.w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(x.w)
	tail := &tailBuffer{max: 16 << 10}
	buf := make([]byte, 32<<10)
	e := ending{status: resp.StatusCode}
	if resp.StatusCode >= 400 {
		e.outcome, e.kind = observe.OutcomeUpstream, "status"
	}
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			tail.write(buf[:n])
			if _, werr := x.w.Write(buf[:n]); werr != nil {
				e.outcome, e.clientGone = observe.OutcomeClientGone, true
				break
			}
			_ = rc.Flush()
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				e.outcome, e.err = observe.OutcomeIncomplete, fmt.Errorf("the upstream's answer broke off: %w", err)
			}
			break
		}
	}
	end(x.rec, e)
	if u, ok := lastUsage(tail.bytes()); ok {
		g.addUsage(x.rec, u)
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	b   []byte
	max int
}

func (t *tailBuffer) write(p []byte) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
}

func (t *tailBuffer) bytes() []byte {
	if len(t.b) > t.max {
		return t.b[len(t.b)-t.max:]
	}
	return t.b
}

// lastUsage reads the last "usage" object in a body's tail (where
// embeddings and completions put it, streamed or not).
func lastUsage(tail []byte) (wire.Usage, bool) {
	i := bytes.LastIndex(tail, []byte(`"usage"`))
	if i < 0 {
		return wire.Usage{}, false
	}
	rest := bytes.TrimLeft(tail[i+len(`"usage"`):], " \t\r\n:")
	dec := json.NewDecoder(bytes.NewReader(rest))
	var raw json.RawMessage
	if dec.Decode(&raw) != nil {
		return wire.Usage{}, false
	}
	return wire.ParseUsage(raw)
}
