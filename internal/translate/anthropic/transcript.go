package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// systemBlocks are the blocks of the system messages that go to the
// request's system member: each system or developer message's, but a
// Messages API client's system message after the conversation has begun,
// which stays in its place (turns.message). A system message's error is
// kept with its index, for the transcript to return in its turn.
func systemBlocks(req *wire.ChatRequest, thinkingMember string) (system []json.RawMessage, errAt int, err error) {
	msgs := req.Messages
	var begun *turns // written up to the message being read, to learn whether a turn has begun
	for i, m := range msgs {
		if m.Role != "system" && m.Role != "developer" {
			continue
		}
		kept := translate.Kept(nil, req.Kept, m, translate.BlocksMember)
		if kept == nil {
			parts, err := contentBlocks(m.Content, i, false)
			if err != nil {
				return system, i, err
			}
			system = append(system, parts...)
			continue
		}
		if begun == nil {
			begun = &turns{req: req, msgs: msgs, thinkingMember: thinkingMember, errAt: -1}
		}
		for ; begun.read < i; begun.read++ {
			if begun.message(begun.read) != nil {
				return system, -1, nil // the transcript stops there first
			}
		}
		if begun.role == "" {
			system = append(system, kept...)
		}
	}
	return system, -1, nil
}

// turns writes the transcript's turns (Anthropic's alternating user and
// assistant turns: consecutive messages of one role are one turn) into
// the body as it reads the messages, each block where it is sent: a
// message costs its bytes once.
type turns struct {
	out            []byte
	req            *wire.ChatRequest // its Kept, what the messages keep
	msgs           []wire.Message
	thinkingMember string
	// errAt is the message at which the transcript fails with err (a
	// system message's, found by systemBlocks), -1 for none.
	errAt int
	err   error
	read  int // the messages read

	// kept is the list of the blocks a message keeps, reused.
	kept []json.RawMessage

	role string // the open turn's role, "" before the first
	// text, when the open turn's content is a string (a user's text, as
	// written): that string, which becomes its text block when another
	// message joins the turn; at is where it was written.
	text json.RawMessage
	at   int
	// calls and thought: the last assistant turn made a call; its first
	// block is thinking.
	calls, thought bool
	dropped        int
}

// transcript writes the turns of every message, as the value of the
// messages member.
func (t *turns) transcript() error {
	t.out = append(t.out, '[')
	for ; t.read < len(t.msgs); t.read++ {
		if t.read == t.errAt {
			return t.err
		}
		if err := t.message(t.read); err != nil {
			return err
		}
	}
	switch {
	case t.text != nil:
		t.out = append(t.out, '}')
	case t.role != "":
		t.out = append(t.out, "]}"...)
	}
	t.out = append(t.out, ']')
	return nil
}

// message writes messages[i]. A message that keeps the blocks a Messages
// API client sent for it (translate.BlocksMember) is sent as those
// blocks, block for block, while it still says what they say: a turn
// repair changed (a call renamed, a result sealed) is translated from the
// chat message instead.
func (t *turns) message(i int) error {
	m := t.msgs[i]
	kept := translate.Kept(t.kept, t.req.Kept, m, translate.BlocksMember) // the blocks a Messages API client sent for it
	if kept != nil {
		t.kept = kept // the list, for the next message's
	}
	before := len(t.out)
	switch m.Role {
	case "system", "developer":
		if kept != nil && t.role != "" {
			// A Messages client's system message in the conversation
			// stays in its place.
			t.each("system", kept)
		}
		return nil // the others are in the request's system member (systemBlocks)
	case "user":
		if tok, ok := textOnly(m.Content); ok && kept == nil {
			// A string: sent as the content, as it was written (a
			// block of its own only when joined with the turn before).
			t.string(tok)
			return nil
		}
		if kept != nil {
			t.each("user", kept)
		} else if err := t.content("user", m.Content, i, true); err != nil {
			return err
		}
	case "assistant":
		if err := t.assistant(i, m, kept); err != nil {
			return err
		}
	case "tool":
		if kept != nil && resultFor(kept, m.ToolCallID) {
			t.each("user", kept)
		} else if err := t.toolResult(i, m); err != nil {
			return err
		}
	default:
		return &wire.ParamError{Param: fmt.Sprintf("messages[%d].role", i), Msg: fmt.Sprintf("%q has no counterpart in Anthropic's Messages API", wire.Clip(m.Role)), Unsupported: true}
	}
	if len(t.out) == before {
		t.dropped++ // Anthropic refuses empty turns (C12)
	}
	return nil
}

