package gateway

import (
	"net/http"
	"strconv"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/translate/anthropic"
	"github.com/toolgate/toolgate/internal/translate/responses"
	"github.com/toolgate/toolgate/internal/wire"
)

// clientAPI is a client API: everything it decides about a request — how
// its request is decoded (inbound), how its answer is streamed and
// written whole, the shape and status of its errors, what it passes to an
// upstream of its own protocol. The router chooses it with the endpoint;
// it is on the exchange, and the relay, whole and fail ask it, never
// which API it is. A new client API is one value of this interface, with
// its translators in internal/translate.
type clientAPI interface {
	// inbound decodes the API's request (nil: chat completions, decoded
	// as it is).
	inbound(g *Gateway) inbound
	// stream is the client's stream of an attempt's answer over sse, and
	// what to do once the relay ended (nil: nothing).
	stream(g *Gateway, x *exchange, t *try, sse *wire.Writer) (clientStream, func(tr translate.Events))
	// whole is the judged chat completion in the API's words (w), and
	// what to do once the client has it.
	whole(g *Gateway, x *exchange, t *try, w judgedAnswer) ([]byte, func(), error)
	// writeError writes a failure before anything was sent, and returns
	// the status it wrote.
	writeError(w http.ResponseWriter, status int, body wire.ErrorBody) int
	// thoughts says the API has its own place for reasoning, which an
	// upstream of another protocol's reasoning is given in.
	thoughts() bool
	// upstreamHeader is what the client sent that an upstream of the
	// API's own protocol takes (Anthropic's betas), nil for none.
	upstreamHeader(x *exchange, up *upstreamPlan) http.Header
}

// judgedAnswer is a whole answer once judged: the chat completion (chat),
// and what the upstream sent (sent, answer) for a client of its protocol.
type judgedAnswer struct {
	chat, sent []byte
	answer     translate.Answer
}

// chatAPI is chat completions: the path's own form, written as it is.
type chatAPI struct{}

func (chatAPI) inbound(*Gateway) inbound { return nil }

func (chatAPI) stream(_ *Gateway, _ *exchange, _ *try, sse *wire.Writer) (clientStream, func(translate.Events)) {
	// A chat stream's [DONE] (or error event) leaves with the response's
	// end, which follows at once.
	sse.LeaveLast = true
	return sse, nil
}

func (chatAPI) whole(_ *Gateway, _ *exchange, _ *try, a judgedAnswer) ([]byte, func(), error) {
	return a.chat, func() {}, nil
}

func (chatAPI) writeError(w http.ResponseWriter, status int, body wire.ErrorBody) int {
	writeErrorBody(w, status, body)
	return status
}

func (chatAPI) thoughts() bool                                      { return false }
func (chatAPI) upstreamHeader(*exchange, *upstreamPlan) http.Header { return nil }

// responsesAPI is OpenAI's Responses API (responses.go).
type responsesAPI struct{ chatAPI }

func (responsesAPI) inbound(g *Gateway) inbound { return g.fromResponses }
func (responsesAPI) thoughts() bool             { return true }

// stream encodes the answer as Responses events; a completed response is
// stored once the relay ended.
func (responsesAPI) stream(g *Gateway, x *exchange, t *try, sse *wire.Writer) (clientStream, func(translate.Events)) {
	enc := responses.NewStream(x.edge.(*responsesCall).metaFor(t.plan), sse)
	return encodedOut{w: sse, enc: enc}, func(tr translate.Events) {
		if !enc.Completed() {
			return
		}
		kept := ""
		if id, ok := tr.(translate.Identified); ok && t.plan.upstreamStore {
			kept = id.ResponseID()
		}
		g.storeResponse(x, enc.Object(), enc.Output(), upstreamResponse{ID: kept, Upstream: t.plan.upstream.name})
	}
}

// whole is the answer as a Responses object; from a Responses upstream,
// its reasoning items and its own items as it sent them. The object is
// stored once the client has it, when asked.
func (responsesAPI) whole(g *Gateway, x *exchange, t *try, a judgedAnswer) ([]byte, func(), error) {
	up := t.plan.upstream
	meta := x.edge.(*responsesCall).metaFor(t.plan)
	if up.protocol == translate.Responses {
		meta.Carried, meta.Upstream = a.answer.Carried, up.name // its reasoning items, for the client to send back
		meta.Output = responses.OutputOf(a.sent)                // its items as it sent them
	}
	object, output, err := responses.Whole(a.chat, meta)
	if err != nil {
		return nil, func() {}, err
	}
	kept := upstreamResponse{Upstream: up.name}
	if t.plan.upstreamStore {
		kept.ID = a.answer.ResponseID
	}
	return object, func() { g.storeResponse(x, object, output, kept) }, nil
}

// messagesAPI is Anthropic's Messages API (messages.go).
type messagesAPI struct{}

func (messagesAPI) inbound(g *Gateway) inbound { return g.fromMessages }
func (messagesAPI) thoughts() bool             { return true }

func (messagesAPI) stream(_ *Gateway, x *exchange, t *try, sse *wire.Writer) (clientStream, func(translate.Events)) {
	return encodedOut{w: sse, enc: anthropic.NewStream(x.edge.(*messagesCall).metaFor(t.plan), sse)}, nil
}

// whole is the answer as a Messages message; from an Anthropic upstream,
// its signed blocks and its content as it sent them.
func (messagesAPI) whole(_ *Gateway, x *exchange, t *try, a judgedAnswer) ([]byte, func(), error) {
	meta := x.edge.(*messagesCall).metaFor(t.plan)
	if t.plan.upstream.protocol == translate.Anthropic {
		meta.Thoughts = a.answer.Carried // the signed blocks, for the client to send back as they are
		meta.Content = anthropic.ContentOf(a.sent)
	}
	out, err := anthropic.Whole(a.chat, meta)
	return out, func() {}, err
}

// writeError writes an error in the Messages API's shape, so that
// Anthropic's SDKs raise their typed errors; an overload is Anthropic's
// 529, which its SDKs raise as OverloadedError.
func (messagesAPI) writeError(w http.ResponseWriter, status int, body wire.ErrorBody) int {
	if anthropic.ErrorType(status, body) == "overloaded_error" {
		status = 529
	}
	writeMessagesError(w, status, body)
	return status
}

// upstreamHeader is the anthropic-beta headers the client sent, for an
// Anthropic upstream.
func (messagesAPI) upstreamHeader(x *exchange, up *upstreamPlan) http.Header {
	v := x.r.Header.Values("Anthropic-Beta")
	if up.protocol != translate.Anthropic || len(v) == 0 {
		return nil
	}
	return http.Header{"Anthropic-Beta": v}
}

// writeMessagesError writes an error in the Messages API's shape, so that
// Anthropic's SDKs raise their typed errors.
func writeMessagesError(w http.ResponseWriter, status int, body wire.ErrorBody) {
	b := anthropic.ErrorBody(status, body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}
