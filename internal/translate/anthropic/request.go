package anthropic

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Translator is the Messages API's translate.Outbound.
var Translator translate.Outbound = translate.Functions{RequestFunc: UpstreamRequest, WholeFunc: UpstreamWhole,
	StreamFunc: func(o translate.StreamOptions) translate.Events { return NewUpstreamStream(o) }, SetupFunc: Setup}

// Setup is what every request to the Messages API carries: the path
// /messages, the anthropic-version header (unless the configured headers
// set it), and max_tokens, which the API requires, when the request sets
// none.
func Setup(c translate.UpstreamConfig) translate.Setup {
	headers := maps.Clone(c.Headers)
	if headers == nil {
		headers = map[string]string{}
	}
	if c.Vertex {
		// Vertex AI: the version goes in the body, the path names the
		// model (UpstreamRequest).
		return translate.Setup{Headers: headers, MaxTokens: c.DefaultMaxTokens}
	}
	if _, set := headers["anthropic-version"]; !set {
		headers["anthropic-version"] = c.Version
	}
	return translate.Setup{Path: "/messages", Headers: headers, MaxTokens: c.DefaultMaxTokens}
}

// VertexVersion is the anthropic_version a request to Claude on Vertex AI
// carries in its body.
const VertexVersion = "vertex-2023-10-16"

// VertexPath is the endpoint of a model on Vertex AI, below the
// publisher's URL: rawPredict, or streamRawPredict for a stream.
func VertexPath(model string, stream bool) string {
	if stream {
		return "/models/" + url.PathEscape(model) + ":streamRawPredict"
	}
	return "/models/" + url.PathEscape(model) + ":rawPredict"
}

// CountTokensRequest is the count_tokens request for a Messages request
// body UpstreamRequest wrote (for model): its endpoint, and the body
// without max_tokens and stream. Vertex AI counts at an endpoint of its
// own, the model in the body.
func CountTokensRequest(body []byte, model string, vertex bool) (path string, out []byte) {
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(body, &fields)
	delete(fields, "max_tokens")
	delete(fields, "stream")
	path = "/messages/count_tokens"
	if vertex {
		path = "/models/count-tokens:rawPredict"
		fields["model"], _ = json.Marshal(model)
	}
	out, _ = json.Marshal(fields)
	return path, out
}

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// UpstreamRequest translates a prepared chat request (repaired, its reasoning
// level written as thinking-budget's thinking member) into a Messages API
// request body (see the package doc for what maps to what). The thinking
// blocks restored for a turn are read from o.CarriedMember. The report
// says when thinking was turned off (the conversation's last tool turn
// has no thinking block: Anthropic refuses that with thinking on) and how
// many empty turns were left out (C12).
func UpstreamRequest(req *wire.ChatRequest, o translate.Options) (translate.Request, error) {
	var rep translate.Request
	if err := unsupported(req); err != nil {
		return rep, err
	}
	maxTokens := o.DefaultMaxTokens
	if n, ok := translate.IntMember(req, "max_tokens", "max_completion_tokens"); ok {
		maxTokens = n
	}
	b := Request{Model: o.Model, Stream: req.Stream, MaxTokens: &maxTokens, vertex: o.Vertex}
	if o.Vertex {
		rep.Path = VertexPath(o.Model, req.Stream)
	}
	t := turns{req: req, msgs: req.Messages, thinkingMember: o.CarriedMember}
	b.upSystem, t.errAt, t.err = systemBlocks(req, o.CarriedMember)
	t.out = b.appendHead(make([]byte, 0, bodySize(req)))
	if err := t.transcript(); err != nil {
		return rep, err
	}
	rep.DroppedEmpty = t.dropped
	var err error
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		b.upTools = append(b.upTools, tool{Name: t.Name, Description: translate.ToolDescription(t.Raw), InputSchema: schema})
	}
	if b.ToolChoice, err = upstreamToolChoice(req, len(b.upTools) > 0); err != nil {
		return rep, err
	}
	if stop, ok := req.Get("stop"); ok && string(stop) != "null" {
		if stop[0] == '"' {
			stop = append(append([]byte{'['}, stop...), ']')
		}
		b.StopSequences = stop
	}
	b.Temperature, b.TopP, b.TopK = translate.Member(req, "temperature"), translate.Member(req, "top_p"), translate.Member(req, "top_k")
	if user, ok := req.Get("user"); ok && len(user) > 0 && user[0] == '"' {
		b.Metadata = json.RawMessage(`{"user_id":` + string(user) + `}`)
	}
	if b.Thinking, rep.ThinkingOff, err = thinking(req, maxTokens, t.calls && !t.thought); err != nil {
		return rep, err
	}
	if thinkingOn(b.Thinking) {
		b.Temperature, b.TopK = nil, nil // Anthropic refuses them while thinking
	}
	b.withKept(req)
	rep.Body = b.appendTail(t.out)
	return rep, nil
}

