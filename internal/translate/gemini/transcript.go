package gemini

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Signatures are the thought signatures of one answer, as the gateway
// remembers them and puts them back: the one on its text, and each
// function call's by call id.
type Signatures struct {
	Text  string            `json:"text,omitempty"`
	Calls map[string]string `json:"calls,omitempty"`
}

// contents writes the transcript as Gemini takes it, message by message,
// into the body: nothing is held between a message and its bytes but
// the turn being written.
type contents struct {
	translate.Turns
	system       *content
	calls        callNames
	placeholders int // model turns whose first call got SkipSignature
	dropped      int // turns with nothing to send
}

// transcript writes the chat messages as Gemini's contents (user and
// model turns, consecutive ones of one role merged, tool replies as
// functionResponse parts of a user turn) and keeps its system
// instruction.
func (t *contents) transcript(msgs []wire.Message, carriedMember string) error {
	t.calls.msgs = msgs
	t.Buf = append(t.Buf, `{"contents":[`...)
	for i, m := range msgs {
		before := len(t.Buf)
		var err error
		switch m.Role {
		case "system", "developer":
			parts, err := userParts(m.Content, i, false)
			if err != nil {
				return err
			}
			if t.system == nil {
				t.system = &content{}
			}
			t.system.Parts = append(t.system.Parts, parts...)
			continue
		case "user":
			err = t.texts("user", m.Content, i, "")
		case "assistant":
			err = t.modelParts(m, i, carriedMember)
		case "tool":
			err = t.responsePart(m, i)
		default:
			return &wire.ParamError{Param: fmt.Sprintf("messages[%d].role", i), Msg: fmt.Sprintf("%q has no counterpart in the Gemini API", wire.Clip(m.Role)), Unsupported: true}
		}
		if err != nil {
			return err
		}
		if len(t.Buf) == before {
			t.dropped++ // a turn with nothing to send is left out
		}
	}
	t.End()
	return nil
}

// texts writes the text parts of a message of role (and a user's
// images), each where it is sent, the last with the thought signature
// sig when it has one.
func (t *contents) texts(role string, c json.RawMessage, i int, sig string) error {
	start := len(t.Buf)
	if err := eachPart(c, i, role == "user", func(p part) {
		t.Open(role)
		t.Buf = appendPart(t.Buf, p)
	}); err != nil {
		return err
	}
	if len(t.Buf) > start && sig != "" {
		// The last part's signature, its last member as appendPart writes it.
		t.Buf = append(wire.AppendString(append(t.Buf[:len(t.Buf)-1], `,"thoughtSignature":`...), sig), '}')
	}
	return nil
}

// modelParts writes an assistant turn's parts: its text, then one
// functionCall per call, each with its thought signature — the one the
// client kept (extra_content.google.thought_signature), else the one the
// gateway restored. A turn whose first call has none gets SkipSignature
// there (Gemini checks the first call of each step).
func (t *contents) modelParts(m wire.Message, i int, carriedMember string) error {
	sigs := restored(m, carriedMember)
	err := t.texts("model", m.Content, i, sigs.Text)
	if err != nil {
		return err
	}
	t.calls.assistant(i)
	for k, c := range m.ToolCalls {
		t.Open("model")
		t.Buf = append(t.Buf, `{"functionCall":{`...)
		if c.ID != "" {
			t.Buf = append(wire.AppendString(append(t.Buf, `"id":`...), c.ID), ',')
		}
		t.Buf = append(wire.AppendString(append(t.Buf, `"name":`...), c.Function.Name), `,"args":`...)
		if t.Buf, err = translate.AppendArguments(t.Buf, c, i, k, "a gemini upstream (its functionCall args are one)"); err != nil {
			return err
		}
		sig := cmp.Or(wire.ThoughtSignature(c.Extra), sigs.Calls[c.ID])
		if k == 0 && sig == "" {
			sig = SkipSignature
			t.placeholders++
		}
		t.Buf = append(t.Buf, '}')
		if sig != "" {
			t.Buf = wire.AppendString(append(t.Buf, `,"thoughtSignature":`...), sig)
		}
		t.Buf = append(t.Buf, '}')
	}
	return nil
}

// userParts turns a message's content (a string, or content parts) into
// text and inline image parts, each text as the client wrote it; empty
// text is left out. The parts are read in place.
func userParts(c json.RawMessage, i int, images bool) ([]part, error) {
	var out []part
	err := eachPart(c, i, images, func(p part) { out = append(out, p) })
	return out, err
}

