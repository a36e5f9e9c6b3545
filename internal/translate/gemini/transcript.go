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

// turns is the transcript as Gemini takes it.
type turns struct {
	system       *content
	contents     []content
	placeholders int // model turns whose first call got SkipSignature
	dropped      int // turns with nothing to send
}

// transcript turns the chat messages into Gemini's system instruction and
// contents: user and model turns, consecutive ones of one role merged,
// tool replies as functionResponse parts of a user turn.
func transcript(msgs []wire.Message, carriedMember string) (turns, error) {
	var t turns
	names := map[string]string{} // call id → function name, for the replies
	for i, m := range msgs {
		var role string
		var parts []part
		var err error
		switch m.Role {
		case "system", "developer":
			if parts, err = userParts(m.Content, i, false); err != nil {
				return t, err
			}
			if t.system == nil {
				t.system = &content{}
			}
			t.system.Parts = append(t.system.Parts, parts...)
			continue
		case "user":
			role = "user"
			parts, err = userParts(m.Content, i, true)
		case "assistant":
			role = "model"
			parts, err = modelParts(m, i, carriedMember, names, &t.placeholders)
		case "tool":
			role = "user"
			parts, err = responsePart(m, i, names)
		default:
			return t, &wire.ParamError{Param: fmt.Sprintf("messages[%d].role", i), Msg: fmt.Sprintf("%q has no counterpart in the Gemini API", wire.Clip(m.Role)), Unsupported: true}
		}
		if err != nil {
			return t, err
		}
		t.add(role, parts)
	}
	return t, nil
}

// add appends parts to the last turn when it has the same role, else as
// a new turn; a turn with nothing to send is left out.
func (t *turns) add(role string, parts []part) {
	if len(parts) == 0 {
		t.dropped++
		return
	}
	if n := len(t.contents); n > 0 && t.contents[n-1].Role == role {
		t.contents[n-1].Parts = append(t.contents[n-1].Parts, parts...)
		return
	}
	t.contents = append(t.contents, content{Role: role, Parts: parts})
}

// userParts turns a message's content (a string, or content parts) into
// text and inline image parts, each text as the client wrote it; empty
// text is left out. The parts are read in place.
func userParts(c json.RawMessage, i int, images bool) ([]part, error) {
	if len(c) == 0 || string(c) == "null" {
		return nil, nil
	}
	if c[0] == '"' {
		if len(c) <= 2 {
			return nil, nil
		}
		return []part{{text: c}}, nil
	}
	var out []part
	var err error
	if !wire.EachElement(c, func(k int, raw []byte) bool {
		typ, _ := wire.Member(raw, "type")
		switch {
		case wire.StringIs(typ, "text"):
			txt, _ := wire.Member(raw, "text")
			if len(txt) > 0 && txt[0] != '"' && string(txt) != "null" {
				err = translate.NotParts(fmt.Sprintf("messages[%d].content", i))
			} else if len(txt) > 2 {
				out = append(out, part{text: txt})
			}
		case wire.StringIs(typ, "image_url") && images:
			url, _ := wire.Member(raw, "image_url")
			var ip part
			if ip, err = imagePart(url, fmt.Sprintf("messages[%d].content[%d].image_url", i, k)); err == nil {
				out = append(out, ip)
			}
		default:
			t, _ := wire.String(typ)
			err = &wire.ParamError{Param: fmt.Sprintf("messages[%d].content[%d].type", i, k), Msg: fmt.Sprintf("a %q part cannot be sent to a gemini upstream here", wire.Clip(t)), Unsupported: true}
		}
		return err == nil
	}) && err == nil {
		err = translate.NotParts(fmt.Sprintf("messages[%d].content", i))
	}
	return out, err
}

// modelParts are an assistant turn's parts: its text, then one
// functionCall per call, each with its thought signature — the one the
// client kept (extra_content.google.thought_signature), else the one the
// gateway restored. A turn whose first call has none gets SkipSignature
// there (Gemini checks the first call of each step).
func modelParts(m wire.Message, i int, carriedMember string, names map[string]string, placeholders *int) ([]part, error) {
	sigs := restored(m, carriedMember)
	text, err := userParts(m.Content, i, false)
	if err != nil {
		return nil, err
	}
	if n := len(text); n > 0 && sigs.Text != "" {
		text[n-1].ThoughtSignature = sigs.Text
	}
	out := text
	for k, c := range m.ToolCalls {
		args, err := translate.ObjectArguments(c, i, k, "a gemini upstream (its functionCall args are one)")
		if err != nil {
			return nil, err
		}
		names[c.ID] = c.Function.Name
		p := part{FunctionCall: &call{ID: c.ID, Name: c.Function.Name, Args: json.RawMessage(args)}}
		p.ThoughtSignature = cmp.Or(wire.ThoughtSignature(c.Extra), sigs.Calls[c.ID])
		if k == 0 && p.ThoughtSignature == "" {
			p.ThoughtSignature = SkipSignature
			*placeholders++
		}
		out = append(out, p)
	}
	return out, nil
}

// restored reads the signatures the gateway restored into the turn.
func restored(m wire.Message, member string) Signatures {
	var sigs Signatures
	translate.Restored(m, member, &sigs)
	return sigs
}

// responsePart turns a tool reply into a functionResponse part, named as
// the call it answers (repair has paired them). Its content is the
// response when it is a JSON object, else {"result": …} with the JSON
// value or the text.
func responsePart(m wire.Message, i int, names map[string]string) ([]part, error) {
	name, ok := names[m.ToolCallID]
	if !ok {
		return nil, &wire.ParamError{Param: fmt.Sprintf("messages[%d].tool_call_id", i), Msg: "answers no call of an earlier assistant message"}
	}
	text := []byte(translate.ReplyText(m.Content))
	var resp json.RawMessage
	trimmed := bytes.TrimSpace(text)
	switch {
	case len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed):
		resp = trimmed
	case len(trimmed) > 0 && json.Valid(trimmed):
		resp = append(append([]byte(`{"result":`), trimmed...), '}')
	default:
		resp = append(wire.AppendString([]byte(`{"result":`), text), '}')
	}
	return []part{{FunctionResponse: &response{ID: m.ToolCallID, Name: name, Response: resp}}}, nil
}
