package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/translate/responses"
	"github.com/toolgate/toolgate/internal/wire"
)

// responsesCall is a Responses API request on its way through the chat
// path: the request, the conversation items it sent (a previous
// response's, then its own), the previous response as an upstream that
// keeps it knows it, and what its response object repeats. It is the
// exchange's edge: translated for each route's upstream.
type responsesCall struct {
	req      *responses.Request
	items    []json.RawMessage
	previous *responses.Previous
	meta     responses.Meta
}

// StoredResponseError is a stored response that cannot be used: none are
// kept (Disabled), or the id is unknown — to GET and DELETE, or as a
// previous_response_id (Previous).
type StoredResponseError struct {
	ID                 string
	Previous, Disabled bool
}

func (e *StoredResponseError) Error() string {
	switch {
	case e.Disabled:
		return "previous_response_id needs stored responses, and this gateway keeps none"
	case e.Previous:
		return fmt.Sprintf("previous response %q not found", wire.Clip(e.ID))
	}
	return fmt.Sprintf("response %q not found", wire.Clip(e.ID))
}

// stored is a response as the store keeps it.
type stored struct {
	Key      string            `json:"key"` // the client key that made it, "" when the gateway is open
	Response json.RawMessage   `json:"response"`
	Input    []json.RawMessage `json:"input"`
	Output   []json.RawMessage `json:"output"`
	// Kept is the upstream's own copy of the response, when it keeps one.
	Kept upstreamResponse `json:"kept,omitzero"`
}

// upstreamResponse is a response as an upstream that keeps responses
// (a responses upstream with upstream_store) knows it: its id there, and
// the upstream.
type upstreamResponse struct {
	ID       string `json:"id,omitempty"`
	Upstream string `json:"upstream,omitempty"`
}

// fromResponses is the Responses API's inbound decoder: the request with
// the previous response's items in front, and the plan of the route its
// model matches.
func (g *Gateway) fromResponses(x *exchange, body []byte) (*plan, error) {
	req, err := responses.Decode(body)
	if err != nil {
		return nil, err
	}
	// The route and the key's model list, before a stored response is
	// read or anything is translated.
	p, err := g.planFor(x, req.Model)
	if err != nil {
		return nil, err
	}
	items := req.Input
	var previous *responses.Previous
	if req.PreviousResponseID != "" {
		prev, err := g.loadResponse(x.r.Context(), x.key, req.PreviousResponseID, true)
		if err != nil {
			return nil, err
		}
		items = append(append(append([]json.RawMessage{}, prev.Input...), prev.Output...), req.Input...)
		if prev.Kept.ID != "" {
			previous = &responses.Previous{ID: prev.Kept.ID, Upstream: prev.Kept.Upstream, Items: len(prev.Input) + len(prev.Output)}
		}
	}
	// Each item becomes at most one message: the bound on messages holds
	// before anything is translated.
	if n := len(items); n > g.cfg.Server.MaxMessages {
		return nil, &wire.DecodeError{Kind: wire.KindMissing, Param: "input", Offset: -1,
			Msg: fmt.Sprintf("has %d items (with its previous responses'); this gateway accepts at most %d (server.max_messages)", n, g.cfg.Server.MaxMessages)}
	}
	// Each request is within the limit, but a chain of previous responses
	// grows the conversation: the request with the items put in front of
	// it is held to the same bound (measured on the items, not on the
	// translation, which keeps them twice for a Responses upstream).
	size := int64(len(body))
	for _, it := range items[:len(items)-len(req.Input)] {
		size += int64(len(it))
	}
	if size > g.cfg.Server.MaxBodyBytes {
		return nil, &IntakeError{Kind: IntakeTooLarge, Msg: fmt.Sprintf("the conversation, with its previous responses, is larger than this gateway accepts (server.max_body_bytes = %d); start a new one", g.cfg.Server.MaxBodyBytes)}
	}
	x.edge = &responsesCall{req: req, items: items, previous: previous, meta: responses.Meta{
		ID: responses.NewID("resp"), CreatedAt: time.Now().Unix(), Model: req.Model, Request: req, Sealer: g.sealer(x.key),
	}}
	return p, nil
}

// metaFor is what the answer from route p repeats: the member that
// route's normalizer gives reasoning in.
func (c *responsesCall) metaFor(p *plan) responses.Meta {
	meta := c.meta
	meta.ReasoningField = p.reasoningMember()
	return meta
}

