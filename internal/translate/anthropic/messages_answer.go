package anthropic

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Meta is what the answer repeats: its id and the model asked for, and the
// chat member the normalized answer carries reasoning in.
type Meta struct {
	ID, Model      string
	ReasoningField string
	// Thoughts are a whole answer's thinking blocks as an Anthropic
	// upstream sent them (a JSON array, signatures and redacted data
	// unchanged), or nil: Whole then writes them instead of the
	// reasoning, so that the client can send them back as they are.
	Thoughts []byte
	// Content is a whole answer's content blocks as an Anthropic upstream
	// sent them, or nil: Whole writes them as they are (server tool
	// blocks, citations and signatures included) while they say what the
	// normalized, judged answer says — its text, its calls.
	Content json.RawMessage
}

// NewID returns a message id.
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "msg_" + hex.EncodeToString(b[:])
}

// EventSink is where a Stream's events go: one SSE event each, with its
// event name.
type EventSink interface {
	SendEvent(event string, data []byte) error
	Committed() bool
}

// usage is the usage as the Messages API reports it: input tokens
// without the cached ones, which it reports apart.
func usage(u *translate.Usage) map[string]int64 {
	if u == nil {
		return map[string]int64{"input_tokens": 0, "output_tokens": 0}
	}
	cached := u.PromptTokensDetails.CachedTokens
	return map[string]int64{"input_tokens": u.PromptTokens - cached, "output_tokens": u.CompletionTokens, "cache_read_input_tokens": cached}
}

// stopReason maps a chat finish reason onto the Messages API's.
func stopReason(finish string) string {
	switch finish {
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

// Stream turns a normalized, judged chat completion stream into the
// Messages API's events: message_start and a ping, then per block its
// content_block_start, deltas (thinking_delta, text_delta,
// input_json_delta) and content_block_stop, then message_delta with the
// stop reason and usage and message_stop — or, after a failure, one error
// event and no message_stop. It is created per response and is not safe
// for concurrent use.
//
// A Messages stream has one block open at a time, and a chat stream's
// parallel calls may interleave (docs/quirks.md A43): a call that starts
// while another call's block is open is held — its arguments gathered —
// and sent whole, as a block of its own, once that block ends (at the
// next text, thinking or other block, or at the end). The open call's
// arguments stream as they come; no client runs a tool before
// message_stop.
type Stream struct {
	meta    Meta
	sink    EventSink
	started bool
	index   int    // the open block's index, -1 when none is open
	kind    string // the open block's type
	calls   map[int]int
	held    []heldCall  // calls waiting for the open tool_use block to end, in order
	heldAt  map[int]int // a held call's chat index → its place in held
	tally   translate.Tally
	ended   bool
}

// heldCall is a call that started while another's block was open.
type heldCall struct {
	chat     int // its chat index
	id, name string
	args     []byte
}

// NewStream returns a Stream writing to sink.
func NewStream(m Meta, sink EventSink) *Stream {
	return &Stream{meta: m, sink: sink, index: -1, calls: map[int]int{}}
}

func (s *Stream) event(typ string, v map[string]any) error {
	v["type"] = typ
	b, _ := json.Marshal(v)
	return s.sink.SendEvent(typ, b)
}

func (s *Stream) start() error {
	if s.started {
		return nil
	}
	s.started = true
	msg := map[string]any{"id": s.meta.ID, "type": "message", "role": "assistant", "model": s.meta.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 0, "output_tokens": 0}}
	if err := s.event("message_start", map[string]any{"message": msg}); err != nil {
		return err
	}
	return s.event("ping", map[string]any{})
}

// Chunk takes one chat chunk.
func (s *Stream) Chunk(data []byte) error {
	return s.tally.Chunk(data, s.start, s.delta)
}

func (s *Stream) delta(d map[string]json.RawMessage) error {
	said := translate.ReadDelta(d, s.meta.ReasoningField)
	if text := said.Reasoning; text != "" {
		if err := s.open("thinking", map[string]any{"type": "thinking", "thinking": "", "signature": ""}); err != nil {
			return err
		}
		if err := s.event("content_block_delta", map[string]any{"index": s.index, "delta": map[string]string{"type": "thinking_delta", "thinking": text}}); err != nil {
			return err
		}
	}
	if err := s.thought(d); err != nil {
		return err
	}
	if text := said.Text; text != "" {
		if err := s.open("text", map[string]any{"type": "text", "text": ""}); err != nil {
			return err
		}
		if err := s.event("content_block_delta", map[string]any{"index": s.index, "delta": map[string]string{"type": "text_delta", "text": text}}); err != nil {
			return err
		}
	}
	for _, c := range said.Calls {
		if err := s.call(c.Index, c.ID, c.Function.Name, c.Function.Arguments); err != nil {
			return err
		}
	}
	return nil
}

// thought writes what an Anthropic upstream sent that the chat model has
// no slot for: a text block's citation (citations_delta), a block of
// another type (a server tool's use or result) whole, a thinking block's
// signature, which ends the block (the next thinking is a new one), or a
// redacted thinking block, whole.
func (s *Stream) thought(d map[string]json.RawMessage) error {
	if raw, ok := d[translate.SignatureMember]; ok {
		var sig string
		if json.Unmarshal(raw, &sig) != nil || sig == "" || s.kind != "thinking" {
			return nil
		}
		if err := s.event("content_block_delta", map[string]any{"index": s.index, "delta": map[string]string{"type": "signature_delta", "signature": sig}}); err != nil {
			return err
		}
		return s.closeBlock()
	}
	if raw, ok := d[translate.CitationMember]; ok && len(raw) > 0 && raw[0] == '{' {
		if err := s.open("text", map[string]any{"type": "text", "text": ""}); err != nil {
			return err
		}
		return s.event("content_block_delta", map[string]any{"index": s.index, "delta": map[string]any{"type": "citations_delta", "citation": raw}})
	}
	if raw, ok := d[translate.BlockMember]; ok && len(raw) > 0 && raw[0] == '{' {
		var b struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(raw, &b)
		if err := s.closeBlock(); err != nil {
			return err
		}
		s.index++
		s.kind = b.Type
		if err := s.event("content_block_start", map[string]any{"index": s.index, "content_block": raw}); err != nil {
			return err
		}
		return s.closeBlock()
	}
	if raw, ok := d[translate.RedactedMember]; ok {
		var data string
		if json.Unmarshal(raw, &data) != nil {
			return nil
		}
		if err := s.open("redacted_thinking", map[string]any{"type": "redacted_thinking", "data": data}); err != nil {
			return err
		}
		return s.closeBlock()
	}
	return nil
}

// call writes one tool-call fragment: the first (with its id and name)
// opens a tool_use block — or, while another call's block is open, is
// held with the call's later fragments; arguments are input_json_delta.
func (s *Stream) call(k int, id, name, args string) error {
	if i, ok := s.heldAt[k]; ok {
		s.held[i].args = append(s.held[i].args, args...)
		return nil
	}
	if _, open := s.calls[k]; !open {
		if id == "" || name == "" {
			return &wire.ProtocolError{Index: k, Msg: "a tool call reached the Messages translation without its id and name"}
		}
		if s.kind == "tool_use" {
			if s.heldAt == nil {
				s.heldAt = map[int]int{}
			}
			s.heldAt[k] = len(s.held)
			s.held = append(s.held, heldCall{chat: k, id: id, name: name, args: []byte(args)})
			return nil
		}
		if err := s.open("tool_use", map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}); err != nil {
			return err
		}
		s.calls[k] = s.index
	} else if s.calls[k] != s.index || s.kind != "tool_use" {
		return &wire.ProtocolError{Index: k, Msg: "a tool call's fragments came after its block had ended (text or another block between them)"}
	}
	return s.inputDelta(args)
}

