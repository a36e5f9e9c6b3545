package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/internal/wire"
)

// The pieces of the chat completions wire every translator reads or
// writes, written once.

// Member returns a request member's raw value, nil when absent or null.
func Member(req *wire.ChatRequest, key string) json.RawMessage {
	if v, ok := req.Get(key); ok && string(v) != "null" {
		return v
	}
	return nil
}

// IntMember returns the first of keys that holds an integer.
func IntMember(req *wire.ChatRequest, keys ...string) (int, bool) {
	for _, k := range keys {
		if v := Member(req, k); v != nil {
			if n, err := strconv.Atoi(string(v)); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

// Quote is s as a JSON string.
func Quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TextOf is a member's text when it is a JSON string, and "" when it is
// absent, null or anything else. It decodes into fresh state on every
// call: decoding null into a variable that already holds text leaves the
// text there (encoding/json's rule), which once made a reasoning delta
// followed by "content": null repeat the reasoning as answer text.
func TextOf(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// ReplyText is a tool reply's content as text: a string, or its text
// parts joined.
func ReplyText(c json.RawMessage) string {
	if s, ok := wire.AsString(c); ok {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(c, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Chunks writes the chat completion payloads of one response (its
// chat.completion.chunk payloads, or the whole chat.completion), all with
// its id, creation time and model.
type Chunks struct {
	ID, Model string
	Created   int64
}

// Delta is a chunk whose choice 0 has delta (a JSON object) and finish (a
// JSON value: null, or a quoted reason).
func (c Chunks) Delta(delta, finish string) []byte {
	return []byte(`{"id":` + Quote(c.ID) + `,"object":"chat.completion.chunk","created":` + strconv.FormatInt(c.Created, 10) +
		`,"model":` + Quote(c.Model) + `,"choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`)
}

// Usage is the chunk without choices that carries the response's usage.
func (c Chunks) Usage(usage json.RawMessage) []byte {
	return []byte(`{"id":` + Quote(c.ID) + `,"object":"chat.completion.chunk","created":` + strconv.FormatInt(c.Created, 10) +
		`,"model":` + Quote(c.Model) + `,"choices":[],"usage":` + string(usage) + `}`)
}

// Completion is the whole chat.completion whose one choice's message says
// text, reasoning (in reasoning_content) and calls (tool call objects),
// ending with finish; usage is left out when nil.
func (c Chunks) Completion(text, reasoning string, calls []json.RawMessage, finish string, usage json.RawMessage) []byte {
	msg := map[string]any{"role": "assistant", "content": nil}
	if text != "" {
		msg["content"] = text
	}
	if reasoning != "" {
		msg["reasoning_content"] = reasoning
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	o := map[string]any{"id": c.ID, "object": "chat.completion", "created": c.Created, "model": c.Model,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finish}}}
	if usage != nil {
		o["usage"] = usage
	}
	b, _ := json.Marshal(o)
	return b
}

// ToolCall is a whole answer's tool call object.
func ToolCall(id, name, arguments string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"id": id, "type": "function", "function": map[string]string{"name": name, "arguments": arguments}})
	return b
}

// MessagesErrorType is an error type, in an error chunk (ErrorChunk) or
// an IncompleteError, that a translator names in the Messages API's own
// words (an Anthropic upstream's overloaded_error, rate_limit_error, …):
// the Messages client API keeps such a type for its client, while every
// other type an upstream names — an OpenAI-compatible server's
// invalid_request_error among them — is not the Messages API's to keep
// (messages.ErrorType). No client API writes the prefix.
func MessagesErrorType(typ string) string { return MessagesErrorPrefix + typ }

// MessagesErrorPrefix starts an error type named in the Messages API's
// words (MessagesErrorType).
const MessagesErrorPrefix = "messages:"

// ErrorChunk is a chunk holding an error object, with which the
// normalizer ends the stream.
func ErrorChunk(message, typ string) []byte {
	if message == "" {
		message = "an unspecified error"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"message": message, "type": typ}})
	return b
}

// Call is a tool call of a chat answer, or one of its fragments.
type Call struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Said is what a normalized chat delta (or a whole message) says, each
// member decoded on its own: reasoning (in field), text, tool calls.
type Said struct {
	Reasoning, Text string
	Calls           []Call
}

// ReadDelta reads a delta's (or a message's) members.
func ReadDelta(d map[string]json.RawMessage, field string) Said {
	s := Said{Reasoning: TextOf(d[field]), Text: TextOf(d["content"])}
	if json.Unmarshal(d["tool_calls"], &s.Calls) != nil {
		s.Calls = nil
	}
	return s
}

// ToolDescription is a declared tool's function.description.
func ToolDescription(raw json.RawMessage) string {
	var t struct {
		Function struct {
			Description string `json:"description"`
		} `json:"function"`
	}
	_ = json.Unmarshal(raw, &t)
	return t.Function.Description
}

// Unsupported refuses, before anything is sent, what no translated
// upstream does here: several choices (n > 1), logprobs, audio; upstream
// names the protocol in the message.
func Unsupported(req *wire.ChatRequest, upstream string) error {
	if n, ok := IntMember(req, "n"); ok && n != 1 {
		return &wire.ParamError{Param: "n", Msg: "a " + upstream + " upstream answers one choice here; send n: 1 or leave it out", Unsupported: true}
	}
	for _, k := range []string{"logprobs", "audio"} {
		if v := Member(req, k); v != nil && string(v) != "false" {
			return &wire.ParamError{Param: k, Msg: "cannot be sent to a " + upstream + " upstream here", Unsupported: true}
		}
	}
	return nil
}

// Usage is a chat completion's usage, as an inbound translator reports it
// in its own API's terms.
type Usage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// chunk is the part of a normalized chat chunk an inbound translator
// reads.
type chunk struct {
	Choices []struct {
		Index        int                        `json:"index"`
		Delta        map[string]json.RawMessage `json:"delta"`
		FinishReason *string                    `json:"finish_reason"`
	} `json:"choices"`
	Usage *Usage `json:"usage"`
}

// Tally is what an inbound translator's stream keeps of the chat chunks
// it has read, for its last events: the finish reason and the usage.
type Tally struct {
	Finish string
	Usage  *Usage
}

// Chunk reads one normalized chat chunk: start runs once it decodes (the
// stream's opening events), then delta with each delta of choice 0, in
// order (a translated answer has one choice).
func (t *Tally) Chunk(data []byte, start func() error, delta func(map[string]json.RawMessage) error) error {
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return &wire.ProtocolError{Index: -1, Msg: "a chunk to translate is not JSON"}
	}
	if err := start(); err != nil {
		return err
	}
	if c.Usage != nil {
		t.Usage = c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			t.Finish = *ch.FinishReason
		}
		if err := delta(ch.Delta); err != nil {
			return err
		}
	}
	return nil
}

// Completion is the part of a normalized chat.completion an inbound
// translator reads: its first choice and its usage.
type Completion struct {
	Message      map[string]json.RawMessage
	FinishReason string
	Usage        *Usage
}

// ReadCompletion decodes a normalized chat.completion; what names what the
// caller makes of it, for the error when it has no choice.
func ReadCompletion(chat []byte, what string) (Completion, error) {
	var c struct {
		Choices []struct {
			Message      map[string]json.RawMessage `json:"message"`
			FinishReason string                     `json:"finish_reason"`
		} `json:"choices"`
		Usage *Usage `json:"usage"`
	}
	if err := json.Unmarshal(chat, &c); err != nil || len(c.Choices) == 0 {
		return Completion{}, &wire.ProtocolError{Index: -1, Msg: "the answer has no choice to make " + what + " of"}
	}
	return Completion{Message: c.Choices[0].Message, FinishReason: c.Choices[0].FinishReason, Usage: c.Usage}, nil
}

// BlocksSay reports whether Anthropic content blocks say what a chat turn
// says, so that they can stand for it: the same text (their text blocks
// joined), the same tool uses (ids and names, in order), and no thinking
// block without its signature (which only the gateway's store can put
// back).
func BlocksSay(blocks []json.RawMessage, text string, ids, names []string) bool {
	k, at := 0, 0
	for _, raw := range blocks {
		var typ, txt, id, name, sig []byte
		if !wire.EachMember(raw, func(key string, v []byte) bool {
			switch key {
			case "type":
				typ = v
			case "text":
				txt = v
			case "id":
				id = v
			case "name":
				name = v
			case "signature":
				sig = v
			}
			return true
		}) {
			return false
		}
		switch {
		case wire.StringIs(typ, "text"):
			n, ok := wire.StringPrefix(txt, text[at:])
			if !ok {
				return false
			}
			at += n
		case wire.StringIs(typ, "tool_use"):
			if k >= len(ids) || !wire.StringIs(id, ids[k]) || !wire.StringIs(name, names[k]) {
				return false
			}
			k++
		case wire.StringIs(typ, "thinking"):
			if len(sig) <= 2 || sig[0] != '"' { // no signature, or an empty one
				return false
			}
		}
	}
	return k == len(ids) && at == len(text)
}

// Format is a chat request's response_format: json_object, or json_schema
// with its name, schema and strictness.
type Format struct {
	Type   string
	Name   string
	Schema json.RawMessage
	Strict *bool
}

// ResponseFormat reads response_format for a translated upstream: nil
// when absent or text; a malformed one, or a type other than json_object
// and json_schema, is refused naming the upstream's protocol.
func ResponseFormat(req *wire.ChatRequest, upstream string) (*Format, error) {
	raw := Member(req, "response_format")
	if raw == nil {
		return nil, nil
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if json.Unmarshal(raw, &rf) != nil {
		return nil, &wire.ParamError{Param: "response_format", Msg: "must be an object with a type"}
	}
	switch rf.Type {
	case "text", "":
		return nil, nil
	case "json_object", "json_schema":
		return &Format{Type: rf.Type, Name: rf.JSONSchema.Name, Schema: rf.JSONSchema.Schema, Strict: rf.JSONSchema.Strict}, nil
	}
	return nil, &wire.ParamError{Param: "response_format.type", Msg: fmt.Sprintf("%q has no counterpart for a %s upstream", wire.Clip(rf.Type), upstream), Unsupported: true}
}

// NotParts is the error for the content at param (messages[3].content,
// input[2].content) that is neither a string nor an array of content
// parts.
func NotParts(param string) error {
	return &wire.ParamError{Param: param, Msg: "must be a string or an array of content parts"}
}

// AppendArguments appends call k of message i's arguments as a JSON
// object, as an upstream whose calls take an object (Anthropic's tool_use
// input, Gemini's functionCall args, Bedrock's toolUse input) needs them,
// decoded straight into out: "" is {}, and anything else but an object is
// refused with 400, what saying what the upstream takes ("an anthropic
// upstream (its tool_use input is one)"). On an error out is as it was.
func AppendArguments(out []byte, c wire.ToolCall, i, k int, what string) ([]byte, error) {
	mark := len(out)
	switch a := c.Function.Arguments; {
	case len(a) == 0 || string(a) == "null":
	case a[0] == '"' && a[len(a)-1] == '"':
		var ok bool
		if out, ok = wire.AppendText(out, a); !ok {
			out = append(out, a...) // not a string after all: taken as it is, as ArgumentsText does
		}
	default:
		out = append(out, a...)
	}
	args := bytes.TrimSpace(out[mark:])
	if len(args) == 0 {
		return append(out[:mark], "{}"...), nil
	}
	if args[0] != '{' || !json.Valid(args) {
		return out[:mark], &wire.ParamError{Param: fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, k), Msg: "must be a JSON object for " + what}
	}
	return out[:mark+copy(out[mark:], args)], nil
}

// BodySize is about the length of the part of an upstream's body that
// holds msgs (req's, or some of them) and req's tools: each message's
// bytes (the blocks or items it keeps in member, when it keeps some, and
// for blocks the 32 bytes of a turn's role that blocks lack and items
// have) and what per says the protocol writes more for it, and each
// tool's declaration times tools (a protocol that may send it twice). A
// body is written into a buffer of this size, which a translation of
// the shapes wiretest.Shapes holds never outgrows.
func BodySize(req *wire.ChatRequest, msgs []wire.Message, member string, per func(wire.Message) int, tools int) int {
	n := 512
	for _, m := range msgs {
		if kept := KeptSize(req.Kept, m, member); kept > 0 {
			n += per(m) + kept
			if member == BlocksMember {
				n += 32
			}
			continue
		}
		raw := len(m.Raw)
		if m.ContentApart() {
			// Its content in place of the member that names it, whose
			// name is 9 bytes longer than "content"'s.
			raw += len(m.Content) - 9
		}
		n += per(m) + max(raw, len(m.Content)+len(m.ToolCallID))
	}
	for _, t := range req.Tools {
		n += tools * len(t.Raw)
	}
	return n
}

// NoResponseFormat refuses a response_format other than text, for an
// upstream that has none (upstream names it: "an anthropic upstream").
func NoResponseFormat(req *wire.ChatRequest, upstream string) error {
	if rf := Member(req, "response_format"); rf != nil && string(rf) != "null" && !strings.Contains(string(rf), `"text"`) {
		return &wire.ParamError{Param: "response_format", Msg: upstream + " has no response_format; ask for the shape in the prompt or declare a tool", Unsupported: true}
	}
	return nil
}

// CachedUsage is the usage as chat completions report it, from a protocol
// that counts the input read from and written to its cache apart from
// the rest (Anthropic's, Bedrock's): the prompt counts all three, and the
// reads are its cached tokens.
func CachedUsage(input, cacheRead, cacheWrite, output int64) json.RawMessage {
	prompt := input + cacheRead + cacheWrite
	b, _ := json.Marshal(map[string]any{
		"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output,
		"prompt_tokens_details": map[string]int64{"cached_tokens": cacheRead},
	})
	return b
}

// AppendBlocks writes blocks as a JSON array: a JSON string among them (a
// text the client wrote, a view of its request) is the text block of that
// text, textBlock's opening then the string then '}', written here rather
// than copied into one beforehand.
func AppendBlocks(b []byte, vs []json.RawMessage, textBlock string) []byte {
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		if len(v) > 0 && v[0] == '"' {
			b = append(append(append(b, textBlock...), v...), '}')
			continue
		}
		b = append(b, v...)
	}
	return append(b, ']')
}