// eachPart calls fn with each part userParts turns c into.
func eachPart(c json.RawMessage, i int, images bool, fn func(part)) error {
	if len(c) == 0 || string(c) == "null" {
		return nil
	}
	if c[0] == '"' {
		if len(c) > 2 {
			fn(part{text: c})
		}
		return nil
	}
	var err error
	if !wire.EachElement(c, func(k int, raw []byte) bool {
		typ, _ := wire.Member(raw, "type")
		switch {
		case wire.StringIs(typ, "text"):
			txt, _ := wire.Member(raw, "text")
			if len(txt) > 0 && txt[0] != '"' && string(txt) != "null" {
				err = translate.NotParts(fmt.Sprintf("messages[%d].content", i))
			} else if len(txt) > 2 {
				fn(part{text: txt})
			}
		case wire.StringIs(typ, "image_url") && images:
			url, _ := wire.Member(raw, "image_url")
			var ip part
			if ip, err = imagePart(url, fmt.Sprintf("messages[%d].content[%d].image_url", i, k)); err == nil {
				fn(ip)
			}
		default:
			t, _ := wire.String(typ)
			err = &wire.ParamError{Param: fmt.Sprintf("messages[%d].content[%d].type", i, k), Msg: fmt.Sprintf("a %q part cannot be sent to a gemini upstream here", wire.Clip(t)), Unsupported: true}
		}
		return err == nil
	}) && err == nil {
		err = translate.NotParts(fmt.Sprintf("messages[%d].content", i))
	}
	return err
}

// restored reads the signatures the gateway restored into the turn.
func restored(m wire.Message, member string) Signatures {
	sigs, _ := translate.Restored[Signatures](m, member)
	return sigs
}

// responsePart writes a tool reply as a functionResponse part, named as
// the call it answers (repair has paired them). Its content is the
// response when it is a JSON object, else {"result": …} with the JSON
// value or the text.
func (t *contents) responsePart(m wire.Message, i int) error {
	name, ok := t.calls.name(i, m.ToolCallID)
	if !ok {
		return &wire.ParamError{Param: fmt.Sprintf("messages[%d].tool_call_id", i), Msg: "answers no call of an earlier assistant message"}
	}
	t.Open("user")
	t.Buf = append(t.Buf, `{"functionResponse":{`...)
	if m.ToolCallID != "" {
		t.Buf = append(wire.AppendString(append(t.Buf, `"id":`...), m.ToolCallID), ',')
	}
	t.Buf = wire.AppendString(append(t.Buf, `"name":`...), name)
	t.Buf = append(t.Buf, `,"response":`...)
	mark := len(t.Buf)
	t.Buf = append(t.Buf, `{"result":`...)
	at := len(t.Buf)
	if t.Buf, ok = wire.AppendText(t.Buf, m.Content); !ok {
		t.Buf = append(t.Buf, translate.ReplyText(m.Content)...) // content parts: their texts
	}
	trimmed := bytes.TrimSpace(t.Buf[at:])
	tok, _ := wire.StringToken(m.Content)
	switch {
	case len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed):
		t.Buf = t.Buf[:mark+copy(t.Buf[mark:], trimmed)]
	case len(trimmed) > 0 && json.Valid(trimmed):
		t.Buf = append(t.Buf[:at+copy(t.Buf[at:], trimmed)], '}')
	case tok != nil:
		// The text as the JSON string the client wrote, over its decoded
		// text: nothing written past what the body keeps.
		t.Buf = append(wire.AppendToken(t.Buf[:at], tok), '}')
	default: // the parts' text as a JSON string, written after it and moved into its place
		end := len(t.Buf)
		t.Buf = wire.AppendString(t.Buf, t.Buf[at:end])
		t.Buf = append(t.Buf[:at+copy(t.Buf[at:], t.Buf[end:])], '}')
	}
	t.Buf = append(t.Buf, "}}"...)
	return nil
}

// callNames finds the function a tool reply answers by its call id: the
// calls of the assistant message before it, in order, as repair leaves
// them; else, for a reply out of that order, the latest call of that id
// in any earlier message, from a map built then and kept up to date.
type callNames struct {
	msgs []wire.Message
	last int // the latest assistant message read, +1 (0: none)
	next int // its call the next reply answers, in order
	ids  map[string]string
	upTo int // the messages whose calls ids holds
}

// assistant notes that messages[i] is an assistant message.
func (c *callNames) assistant(i int) { c.last, c.next = i+1, 0 }

// name is the function of the latest call of id before messages[i].
func (c *callNames) name(i int, id string) (string, bool) {
	if c.last > 0 {
		calls := c.msgs[c.last-1].ToolCalls
		if c.next < len(calls) && calls[c.next].ID == id && !repeated(calls, c.next) {
			c.next++
			return calls[c.next-1].Function.Name, true
		}
	}
	if c.ids == nil {
		c.ids = map[string]string{}
	}
	for ; c.upTo < i; c.upTo++ {
		if m := c.msgs[c.upTo]; m.Role == "assistant" {
			for _, call := range m.ToolCalls {
				c.ids[call.ID] = call.Function.Name
			}
		}
	}
	name, ok := c.ids[id]
	return name, ok
}

// repeated reports whether a call after calls[k] has its id (checked up
// to a few calls on: a longer list is taken as possibly repeated, and
// found by the map).
func repeated(calls []wire.ToolCall, k int) bool {
	if len(calls)-k > 16 {
		return true
	}
	for _, c := range calls[k+1:] {
		if c.ID == calls[k].ID {
			return true
		}
	}
	return false
}
