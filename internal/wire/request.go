package wire

import (
	"encoding/json"
	"fmt"
	"iter"
	"unicode/utf8"
)

// ChatRequest is a decoded POST /v1/chat/completions body. The typed fields
// are the ones the gateway acts on; every member of the original object is
// kept as raw bytes so that [ChatRequest.Encode] passes the rest on intact.
//
// A ChatRequest is not safe for concurrent use.
type ChatRequest struct {
	// Model is the model name as the client sent it.
	Model string
	// Stream reports whether the client asked for a streamed response.
	Stream bool
	// Messages is the transcript. A caller that changes it must call
	// [ChatRequest.SetMessages] so that Encode writes the new list.
	Messages []Message
	// Tools are the declared tools, in order (nil when the request has
	// none).
	Tools []Tool
	// Kept, on a request a client API's translator made (DecodeTranslated)
	// for an upstream of the client's protocol, are the blocks or items
	// the client sent, which its messages' own members name by their
	// index (translate.Kept): views of the client's request, never copied
	// into the translation. Nil on a request a client sent.
	Kept []json.RawMessage

	obj             Object
	messagesChanged bool
	// raw is the body as decoded, sent as is when nothing changed.
	raw     []byte
	changed bool
}

// Message is one entry of the transcript. Raw holds the message's original
// bytes; a message the gateway creates has a nil Raw and is encoded from its
// typed fields.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`

	// Raw is the message exactly as the client sent it, or nil.
	Raw json.RawMessage `json:"-"`
	// own: Raw holds a member named with OwnPrefix (DecodeRequest
	// strips it).
	own bool
	// apart: Content is a string the client wrote, which the translated
	// message names by its index (KeptContent) instead of holding it:
	// Raw has no content member.
	apart bool
	// sealed: a reply SealReply made.
	sealed bool
}

// SealReply is the tool message the gateway makes for call id, which
// nothing answered (repair's seal, docs/spec.md §1.4): its content is
// content, a JSON string whose text is the JSON object
// {"success":false,"error":sentence}, the sentence saying why.
func SealReply(id string, content json.RawMessage) Message {
	return Message{Role: "tool", ToolCallID: id, Content: content, sealed: true}
}

// Seal, on a reply SealReply made, is its sentence; "" on every other
// message. A translator whose protocol marks a failed result
// (Anthropic's is_error) sends that sentence so marked.
func (m *Message) Seal() string {
	if !m.sealed {
		return ""
	}
	var text string
	var v struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(m.Content, &text) != nil || json.Unmarshal([]byte(text), &v) != nil {
		return ""
	}
	return v.Error
}

// ContentApart reports whether the message's content is not in its Raw:
// a string of the client's request that a client API's translator named
// by its index (KeptContent) rather than copied into the chat message.
// What reads a message's text from its Raw reads Content besides.
func (m *Message) ContentApart() bool { return m.apart }