// withKept adds to an upstream request what a Messages API client sent
// that the chat model has no slot for (translate.RequestMember): its
// tools as it declared them (server tools, cache_control) — all of them
// while its client tools are the request's, else its server tools after
// the translated ones — and the members the body does not have, which
// appendTail writes after its own (extra).
func (r *Request) withKept(req *wire.ChatRequest) {
	kept := translate.KeptMembers(req, translate.RequestMember)
	if v, ok := kept["tools"]; ok {
		r.keptTools = keptTools(v, r.upTools)
	}
	for k, v := range kept {
		if k != "tools" && !r.writes(k) {
			if r.extra == nil {
				r.extra = map[string]json.RawMessage{}
			}
			r.extra[k] = v
		}
	}
}

// writes reports whether the body has the member k of its own.
func (r *Request) writes(k string) bool {
	switch k {
	case "model", "max_tokens", "messages":
		return true
	case "anthropic_version":
		return r.vertex
	case "system":
		return len(r.upSystem) > 0
	case "stream":
		return r.Stream
	}
	for _, m := range r.members() {
		if m.name == k {
			return len(m.v) > 0
		}
	}
	return false
}

// member is one member appendTail writes as the request holds it.
type member struct {
	name string
	v    json.RawMessage
}

// members are the members appendTail writes as the request holds them.
func (r *Request) members() [7]member {
	return [...]member{{"tool_choice", r.ToolChoice}, {"stop_sequences", r.StopSequences}, {"temperature", r.Temperature}, {"top_p", r.TopP},
		{"top_k", r.TopK}, {"thinking", r.Thinking}, {"metadata", r.Metadata}}
}

// keptTools are the tools to send: the client's as declared when its
// client tools are the translated ones, else the translated ones and the
// client's server tools; nil when there are none.
func keptTools(raw json.RawMessage, translated []tool) json.RawMessage {
	names := make([]string, len(translated))
	for k, t := range translated {
		names[k] = t.Name
	}
	asDeclared, server := translate.KeptTools(raw, names, func(typ string) bool { return typ == "" || typ == "custom" })
	if asDeclared {
		return raw
	}
	out := make([]json.RawMessage, 0, len(translated)+len(server))
	for _, t := range translated {
		b, _ := json.Marshal(t)
		out = append(out, b)
	}
	if out = append(out, server...); len(out) == 0 {
		return nil
	}
	b, _ := json.Marshal(out)
	return b
}

// unsupported refuses what the Messages API cannot do.
func unsupported(req *wire.ChatRequest) error {
	if err := translate.NoResponseFormat(req, "an anthropic upstream"); err != nil {
		return err
	}
	return translate.Unsupported(req, "anthropic")
}

// upstreamToolChoice maps tool_choice and parallel_tool_calls onto Anthropic's
// tool_choice.
func upstreamToolChoice(req *wire.ChatRequest, haveTools bool) (json.RawMessage, error) {
	choice := map[string]any{}
	raw := translate.Member(req, "tool_choice")
	var s string
	switch {
	case raw == nil:
		choice["type"] = "auto"
	case json.Unmarshal(raw, &s) == nil:
		switch s {
		case "auto":
			choice["type"] = "auto"
		case "none":
			choice["type"] = "none"
		case "required":
			choice["type"] = "any"
		default:
			return nil, &wire.ParamError{Param: "tool_choice", Msg: fmt.Sprintf("%q is not a tool_choice", wire.Clip(s))}
		}
	default:
		var f struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &f) != nil || f.Function.Name == "" {
			return nil, &wire.ParamError{Param: "tool_choice", Msg: `must be "none", "auto", "required" or {"type":"function","function":{"name":"…"}}`}
		}
		choice["type"], choice["name"] = "tool", f.Function.Name
	}
	if p := translate.Member(req, "parallel_tool_calls"); string(p) == "false" && choice["type"] != "none" {
		choice["disable_parallel_tool_use"] = true
	}
	if !haveTools || raw == nil && len(choice) == 1 {
		return nil, nil // Anthropic's default, or nothing to choose from
	}
	return json.Marshal(choice)
}