// assistant writes an assistant message: the blocks its client kept when
// they still say what it says (the gateway's restored thinking first when
// the client dropped it), else its restored thinking, its text, then one
// tool_use per call.
func (t *turns) assistant(i int, m wire.Message, kept []json.RawMessage) error {
	if kept != nil && assistantSays(kept, m) {
		if !thinks(kept) {
			t.each("assistant", restoredThinking(m, t.thinkingMember)) // the client dropped them: the gateway's go first
		}
		t.each("assistant", kept)
		return nil
	}
	t.each("assistant", restoredThinking(m, t.thinkingMember))
	if err := t.content("assistant", m.Content, i, false); err != nil {
		return err
	}
	var err error
	for k, c := range m.ToolCalls {
		t.open("assistant", "tool_use")
		t.out = wire.AppendString(append(t.out, `{"type":"tool_use","id":`...), c.ID)
		t.out = wire.AppendString(append(t.out, `,"name":`...), c.Function.Name)
		if t.out, err = translate.AppendArguments(append(t.out, `,"input":`...), c, i, k, "an anthropic upstream (its tool_use input is one)"); err != nil {
			return err
		}
		t.out = append(t.out, '}')
	}
	return nil
}

// toolResult writes a tool reply as a tool_result block; a seal (a call
// nothing answered, docs/spec.md §1.4) is a failed result: its sentence,
// with is_error, as Anthropic marks a result that failed or was
// interrupted.
func (t *turns) toolResult(i int, m wire.Message) error {
	var blocks []json.RawMessage
	seal := m.Seal()
	if seal == "" && len(m.Content) > 0 && m.Content[0] != '"' && string(m.Content) != "null" {
		var err error
		if blocks, err = contentBlocks(m.Content, i, true); err != nil {
			return err
		}
	}
	t.open("user", "tool_result")
	t.out = wire.AppendString(append(t.out, `{"type":"tool_result","tool_use_id":`...), m.ToolCallID)
	t.out = append(t.out, `,"content":`...)
	switch {
	case seal != "":
		t.out = append(wire.AppendString(t.out, seal), `,"is_error":true`...)
	case len(m.Content) > 0 && m.Content[0] == '"':
		t.out = append(t.out, m.Content...) // a string (checked JSON), as the client wrote it
	case blocks != nil:
		t.out = appendArray(t.out, blocks)
	case len(m.Content) > 0 && string(m.Content) != "null":
		t.out = append(t.out, "null"...) // parts that make no block: null, as the body has always said
	default:
		t.out = append(t.out, `""`...)
	}
	t.out = append(t.out, '}')
	return nil
}

// content writes the blocks of a message's content into a turn of role,
// each where it is sent.
func (t *turns) content(role string, content json.RawMessage, i int, images bool) error {
	return eachContentBlock(content, i, images, func(b contentBlock) {
		switch {
		case b.bare != nil:
			t.block(role, b.bare)
		case b.whole != nil:
			t.block(role, b.whole)
		default:
			t.open(role, "text")
			t.out = appendTextBlock(t.out, b.text, b.cache)
		}
	})
}

// each writes blocks into a turn of role.
func (t *turns) each(role string, blocks []json.RawMessage) {
	for _, b := range blocks {
		t.block(role, b)
	}
}