// ToolCall is one call an assistant message made. Raw holds the call's
// original bytes; a call the gateway builds has a nil Raw.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
	// Extra is the call's extra_content member as the client sent it
	// (where Gemini's OpenAI-compatible dialect keeps a thought
	// signature), nil when it has none: read once by the decoder, so
	// nothing needs to parse Raw again to find it, and kept when a call
	// is rebuilt from these fields.
	Extra json.RawMessage `json:"extra_content,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// ThoughtSignature is the thought signature an extra_content member
// holds (extra_content.google.thought_signature, where Gemini's
// OpenAI-compatible dialect signs a call), or "". Member names are
// matched exactly, the last of a repeated one counting.
func ThoughtSignature(extra json.RawMessage) string {
	if len(extra) == 0 {
		return ""
	}
	o, err := ParseObject(extra)
	if err != nil {
		return ""
	}
	google, _ := o.Get("google")
	if o, err = ParseObject(google); err != nil {
		return ""
	}
	v, _ := o.Get("thought_signature")
	sig, _ := String(v)
	return sig
}

// UnmarshalJSON decodes a call and keeps its bytes in Raw.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	type plain ToolCall
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = ToolCall(p)
	c.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// MarshalJSON writes Raw when the call has one, else the typed fields.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	if c.Raw != nil {
		return c.Raw, nil
	}
	type plain ToolCall
	return json.Marshal(plain(c))
}

// ArgumentsText returns the arguments as the text a tool would parse: the
// string's value when Arguments is a JSON string, "" when absent or null,
// and the raw JSON otherwise (an object some clients send, docs/quirks.md C26).
func (f FunctionCall) ArgumentsText() string {
	a := f.Arguments
	if len(a) == 0 || string(a) == "null" {
		return ""
	}
	if a[0] == '"' {
		if end, escaped, err := skipString(a, 0); err == nil && end == len(a) {
			return stringValue(a, 0, end, escaped)
		}
	}
	return string(a)
}

// FunctionCall names the function a [ToolCall] calls. Arguments is kept raw:
// it is normally a JSON string, but some clients send an object.
type FunctionCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Tool is one declared tool. Raw holds its original bytes.
type Tool struct {
	// Type is the tool's type ("function").
	Type string
	// Name is function.name ("" when the tool has no function).
	Name string
	// Parameters is function.parameters as sent (nil when absent or null).
	Parameters json.RawMessage
	Raw        json.RawMessage
}

// DecodeKind classifies a [DecodeError].
type DecodeKind int

// Kinds of decode error.
const (
	// KindValue is a parameter of the wrong type or value.
	KindValue DecodeKind = iota
	// KindSyntax is a body that is not one JSON object.
	KindSyntax
	// KindMissing is a required parameter (model, messages) missing, empty
	// or not of its type.
	KindMissing
	// KindDuplicate is a member name repeated in one object.
	KindDuplicate
)

// DecodeError says why a request body could not be used. Param names the
// offending parameter when there is one (for example "messages[2].role").
type DecodeError struct {
	Kind   DecodeKind
	Param  string
	Offset int64 // byte offset of a JSON syntax error, or -1
	Msg    string
	Err    error
}

func (e *DecodeError) Error() string {
	if e.Param != "" {
		return e.Param + ": " + e.Msg
	}
	return e.Msg
}

func (e *DecodeError) Unwrap() error { return e.Err }

// SetMessages replaces the transcript; Encode then writes msgs instead of the
// original array. Messages with a non-nil Raw are written as those bytes.
func (r *ChatRequest) SetMessages(msgs []Message) {
	r.Messages = msgs
	r.messagesChanged = true
	r.changed = true
}

// Members yields the request's top-level members, model and messages
// included, as received (or as set).
func (r *ChatRequest) Members() iter.Seq2[string, json.RawMessage] { return r.obj.Members() }

// Get returns the raw value of a top-level member (the last one when the key
// repeats) and whether it is present.
func (r *ChatRequest) Get(key string) (json.RawMessage, bool) { return r.obj.Get(key) }

// Set replaces every member named key with value, or appends it when absent.
// Set("model", …) and Set("messages", …) are ignored: use the typed fields.
func (r *ChatRequest) Set(key string, value json.RawMessage) {
	if key == "model" || key == "messages" {
		return
	}
	r.obj.Set(key, value)
	r.changed = true
}

// Delete removes a top-level member. Delete("model") and
// Delete("messages") are ignored.
func (r *ChatRequest) Delete(key string) {
	if key == "model" || key == "messages" {
		return
	}
	r.obj.Delete(key)
	r.changed = true
}

// Encode returns the request body to send upstream, with model as the model
// name. Every other member keeps its original bytes and position; messages
// are the original array unless SetMessages was called. A request nothing
// changed, sent with its own model name, is the original body itself.
func (r *ChatRequest) Encode(model string) ([]byte, error) {
	if !r.changed && model == r.Model && r.raw != nil {
		return r.raw, nil
	}
	size := 2
	for _, m := range r.obj.members {
		size += len(m.key) + 4
		if m.key != "messages" || !r.messagesChanged {
			size += len(m.value) // changed messages are counted below
		}
	}
	if r.messagesChanged {
		for i := range r.Messages {
			size += len(r.Messages[i].Raw) + 1
			if r.Messages[i].Raw == nil {
				size += 256 // a message the gateway built: a seal is about 200 bytes
			}
		}
	}
	buf := make([]byte, 0, size+len(model))
	buf = append(buf, '{')
	for i, m := range r.obj.members {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = m.appendKey(buf)
		buf = append(buf, ':')
		switch {
		case m.key == "model":
			buf = AppendString(buf, model)
		case m.key == "messages" && r.messagesChanged:
			var err error
			if buf, err = appendMessages(buf, r.Messages); err != nil {
				return nil, err
			}
		default:
			buf = append(buf, m.value...)
		}
	}
	buf = append(buf, '}')
	return buf, nil
}

func appendMessages(buf []byte, msgs []Message) ([]byte, error) {
	buf = append(buf, '[')
	for i := range msgs {
		if i > 0 {
			buf = append(buf, ',')
		}
		if msgs[i].Raw != nil {
			buf = append(buf, msgs[i].Raw...)
			continue
		}
		var err error
		if buf, err = appendMessage(buf, &msgs[i]); err != nil {
			return nil, fmt.Errorf("wire: encode message %d: %w", i, err)
		}
	}
	return append(buf, ']'), nil
}

// appendMessage encodes a message the gateway built (no Raw), with the
// same members, order and omissions as its json tags say.
func appendMessage(buf []byte, m *Message) ([]byte, error) {
	buf = append(buf, `{"role":`...)
	buf = AppendString(buf, m.Role)
	if len(m.Content) > 0 {
		buf = append(buf, `,"content":`...)
		buf = append(buf, m.Content...)
	}
	if len(m.ToolCalls) > 0 {
		buf = append(buf, `,"tool_calls":`...)
		b, err := json.Marshal(m.ToolCalls)
		if err != nil {
			return nil, err
		}
		buf = append(buf, b...)
	}
	if m.ToolCallID != "" {
		buf = append(buf, `,"tool_call_id":`...)
		buf = AppendString(buf, m.ToolCallID)
	}
	return append(buf, '}'), nil
}

// AppendString appends s as a JSON string, escaped byte for byte as
// encoding/json escapes it (HTML characters, U+2028 and U+2029 as \u
// escapes, invalid UTF-8 as U+FFFD), without allocating.
func AppendString[S string | []byte](buf []byte, s S) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune([]byte(s[i:min(i+utf8.UTFMax, len(s))]))
		switch {
		case r == utf8.RuneError && size == 1:
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

const hexDigits = "0123456789abcdef"

// AppendToken appends tok, a JSON string token as a client sent it (a
// view of its body, scanned valid), as the JSON string it stands for:
// as it is when it is valid UTF-8 (its escapes are JSON's, so it means
// what it meant), decoded and escaped again otherwise; null or nothing
// is "".
func AppendToken(buf, tok []byte) []byte {
	switch {
	case len(tok) == 0 || tok[0] != '"':
		return append(buf, `""`...)
	case utf8.Valid(tok):
		return append(buf, tok...)
	}
	s, _ := AsString(tok) // JSON's whitespace after it allowed, as everywhere a token is read
	return AppendString(buf, s)
}

// Derive returns a request to send that starts as r: its members and
// messages are r's, and changing them (Set, Delete, SetMessages) leaves r
// as it is. A retry or a fallback derives again from the client's request
// instead of decoding its body again.
func (r *ChatRequest) Derive() *ChatRequest {
	d := *r
	d.obj.members = append(make([]member, 0, len(r.obj.members)+4), r.obj.members...)
	return &d
}