// inputDelta writes a piece of the open tool_use block's input.
func (s *Stream) inputDelta(args string) error {
	if args == "" {
		return nil
	}
	return s.event("content_block_delta", map[string]any{"index": s.index, "delta": map[string]string{"type": "input_json_delta", "partial_json": args}})
}

// open starts a block of kind unless one is open already (a tool_use
// block is always new).
func (s *Stream) open(kind string, start map[string]any) error {
	if s.index >= 0 && s.kind == kind && kind != "tool_use" {
		return nil
	}
	if err := s.closeBlock(); err != nil {
		return err
	}
	s.index++
	s.kind = kind
	return s.event("content_block_start", map[string]any{"index": s.index, "content_block": start})
}

// closeBlock ends the open block; after a tool_use block, the calls held
// while it was open follow, each whole.
func (s *Stream) closeBlock() error {
	if s.kind == "" {
		return nil
	}
	s.kind = ""
	if err := s.event("content_block_stop", map[string]any{"index": s.index}); err != nil {
		return err
	}
	held := s.held
	s.held = nil
	clear(s.heldAt)
	for i := range held {
		h := &held[i]
		s.index++
		s.calls[h.chat] = s.index
		if err := s.event("content_block_start", map[string]any{"index": s.index, "content_block": map[string]any{"type": "tool_use", "id": h.id, "name": h.name, "input": map[string]any{}}}); err != nil {
			return err
		}
		if err := s.inputDelta(string(h.args)); err != nil {
			return err
		}
		if err := s.event("content_block_stop", map[string]any{"index": s.index}); err != nil {
			return err
		}
	}
	return nil
}

// Committed reports whether anything reached the client.
func (s *Stream) Committed() bool { return s.sink.Committed() }

// Done ends a response judged complete: the open block closed, then
// message_delta with the stop reason and the usage, then message_stop.
func (s *Stream) Done() error {
	if s.ended {
		return nil
	}
	s.ended = true
	if err := s.start(); err != nil {
		return err
	}
	if err := s.closeBlock(); err != nil {
		return err
	}
	if err := s.event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stopReason(s.tally.Finish), "stop_sequence": nil}, "usage": usage(s.tally.Usage)}); err != nil {
		return err
	}
	return s.event("message_stop", map[string]any{})
}