// thinking checks the thinking member against Anthropic's bounds (C14)
// and turns it off when the final assistant message made calls and does
// not start with its thinking block.
func thinking(req *wire.ChatRequest, maxTokens int, unthought bool) (json.RawMessage, bool, error) {
	raw := translate.Member(req, "thinking")
	if raw == nil {
		return nil, false, nil
	}
	var t struct {
		Type   string `json:"type"`
		Budget int    `json:"budget_tokens"`
	}
	if json.Unmarshal(raw, &t) != nil {
		return nil, false, &wire.ParamError{Param: "thinking", Msg: `must be {"type":"enabled","budget_tokens":N} or {"type":"disabled"}`}
	}
	if t.Type != "enabled" {
		return raw, false, nil
	}
	switch {
	case t.Budget < 1024:
		return nil, false, &wire.ParamError{Param: "thinking.budget_tokens", Msg: fmt.Sprintf("the thinking budget (%d tokens) must be at least 1024 for an anthropic upstream; raise the route's reasoning budget", t.Budget)}
	case t.Budget >= maxTokens:
		return nil, false, &wire.ParamError{Param: "max_tokens", Msg: fmt.Sprintf("the thinking budget (%d tokens) must be smaller than max_tokens (%d); raise max_tokens or lower the reasoning level", t.Budget, maxTokens)}
	}
	if unthought {
		return nil, true, nil
	}
	return raw, false, nil
}

func thinkingOn(raw json.RawMessage) bool {
	return raw != nil && strings.Contains(string(raw), `"enabled"`)
}

// blockType reads a block's "type" (the blocks are the translator's own,
// so their type is their first member).
func blockType(b json.RawMessage) string {
	if len(b) > 0 && b[0] == '"' {
		return "text" // a string: the text block of it (appendArray)
	}
	typ, _ := wire.Member(b, "type")
	s, _ := wire.String(typ)
	return s
}

// appendHead writes the start of the body sent to the Messages API: its
// model (or Vertex AI's version), max_tokens and system; the messages
// follow (turns), then appendTail's members.
func (r *Request) appendHead(b []byte) []byte {
	if r.vertex {
		b = append(b, `{"anthropic_version":"`+VertexVersion+`"`...) // the model is in the path
	} else {
		b = wire.AppendString(append(b, `{"model":`...), r.Model)
	}
	b = append(b, `,"max_tokens":`...)
	b = strconv.AppendInt(b, int64(*r.MaxTokens), 10)
	if len(r.upSystem) > 0 {
		b = appendArray(append(b, `,"system":`...), r.upSystem)
	}
	return append(b, `,"messages":`...)
}

// appendTail ends the body after its messages: each member as the gateway
// holds it (JSON it built or checked, never marshalled again), in a fixed
// order.
func (r *Request) appendTail(b []byte) []byte {
	switch {
	case r.keptTools != nil:
		b = append(append(b, `,"tools":`...), r.keptTools...)
	case len(r.upTools) > 0:
		b = append(b, `,"tools":`...)
		b = appendTools(b, r.upTools)
	}
	for _, m := range r.members() {
		if len(m.v) > 0 {
			b = append(append(append(append(b, ',', '"'), m.name...), '"', ':'), m.v...)
		}
	}
	if r.Stream {
		b = append(b, `,"stream":true`...)
	}
	for _, k := range slices.Sorted(maps.Keys(r.extra)) {
		b = append(wire.AppendString(append(b, ','), k), ':')
		b = append(b, r.extra[k]...)
	}
	return append(b, '}')
}

// appendArray writes blocks as an array: a JSON string among them is the
// text block of that text (translate.AppendBlocks).
func appendArray(b []byte, vs []json.RawMessage) []byte {
	return translate.AppendBlocks(b, vs, `{"type":"text","text":`)
}

// appendTools writes tools as the Messages API declares them.
func appendTools(b []byte, tools []tool) []byte {
	b = append(b, '[')
	for i, t := range tools {
		if i > 0 {
			b = append(b, ',')
		}
		b = wire.AppendString(append(b, `{"name":`...), t.Name)
		if t.Description != "" {
			b = wire.AppendString(append(b, `,"description":`...), t.Description)
		}
		b = append(append(append(b, `,"input_schema":`...), t.InputSchema...), '}')
	}
	return append(b, ']')
}

// bodySize is about the length of the body UpstreamRequest writes: the
// chat messages' (translate.BodySize, the blocks a message keeps for
// those that keep some), 16 bytes more for each, and the tools twice
// (translated, and as a client declared them).
func bodySize(req *wire.ChatRequest) int {
	return translate.BodySize(req, req.Messages, translate.BlocksMember, func(wire.Message) int { return 16 }, 2)
}
