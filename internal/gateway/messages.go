package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/translate/anthropic"
	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
)

// messagesCall is a Messages API request on its way through the chat
// path: the request, decoded once, and what its answer repeats. It is the
// exchange's edge: translated for each route's upstream.
type messagesCall struct {
	meta anthropic.Meta
	req  *anthropic.Request
	// betas are the anthropic-beta values the client sent.
	betas []string
}

// fromMessages is the Messages API's inbound decoder: the request, and
// the plan of the route its model matches.
func (g *Gateway) fromMessages(x *exchange, body []byte) (*plan, error) {
	req, err := anthropic.Decode(body, false)
	if err != nil {
		return nil, err
	}
	p, err := g.planFor(x, req.Model)
	if err != nil {
		return nil, err
	}
	x.edge = &messagesCall{meta: anthropic.Meta{ID: anthropic.NewID(), Model: req.Model}, req: req, betas: x.r.Header.Values("Anthropic-Beta")}
	return p, nil
}

// metaFor is what the answer from route p repeats: the member that
// route's normalizer gives reasoning in.
func (m *messagesCall) metaFor(p *plan) anthropic.Meta {
	meta := m.meta
	meta.ReasoningField = p.reasoningMember()
	return meta
}

func (m *messagesCall) shape(p *plan) edgeShape {
	return edgeShape{protocol: p.upstream.protocol, field: backField(p), effort: takesEffort(p)}
}

// chat translates the request for route p's upstream: to an Anthropic
// upstream block for block, to another protocol what the chat model
// says (thinking as a reasoning level, cache_control dropped, server
// tools and Anthropic-only betas refused).
func (m *messagesCall) chat(p *plan, s edgeShape) (edgeChat, error) {
	dropped, err := checkBetas(m.betas, p.upstream)
	if err != nil {
		return edgeChat{}, err
	}
	t, err := m.req.Chat(anthropic.ChatOptions{Protocol: p.upstream.protocol, ReasoningField: backField(p), CarriedMember: carriedMember, Effort: takesEffort(p),
		OrgWide: s.reach.orgWideKinds(), HostedTools: s.reach.hosted(), Apart: p.upstream.readsMessages()})
	if err != nil {
		return edgeChat{}, err
	}
	// The thinking blocks the client sent back go in the carried member:
	// always decoded keeping the gateway's own members.
	for k, b := range dropped {
		dropped[k] = "anthropic-beta:" + b
	}
	return edgeChat{body: t.Chat, keepOwn: true, kept: t.Kept, strings: t.Strings, droppedCache: t.DroppedCacheControl, dropped: append(dropped, t.Dropped...)}, nil
}

// checkBetas refuses a beta only Anthropic honours on an upstream of
// another protocol, and returns the others, which that upstream serves by
// leaving them out (anthropic.BetaElsewhere), to be counted.
func checkBetas(values []string, up *upstreamPlan) ([]string, error) {
	if up.protocol == translate.Anthropic {
		return nil, nil
	}
	var dropped []string
	for _, v := range values {
		for beta := range strings.SplitSeq(v, ",") {
			if beta = strings.TrimSpace(beta); beta == "" {
				continue
			}
			if !anthropic.BetaElsewhere(beta) {
				return nil, &wire.ParamError{Param: "anthropic-beta", Msg: fmt.Sprintf("the beta %q needs an Anthropic upstream, and this route's upstream %s speaks %s", wire.Clip(beta), up.name, up.protocol), Unsupported: true}
			}
			if len(dropped) < maxDroppedBetas {
				dropped = append(dropped, wire.Clip(beta))
			}
		}
	}
	return dropped, nil
}

// maxDroppedBetas bounds the betas a request's dropped list names.
const maxDroppedBetas = 16

// countTokens serves POST /v1/messages/count_tokens: from the upstream's
// own endpoint for an anthropic upstream, else the gateway's estimate
// (four characters of the request's text to a token).
func (g *Gateway) countTokens(w http.ResponseWriter, r *http.Request, rec *observe.Record) error {
	key, err := g.checkKey(w, r)
	if err != nil {
		return err
	}
	x := &exchange{w: w, r: r, rec: rec, key: key, api: messagesAPI{}}
	if key != nil {
		rec.Key = key.Name
	}
	body, err := g.readBody(w, r)
	g.pending.received(r)
	rec.BytesIn = int64(len(body))
	if err != nil {
		return err
	}
	n, err := g.tokenCount(x, body)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(map[string]int{"input_tokens": n})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	end(rec, ending{status: http.StatusOK, outcome: observe.OutcomeOK})
	_, _ = w.Write(b)
	return nil
}

// tokenCount counts a count_tokens request's input tokens, admitted as
// a Messages request is: the key's model list and its request rate (it
// is no model call: nothing is reserved for spend) before anything is
// translated or sent.
func (g *Gateway) tokenCount(x *exchange, body []byte) (int, error) {
	r := x.r
	req, err := anthropic.Decode(body, true)
	if err != nil {
		return 0, err
	}
	p, err := g.planFor(x, req.Model)
	if err != nil {
		return 0, err
	}
	if _, err := checkBetas(r.Header.Values("Anthropic-Beta"), p.upstream); err != nil {
		return 0, err
	}
	if err := g.admitWith(x, budget.Unlimited, 0, 0); err != nil {
		return 0, err
	}
	// Another protocol's tokens are estimated from the chat bytes, which
	// then hold every string.
	t, err := req.Chat(anthropic.ChatOptions{Protocol: p.upstream.protocol, CarriedMember: carriedMember, Apart: p.upstream.protocol == translate.Anthropic})
	if err != nil {
		return 0, err
	}
	if p.upstream.protocol != translate.Anthropic {
		return anthropic.EstimateTokens(t.Chat), nil
	}
	chat, err := wire.DecodeTranslated(t.Chat, t.Kept, t.Strings)
	if err != nil {
		return 0, err
	}
	model := p.targetModel(req.Model)
	tr, err := p.upstream.translator.Request(chat, translate.Options{Model: model, DefaultMaxTokens: 1, CarriedMember: carriedMember, Vertex: p.upstream.vertex})
	if err != nil {
		return 0, err
	}
	path, countBody := anthropic.CountTokensRequest(tr.Body, model, p.upstream.vertex)
	resp, _, err := p.upstream.client.Send(r.Context(), upstream.Call{Body: countBody, Header: r.Header, Path: path, Model: model})
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