// Fail ends the stream with one error event, in the Messages API's shape;
// no message_stop follows.
func (s *Stream) Fail(body wire.ErrorBody) error {
	if s.ended {
		return nil
	}
	s.ended = true
	return s.sink.SendEvent("error", ErrorBody(0, body))
}

// ErrorBody is an error in the Messages API's shape for an HTTP status
// and the gateway's OpenAI-shaped body: {"type":"error","error":{"type",
// "message"}}, the type Anthropic's SDKs raise their typed errors by.
func ErrorBody(status int, body wire.ErrorBody) []byte {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": ErrorType(status, body), "message": body.Error.Message}})
	return b
}

// errorTypes are the Messages API's error types
// (https://docs.anthropic.com/en/api/errors).
var errorTypes = map[string]bool{"invalid_request_error": true, "authentication_error": true, "billing_error": true,
	"permission_error": true, "not_found_error": true, "request_too_large": true, "rate_limit_error": true,
	"api_error": true, "timeout_error": true, "overloaded_error": true}

// ErrorType is the Messages API's error type for a status (0 after a
// stream started: the body's code says): the upstream's own when a
// translator named it in the Messages API's words (an Anthropic
// upstream's overloaded_error mid-stream stays overloaded_error,
// translate.MessagesErrorType), else the one the status or the gateway's
// code means.
func ErrorType(status int, body wire.ErrorBody) string {
	if typ, ok := strings.CutPrefix(body.Error.UpstreamType, translate.MessagesErrorPrefix); ok && errorTypes[typ] {
		return typ
	}
	code := ""
	if body.Error.Code != nil {
		code = *body.Error.Code
	}
	switch {
	case code == "upstream_unavailable" || code == "deployments_cooling_down":
		return "overloaded_error"
	case code == "upstream_rate_limited" || code == "rate_limit_exceeded":
		return "rate_limit_error"
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 404:
		return "not_found_error"
	case status == 413:
		return "request_too_large"
	case status == 429:
		return "rate_limit_error"
	case status == 503 || status == 529:
		return "overloaded_error"
	case status == 504:
		return "timeout_error"
	case status >= 400 && status < 500:
		return "invalid_request_error"
	}
	return "api_error"
}

// Whole turns a normalized, judged chat completion into a Messages API
// message.
func Whole(chat []byte, m Meta) ([]byte, error) {
	c, err := translate.ReadCompletion(chat, "a message")
	if err != nil {
		return nil, err
	}
	said := translate.ReadDelta(c.Message, m.ReasoningField)
	var content []any
	if blocks := sentBlocks(m.Content, said); blocks != nil {
		for _, b := range blocks {
			content = append(content, b)
		}
		return json.Marshal(map[string]any{"id": m.ID, "type": "message", "role": "assistant", "model": m.Model, "content": content,
			"stop_reason": stopReason(c.FinishReason), "stop_sequence": nil, "usage": usage(c.Usage)})
	}
	var thoughts []json.RawMessage
	switch {
	case len(m.Thoughts) > 0 && json.Unmarshal(m.Thoughts, &thoughts) == nil:
		for _, t := range thoughts {
			content = append(content, t)
		}
	case said.Reasoning != "":
		content = append(content, map[string]any{"type": "thinking", "thinking": said.Reasoning, "signature": ""})
	}
	if said.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": said.Text})
	}
	for _, tc := range said.Calls {
		input := json.RawMessage(strings.TrimSpace(tc.Function.Arguments))
		if len(input) == 0 || !json.Valid(input) {
			input = json.RawMessage("{}")
		}
		content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Function.Name, "input": input})
	}
	if content == nil {
		content = []any{}
	}
	return json.Marshal(map[string]any{"id": m.ID, "type": "message", "role": "assistant", "model": m.Model, "content": content,
		"stop_reason": stopReason(c.FinishReason), "stop_sequence": nil, "usage": usage(c.Usage)})
}

// ContentOf is the content of a message an Anthropic upstream sent, or nil.
func ContentOf(message []byte) json.RawMessage {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(message, &m)
	return m.Content
}

// sentBlocks are the upstream's content blocks when they say what the
// answer says, else nil.
func sentBlocks(content json.RawMessage, said translate.Said) []json.RawMessage {
	var blocks []json.RawMessage
	if len(content) == 0 || json.Unmarshal(content, &blocks) != nil || len(blocks) == 0 {
		return nil
	}
	ids, names := make([]string, len(said.Calls)), make([]string, len(said.Calls))
	for k, c := range said.Calls {
		ids[k], names[k] = c.ID, c.Function.Name
	}
	if !translate.BlocksSay(blocks, said.Text, ids, names) {
		return nil
	}
	return blocks
}

// EstimateTokens is count_tokens' answer when the route's upstream has no
// endpoint for it: the characters of the request's text, four to a token
// (the rough rule for English and code), at least one. It is an estimate,
// and documented as one.
func EstimateTokens(chat []byte) int {
	var c struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(chat, &c)
	n := len(c.Tools)
	for _, m := range c.Messages {
		n += len(m.Content)
	}
	return max(1, n/4)
}
