package gateway

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// edge is a client API other than chat completions (the Responses API,
// the Messages API): its request, decoded once at the door, is translated
// into the chat request the path serves for the upstream of each route it
// is tried on — the route's own, another deployment's, a fallback's — so
// that each attempt's request is built for the protocol it goes to: what
// docs/spec.md §8 and §9 drop or refuse for that protocol is dropped
// (counted) or refused there, and nothing of another protocol is sent
// along (docs/design.md). Routes of one shape share one translation.
type edge interface {
	// shape is what the translation for route p depends on.
	shape(p *plan) edgeShape
	// chat translates the client's request for route p's upstream, in
	// shape s (its reach included).
	chat(p *plan, s edgeShape) (edgeChat, error)
}

// edgeShape is what an edge's translation depends on: the upstream's
// protocol, the member it takes reasoning back in, its output limit's
// member, whether a previous response it keeps may stand for the
// conversation, and whether the route takes the client's reasoning
// setting.
type edgeShape struct {
	protocol          translate.Protocol
	field, limitField string
	previous, effort  bool
	refuseHosted      bool
	reach             reach
}

// reach is what a request may reach past itself at a route's upstream,
// its route's lists as its key narrows them: the kinds of
// organization-wide objects (translate.OrgWideKinds) and the hosted tools
// the upstream may run at the gateway's cost, each comma-joined (so that
// a shape stays comparable).
type reach struct{ orgWide, hostedTools string }

func (r reach) orgWideKinds() []string { return splitList(r.orgWide) }
func (r reach) hosted() []string       { return splitList(r.hostedTools) }

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// reachOn is what the request may reach past itself on route p: the
// route's org_wide and hosted_tools, narrowed by the key's lists; a key
// with a spend limit no hosted tool (billed per use, they have no price
// here).
func (g *Gateway) reachOn(x *exchange, p *plan) reach {
	org, hosted := p.orgWide, p.hostedTools
	if x.key != nil {
		org, hosted = narrow(org, x.key.OrgWide), narrow(hosted, x.key.HostedTools)
		if g.priced(x) {
			hosted = nil
		}
	}
	return reach{orgWide: strings.Join(org, ","), hostedTools: strings.Join(hosted, ",")}
}

// narrow is route's list less what key (when it has a list) does not
// list.
func narrow(route, key []string) []string {
	if key == nil {
		return route
	}
	var out []string
	for _, v := range route {
		if slices.Contains(key, v) {
			out = append(out, v)
		}
	}
	return out
}

// edgeChat is a client's request translated for one shape.
type edgeChat struct {
	body []byte
	// keepOwn: the body holds the gateway's own members, for the
	// upstream's translator (it is decoded keeping them).
	keepOwn bool
	// kept are the client's blocks or items its messages keep by index
	// (wire.ChatRequest.Kept).
	kept []json.RawMessage
	// strings are the client's strings its messages name by index
	// rather than hold (wire.KeptContent).
	strings []json.RawMessage
	// droppedCache counts cache_control marks left out (a Messages request
	// to another protocol).
	droppedCache int
	// dropped names what else the translation left out for this
	// upstream, as "kind:name" (anthropic-beta:…, tool:…): reported in
	// DroppedHeader and counted (dropped_<kind>).
	dropped []string
}

// translation is an edge request decoded for one shape (for a chat
// client: the request as it came).
type translation struct {
	shape        edgeShape
	req          *wire.ChatRequest
	keepOwn      bool
	droppedCache int
	dropped      []string
}

// requestFor is the client's request as route p takes it: a chat
// client's as it came (what it reaches past itself checked against the
// route's reach), an edge request's translation for p's upstream (made
// once per shape, then kept for the request's other attempts).
func (g *Gateway) requestFor(x *exchange, p *plan) (translation, error) {
	r := g.reachOn(x, p)
	if x.edge == nil {
		for _, rc := range translate.ChatReaches(x.req) {
			if !slices.Contains(r.orgWideKinds(), rc.Kind) {
				return translation{}, rc.Error()
			}
		}
		return translation{req: x.req, shape: edgeShape{reach: r}}, nil
	}
	s := x.edge.shape(p)
	s.reach = r
	for _, t := range x.translations {
		if t.shape == s {
			return t, nil
		}
	}
	c, err := x.edge.chat(p, s)
	if err != nil {
		return translation{}, err
	}
	// The body is the gateway's own: a translator writes its own members
	// only where it keeps blocks or items (keepOwn), and no member a
	// client names becomes a key of it.
	req, err := wire.DecodeTranslated(c.body, c.kept, c.strings)
	if err != nil {
		return translation{}, err
	}
	if err := req.CheckNumbers(); err != nil {
		return translation{}, err
	}
	t := translation{shape: s, req: req, keepOwn: c.keepOwn, droppedCache: c.droppedCache, dropped: c.dropped}
	x.translations = append(x.translations, t)
	return t, nil
}

// takesEffort reports whether route p takes the client's reasoning
// setting (its reasoning block has client_effort): only then does a
// client's setting in another protocol's terms (a Messages client's
// thinking, a Responses client's reasoning.effort to a chat upstream)
// become a reasoning member upstream. A model that takes none (gpt-4.1
// answers 400 to reasoning_effort) is sent none by default.
func takesEffort(p *plan) bool {
	return p.reasoning.Format != policy.FormatNone && p.reasoning.ClientEffort
}

// backField is the member an upstream takes a turn's reasoning back in,
// for a translation: "" when it is the gateway's own (an upstream of
// another protocol, whose state goes in the carried member).
func backField(p *plan) string {
	if strings.HasPrefix(p.upstream.field, wire.OwnPrefix) {
		return ""
	}
	return p.upstream.field
}
