package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// transcript turns the chat messages into Anthropic's system blocks and
// alternating turns. A message that keeps the blocks a Messages API
// client sent for it (translate.BlocksMember) is sent as those blocks,
// block for block, while it still says what they say: a turn repair
// changed (a call renamed, a result sealed) is translated from the chat
// message instead.
func transcript(msgs []wire.Message, thinkingMember string) (system []json.RawMessage, out []Message, dropped int, err error) {
	for i, m := range msgs {
		var role string
		var blocks []json.RawMessage
		kept := translate.Kept(m, translate.BlocksMember) // the blocks a Messages API client sent for it
		switch m.Role {
		case "system", "developer":
			parts := kept
			if kept == nil {
				if parts, err = contentBlocks(m.Content, i, false); err != nil {
					return nil, nil, 0, err
				}
			}
			if kept != nil && len(out) > 0 {
				// A Messages client's system message in the conversation
				// stays in its place.
				out = append(out, Message{Role: "system", blocks: kept})
				continue
			}
			system = append(system, parts...)
			continue
		case "user":
			role = "user"
			if tok, ok := textOnly(m.Content); ok && kept == nil {
				// A string: sent as the content, as it was written (a
				// block of its own only when merged with the turn before).
				out = appendTurn(out, Message{Role: role, Content: tok})
				continue
			}
			if blocks = kept; kept == nil {
				blocks, err = contentBlocks(m.Content, i, true)
			}
		case "assistant":
			role = "assistant"
			if blocks = kept; kept == nil || !assistantSays(kept, m) {
				blocks, err = assistantBlocks(m, i, thinkingMember)
			} else if !thinks(kept) {
				blocks = append(restoredThinking(m, thinkingMember), kept...) // the client dropped them: the gateway's go first
			}
		case "tool":
			role = "user"
			if blocks = kept; kept == nil || !resultFor(kept, m.ToolCallID) {
				blocks, err = toolResult(m, i)
			}
		default:
			return nil, nil, 0, &wire.ParamError{Param: fmt.Sprintf("messages[%d].role", i), Msg: fmt.Sprintf("%q has no counterpart in Anthropic's Messages API", wire.Clip(m.Role)), Unsupported: true}
		}
		if err != nil {
			return nil, nil, 0, err
		}
		if len(blocks) == 0 {
			dropped++ // Anthropic refuses empty turns (C12)
			continue
		}
		out = appendTurn(out, Message{Role: role, blocks: blocks})
	}
	return system, out, dropped, nil
}

// textOnly is a content that is a non-empty string, as it was written.
func textOnly(c json.RawMessage) (json.RawMessage, bool) {
	return c, len(c) > 2 && c[0] == '"'
}

// appendTurn appends m (its blocks, or its text in Content) to the last
// turn when it has the same role, as a turn of its own otherwise: a turn
// of a string that is merged becomes its text block.
func appendTurn(out []Message, m Message) []Message {
	n := len(out)
	if n == 0 || out[n-1].Role != m.Role {
		return append(out, m)
	}
	last := &out[n-1]
	if last.Content != nil {
		last.blocks, last.Content = []json.RawMessage{last.Content}, nil
	}
	if m.Content != nil {
		m.blocks = []json.RawMessage{m.Content}
	}
	last.blocks = append(last.blocks, m.blocks...)
	return out
}

// assistantSays reports whether kept blocks still say what the assistant
// message says (its text, its calls).
func assistantSays(blocks []json.RawMessage, m wire.Message) bool {
	ids, names := make([]string, len(m.ToolCalls)), make([]string, len(m.ToolCalls))
	for k, c := range m.ToolCalls {
		ids[k], names[k] = c.ID, c.Function.Name
	}
	return translate.BlocksSay(blocks, translate.ReplyText(m.Content), ids, names)
}

// resultFor reports whether kept blocks are one tool_result for the call.
func resultFor(blocks []json.RawMessage, callID string) bool {
	if len(blocks) != 1 {
		return false
	}
	typ, _ := wire.Member(blocks[0], "type")
	id, _ := wire.Member(blocks[0], "tool_use_id")
	return wire.StringIs(typ, "tool_result") && wire.StringIs(id, callID)
}

// contentBlocks turns a message's content (a string, or content parts)
// into text and image blocks; empty text is left out. The parts are read
// in place and each text goes as it was written.
func contentBlocks(content json.RawMessage, i int, images bool) ([]json.RawMessage, error) {
	if len(content) == 0 || string(content) == "null" || string(content) == `""` {
		return nil, nil
	}
	if content[0] == '"' { // a string (checked JSON): its text goes as it was written
		return []json.RawMessage{content}, nil // its text block (appendArray)
	}
	var out []json.RawMessage
	var err error
	if !wire.EachElement(content, func(k int, raw []byte) bool {
		var typ, text, imageURL, cacheControl []byte
		if !wire.EachMember(raw, func(key string, v []byte) bool {
			switch key {
			case "type":
				typ = v
			case "text":
				text = v
			case "image_url":
				imageURL = v
			case "cache_control":
				if string(v) != "null" {
					cacheControl = v
				}
			}
			return true
		}) || text != nil && text[0] != '"' && string(text) != "null" {
			err = translate.NotParts(fmt.Sprintf("messages[%d].content", i))
			return false
		}
		switch {
		case wire.StringIs(typ, "text"):
			if len(text) > 2 {
				out = append(out, textBlock(text, cacheControl))
			}
		case wire.StringIs(typ, "image_url") && images:
			var b json.RawMessage
			if b, err = imageBlock(imageURL, cacheControl, i, k); err != nil {
				return false
			}
			out = append(out, b)
		default:
			t, _ := wire.String(typ)
			err = &wire.ParamError{Param: fmt.Sprintf("messages[%d].content[%d].type", i, k), Msg: fmt.Sprintf("a %q part cannot be sent to an anthropic upstream here", wire.Clip(t)), Unsupported: true}
			return false
		}
		return true
	}) && err == nil {
		err = translate.NotParts(fmt.Sprintf("messages[%d].content", i))
	}
	return out, err
}