func (c *responsesCall) shape(p *plan) edgeShape {
	s := edgeShape{protocol: p.upstream.protocol, field: backField(p), limitField: p.upstream.outputLimitField}
	s.previous = p.upstream.protocol == translate.Responses && p.upstreamPrevious
	s.effort = p.upstream.protocol == translate.Responses || takesEffort(p)
	s.refuseHosted = p.refuseHosted
	return s
}

// chat translates the request for route p's upstream: to a Responses
// upstream item for item (its hosted tools and items carried, a previous
// response it keeps standing for the items it holds); to another
// protocol what the chat model says, refusing what it has no slot for.
func (c *responsesCall) chat(p *plan, s edgeShape) (edgeChat, error) {
	// Reasoning items' summaries go back in the upstream's own reasoning
	// field; on an upstream whose field is the gateway's own (Anthropic's
	// signed thinking blocks) they are dropped: only the store restores
	// those.
	o := responses.ChatOptions{OutputLimitField: p.upstream.outputLimitField, ReasoningField: backField(p),
		Effort: p.upstream.protocol == translate.Responses || takesEffort(p), DropHosted: !p.refuseHosted,
		OrgWide: s.reach.orgWideKinds(), HostedTools: s.reach.hosted()}
	keep := p.upstream.protocol == translate.Responses
	if keep {
		// The items the client sends go to the upstream as they are, each
		// kept with the chat message made from it; the encrypted reasoning
		// items also in the carried member (for a turn repair changed).
		o.CarriedMember, o.Keep = carriedMember, true
		if p.upstreamPrevious {
			// The upstream keeps the response continued: its id may go
			// instead of the items it stands for.
			o.Previous = c.previous
		}
	}
	o.Apart = p.upstream.readsMessages()
	t, err := c.req.Translate(c.items, o)
	// Hosted tools the route does not let the upstream run are left out
	// on every route; on one to another protocol, which runs none, all
	// are (but with refuse_hosted_tools, which refuses those allowed).
	left := c.req.Unallowed(o.HostedTools)
	if !keep && o.DropHosted {
		left = c.req.HostedTools()
	}
	var dropped []string
	for _, t := range left {
		dropped = append(dropped, "tool:"+t)
	}
	out := edgeChat{body: t.Chat, strings: t.Strings, keepOwn: keep, dropped: dropped}
	if keep {
		out.kept = c.items // each message keeps its items by their index in the conversation
	}
	return out, err
}

// loadResponse reads a stored response the caller's key made.
func (g *Gateway) loadResponse(ctx context.Context, key *auth.Key, id string, previous bool) (*stored, error) {
	if g.responses == nil {
		return nil, &StoredResponseError{ID: id, Previous: previous, Disabled: previous}
	}
	v, ok, err := g.responses.Get(ctx, tenant(key), id)
	var s stored
	if err != nil || !ok || json.Unmarshal([]byte(v), &s) != nil || s.Key != keyName(key) {
		return nil, &StoredResponseError{ID: id, Previous: previous}
	}
	return &s, nil
}

// storeResponse keeps a finished response for previous_response_id and
// GET, unless the request said store: false or none are kept.
func (g *Gateway) storeResponse(x *exchange, object []byte, output []json.RawMessage, kept upstreamResponse) {
	c := x.edge.(*responsesCall)
	if g.responses == nil || !c.req.Store {
		return
	}
	if kept.ID == "" {
		kept = upstreamResponse{}
	}
	b, _ := json.Marshal(stored{Key: keyName(x.key), Response: object, Input: c.items, Output: output, Kept: kept})
	if err := g.responses.Put(context.WithoutCancel(x.r.Context()), tenant(x.key), c.meta.ID, string(b)); err != nil {
		g.log.Warn("a response could not be stored", zap.String("request_id", x.rec.RequestID), zap.Error(err))
	}
}

// storedResponse serves GET and DELETE /v1/responses/{id}.
func (g *Gateway) storedResponse(w http.ResponseWriter, r *http.Request, rec *observe.Record) error {
	key, err := g.checkKey(w, r)
	if err != nil {
		return err
	}
	rec.Key = keyName(key)
	id := chi.URLParam(r, "id")
	s, err := g.loadResponse(r.Context(), key, id, false)
	if err != nil {
		return err
	}
	body := []byte(s.Response)
	if r.Method == http.MethodDelete {
		if _, err := g.responses.Delete(r.Context(), tenant(key), id); err != nil {
			return err
		}
		body, _ = json.Marshal(map[string]any{"id": id, "object": "response", "deleted": true})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	n, _ := w.Write(body)
	rec.BytesOut = int64(n)
	end(rec, ending{status: http.StatusOK, outcome: observe.OutcomeOK})
	return nil
}