// block writes a block into a turn of role: a JSON string is the text
// block of it (appendArray).
func (t *turns) block(role string, b json.RawMessage) {
	typ := ""
	if role == "assistant" {
		typ = blockType(b)
	}
	t.open(role, typ)
	if len(b) > 0 && b[0] == '"' {
		t.out = append(append(append(t.out, `{"type":"text","text":`...), b...), '}')
		return
	}
	t.out = append(t.out, b...)
}

// open readies the body for a block of type typ in a turn of role: after
// the blocks of the open turn when it has that role (its string, if it is
// one, made its text block first), else in a turn of its own.
func (t *turns) open(role, typ string) {
	switch {
	case role == t.role && t.text != nil:
		t.out = append(append(append(t.out[:t.at], `[{"type":"text","text":`...), t.text...), '}')
		t.text = nil
		fallthrough
	case role == t.role:
		t.out = append(t.out, ',')
	default:
		t.close()
		t.out = append(wire.AppendString(append(t.out, `{"role":`...), role), `,"content":[`...)
		t.role = role
		if role == "assistant" {
			t.calls, t.thought = false, typ == "thinking" || typ == "redacted_thinking"
		}
	}
	t.calls = t.calls || role == "assistant" && typ == "tool_use"
}

// string writes a user's text that is a string: the content of a turn of
// its own, as written, or the text block of it in the open user turn.
func (t *turns) string(tok json.RawMessage) {
	if t.role == "user" {
		t.block("user", tok)
		return
	}
	t.close()
	t.out = append(t.out, `{"role":"user","content":`...)
	t.role, t.text, t.at = "user", tok, len(t.out)
	t.out = append(t.out, tok...)
}

// close ends the open turn, before the next.
func (t *turns) close() {
	switch {
	case t.role == "":
	case t.text != nil:
		t.out = append(t.out, "},"...)
	default:
		t.out = append(t.out, "]},"...)
	}
	t.text = nil
}

// textOnly is a content that is a non-empty string, as it was written.
func textOnly(c json.RawMessage) (json.RawMessage, bool) {
	return c, len(c) > 2 && c[0] == '"'
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
	var out []json.RawMessage
	err := eachContentBlock(content, i, images, func(b contentBlock) {
		switch {
		case b.bare != nil:
			out = append(out, b.bare) // its text block (appendArray)
		case b.whole != nil:
			out = append(out, b.whole)
		default:
			out = append(out, appendTextBlock(make([]byte, 0, len(b.text)+len(b.cache)+48), b.text, b.cache))
		}
	})
	return out, err
}

// contentBlock is one block of a message's content: a string's text
// (bare), a text part's text and cache_control, or a block built whole.
type contentBlock struct {
	bare, text, cache, whole json.RawMessage
}

// eachContentBlock calls fn with each block contentBlocks turns content
// into.
func eachContentBlock(content json.RawMessage, i int, images bool, fn func(contentBlock)) error {
	if len(content) == 0 || string(content) == "null" || string(content) == `""` {
		return nil
	}
	if content[0] == '"' { // a string (checked JSON): its text goes as it was written
		fn(contentBlock{bare: content})
		return nil
	}
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
				fn(contentBlock{text: text, cache: cacheControl})
			}
		case wire.StringIs(typ, "image_url") && images:
			var b json.RawMessage
			if b, err = imageBlock(imageURL, cacheControl, i, k); err != nil {
				return false
			}
			fn(contentBlock{whole: b})
		default:
			t, _ := wire.String(typ)
			err = &wire.ParamError{Param: fmt.Sprintf("messages[%d].content[%d].type", i, k), Msg: fmt.Sprintf("a %q part cannot be sent to an anthropic upstream here", wire.Clip(t)), Unsupported: true}
			return false
		}
		return true
	}) && err == nil {
		err = translate.NotParts(fmt.Sprintf("messages[%d].content", i))
	}
	return err
}

// appendTextBlock writes a text block of text (a JSON string token), with
// its cache_control when it has one.
func appendTextBlock(b []byte, text, cacheControl json.RawMessage) []byte {
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
	blocks, _ := translate.Restored[[]json.RawMessage](m, thinkingMember)
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