// textBlock is a text block of text (a JSON string token), with its
// cache_control when it has one.
func textBlock(text, cacheControl json.RawMessage) json.RawMessage {
	b := make([]byte, 0, len(text)+len(cacheControl)+48)
	b = wire.AppendToken(append(b, `{"type":"text","text":`...), text)
	if len(cacheControl) > 0 {
		b = append(append(b, `,"cache_control":`...), cacheControl...)
	}
	return append(b, '}')
}

// imageBlock turns an image_url part into an image block: a data: URL
// becomes a base64 source, any other URL a url source.
func imageBlock(imageURL, cacheControl json.RawMessage, i, k int) (json.RawMessage, error) {
	var u struct {
		URL string `json:"url"`
	}
	if json.Unmarshal(imageURL, &u) != nil {
		_ = json.Unmarshal(imageURL, &u.URL) // image_url as a bare string
	}
	var source any
	if rest, ok := strings.CutPrefix(u.URL, "data:"); ok {
		mediaType, data, ok := strings.Cut(rest, ";base64,")
		if !ok {
			return nil, &wire.ParamError{Param: fmt.Sprintf("messages[%d].content[%d].image_url.url", i, k), Msg: "a data: URL must be base64 (data:<media type>;base64,<data>)"}
		}
		source = map[string]string{"type": "base64", "media_type": mediaType, "data": data}
	} else if u.URL != "" {
		source = map[string]string{"type": "url", "url": u.URL}
	} else {
		return nil, &wire.ParamError{Param: fmt.Sprintf("messages[%d].content[%d].image_url", i, k), Msg: "must have a url"}
	}
	b, _ := json.Marshal(struct {
		Type         string          `json:"type"`
		Source       any             `json:"source"`
		CacheControl json.RawMessage `json:"cache_control,omitempty"`
	}{"image", source, cacheControl})
	return b, nil
}

// restoredThinking are the thinking blocks restored for a turn (in
// thinkingMember), or nil.
func restoredThinking(m wire.Message, thinkingMember string) []json.RawMessage {
	var blocks []json.RawMessage
	translate.Restored(m, thinkingMember, &blocks)
	return blocks
}

// thinks reports blocks with a thinking or redacted_thinking block.
func thinks(blocks []json.RawMessage) bool {
	for _, raw := range blocks {
		typ, _ := wire.Member(raw, "type")
		if wire.StringIs(typ, "thinking") || wire.StringIs(typ, "redacted_thinking") {
			return true
		}
	}
	return false
}

// assistantBlocks are an assistant turn's blocks: its restored thinking
// first, then its text, then one tool_use per call.
func assistantBlocks(m wire.Message, i int, thinkingMember string) ([]json.RawMessage, error) {
	out := restoredThinking(m, thinkingMember)
	text, err := contentBlocks(m.Content, i, false)
	if err != nil {
		return nil, err
	}
	out = append(out, text...)
	for k, c := range m.ToolCalls {
		args, err := translate.ObjectArguments(c, i, k, "an anthropic upstream (its tool_use input is one)")
		if err != nil {
			return nil, err
		}
		b := make([]byte, 0, len(c.ID)+len(c.Function.Name)+len(args)+48)
		b = wire.AppendString(append(b, `{"type":"tool_use","id":`...), c.ID)
		b = wire.AppendString(append(b, `,"name":`...), c.Function.Name)
		b = append(append(append(b, `,"input":`...), args...), '}')
		out = append(out, b)
	}
	return out, nil
}

// toolResult turns a tool reply into a tool_result block; a seal (a
// call nothing answered, docs/spec.md §1.4) is a failed result: its
// sentence, with is_error, as Anthropic marks a result that failed or was
// interrupted.
func toolResult(m wire.Message, i int) ([]json.RawMessage, error) {
	if m.Seal != "" {
		b, _ := json.Marshal(struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
			Content   string `json:"content"`
			IsError   bool   `json:"is_error"`
		}{"tool_result", m.ToolCallID, m.Seal, true})
		return []json.RawMessage{b}, nil
	}
	content := json.RawMessage(`""`)
	switch {
	case len(m.Content) > 0 && m.Content[0] == '"':
		content = m.Content // a string (checked JSON), as the client wrote it
	case len(m.Content) > 0 && string(m.Content) != "null":
		blocks, err := contentBlocks(m.Content, i, true)
		if err != nil {
			return nil, err
		}
		content = json.RawMessage("null") // parts that make no block: null, as the body has always said
		if blocks != nil {
			content = appendArray(nil, blocks)
		}
	}
	b := make([]byte, 0, len(m.ToolCallID)+len(content)+56)
	b = wire.AppendString(append(b, `{"type":"tool_result","tool_use_id":`...), m.ToolCallID)
	b = append(append(append(b, `,"content":`...), content...), '}')
	return []json.RawMessage{b}, nil
}
