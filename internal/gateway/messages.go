package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/translate/messages"
	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
)

// messagesCall is a Messages API request on its way through the chat
// path: what its answer repeats.
type messagesCall struct {
	meta messages.Meta
}

// clientAPI is the API a request's client speaks, for the shape of its
// errors.
type clientAPI struct{}

// speaksMessages marks a request of the Messages API: its errors are
// written in Anthropic's shape.
func speaksMessages(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), clientAPI{}, "messages"))
}

func isMessages(r *http.Request) bool { return r.Context().Value(clientAPI{}) == "messages" }

// createMessage serves POST /v1/messages: the Messages request translated
// into a chat completions request at the edge, then the one path.
func (g *Gateway) createMessage(w http.ResponseWriter, r *http.Request, rec *observe.Record) {
	g.handle(w, speaksMessages(r), rec, g.fromMessages)
}

// fromMessages is the Messages API's inbound translator.
func (g *Gateway) fromMessages(x *exchange, body []byte) ([]byte, error) {
	req, err := messages.Decode(body, false)
	if err != nil {
		return nil, err
	}
	p, err := g.messagesPlan(x.r, req.Model)
	if err != nil {
		return nil, err
	}
	field := p.reasoningOut
	if field == "" {
		field = "reasoning_content"
	}
	x.msg = &messagesCall{meta: messages.Meta{ID: messages.NewID(), Model: req.Model, ReasoningField: field}}
	back := p.upstream.field
	if strings.HasPrefix(back, wire.OwnPrefix) {
		back = "" // an upstream of another protocol: its state goes in the carried member
	}
	t, err := req.Chat(messages.ChatOptions{Protocol: p.upstream.protocol, ReasoningField: back, CarriedMember: carriedMember})
	if err != nil {
		return nil, err
	}
	x.keepOwn = true // the thinking blocks the client sent back, in the carried member
	if t.DroppedCacheControl > 0 {
		x.rec.Repairs = append(x.rec.Repairs, observe.Count{Name: "dropped_cache_control", N: t.DroppedCacheControl})
	}
	return t.Chat, nil
}

// messagesPlan is the plan of the route a Messages request's model
// matches, with the client's betas checked against its upstream.
func (g *Gateway) messagesPlan(r *http.Request, model string) (*plan, error) {
	route, ok := g.cfg.Match(model)
	if !ok {
		return nil, &RouteError{Model: model}
	}
	p := g.plans[route.Name]
	if p.upstream.protocol != translate.Anthropic {
		for beta := range strings.SplitSeq(r.Header.Get("anthropic-beta"), ",") {
			if beta = strings.TrimSpace(beta); beta != "" && !ignorableBeta(beta) {
				return nil, &wire.ParamError{Param: "anthropic-beta", Msg: fmt.Sprintf("the beta %q needs an Anthropic upstream, and this route's upstream %s speaks %s", wire.Clip(beta), p.upstream.name, p.upstream.protocol), Unsupported: true}
			}
		}
	}
	return p, nil
}

// ignorableBeta reports a beta whose absence changes nothing a client
// relies on (how Anthropic streams tool input, prices a cache, or labels
// a client), so that a route to another protocol serves it anyway:
// Claude Code sends several on every request.
func ignorableBeta(beta string) bool {
	for _, prefix := range []string{"claude-code-", "interleaved-thinking-", "fine-grained-tool-streaming-", "token-efficient-tools-",
		"prompt-caching-", "extended-cache-ttl-", "output-128k-", "context-1m-"} {
		if strings.HasPrefix(beta, prefix) {
			return true
		}
	}
	return false
}

// betas are the anthropic-beta headers a Messages API client sent, for an
// Anthropic upstream (nil otherwise).
func betas(x *exchange, up *upstreamPlan) http.Header {
	v := x.r.Header.Values("Anthropic-Beta")
	if x.msg == nil || up.protocol != translate.Anthropic || len(v) == 0 {
		return nil
	}
	return http.Header{"Anthropic-Beta": v}
}

// countTokens serves POST /v1/messages/count_tokens: from the upstream's
// own endpoint for an anthropic upstream, else the gateway's estimate
// (four characters of the request's text to a token).
func (g *Gateway) countTokens(w http.ResponseWriter, r *http.Request, rec *observe.Record) {
	r = speaksMessages(r)
	if _, err := g.checkKey(w, r); err != nil {
		g.fail(w, r, rec, err)
		return
	}
	body, err := g.readBody(w, r)
	g.pending.received(r)
	if err != nil {
		g.fail(w, r, rec, err)
		return
	}
	n, err := g.tokenCount(r, body)
	if err != nil {
		g.fail(w, r, rec, err)
		return
	}
	b, _ := json.Marshal(map[string]int{"input_tokens": n})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	end(rec, ending{status: http.StatusOK, outcome: observe.OutcomeOK})
	_, _ = w.Write(b)
}

// tokenCount counts a count_tokens request's input tokens.
func (g *Gateway) tokenCount(r *http.Request, body []byte) (int, error) {
	req, err := messages.Decode(body, true)
	if err != nil {
		return 0, err
	}
	p, err := g.messagesPlan(r, req.Model)
	if err != nil {
		return 0, err
	}
	t, err := req.Chat(messages.ChatOptions{Protocol: p.upstream.protocol, CarriedMember: carriedMember})
	if err != nil {
		return 0, err
	}
	if p.upstream.protocol != translate.Anthropic {
		return messages.EstimateTokens(t.Chat), nil
	}
	chat, err := wire.DecodeTranslated(t.Chat)
	if err != nil {
		return 0, err
	}
	tr, err := p.upstream.translator.Request(chat, translate.Options{Model: p.targetModel(req.Model), DefaultMaxTokens: 1, CarriedMember: carriedMember})
	if err != nil {
		return 0, err
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(tr.Body, &fields)
	delete(fields, "max_tokens")
	delete(fields, "stream")
	countBody, _ := json.Marshal(fields)
	resp, _, err := p.upstream.client.Send(r.Context(), upstream.Call{Body: countBody, Header: r.Header, Path: "/messages/count_tokens"})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, &wire.IncompleteError{Upstream: p.upstream.name, Message: "the count_tokens answer is not JSON"}
	}
	return out.InputTokens, nil
}
