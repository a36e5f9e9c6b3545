package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// translator writes the transcript as chat messages, appended into one
// buffer: each block is read in place (views of the body) and each
// string a client wrote is copied as it was written, so a request costs
// its translation about its own size once more, whatever its shape.
type translator struct {
	translate.ChatWriter
	o            ChatOptions
	droppedCache int
	// kept are the blocks the messages keep, for an Anthropic upstream:
	// each message's member names its blocks by their index here.
	kept []json.RawMessage
}

// keep: the upstream is Anthropic's, and each chat message keeps the
// blocks the client sent for it (translate.BlocksMember), which that
// upstream gets as they are; blocks the chat model has no slot for are
// then carried, not refused.
func (t *translator) keep() bool { return t.o.Protocol == translate.Anthropic }

// block is one content block, read in place: its string members are the
// JSON tokens as sent (nil when absent or null), the others raw values.
type block struct {
	Type                                                       string
	raw                                                        []byte // the block as sent; nil for a string content
	text, thinking, signature, data, id, name, useID, toolName []byte
	source, input, content, cacheControl                       []byte
	isError                                                    bool
}

// blockTypes are the block types the translator reads, decoded as
// constants (nothing allocated for them).
var blockTypes = []string{"text", "image", "tool_use", "tool_result", "thinking", "redacted_thinking"}

// readBlock reads one block in place; false when it is no object or a
// member has the wrong type.
func readBlock(raw []byte) (block, bool) {
	b := block{raw: raw}
	ok := true
	valid := wire.EachMember(raw, func(k string, v []byte) bool {
		var tok *[]byte
		switch k {
		case "type":
			b.Type, ok = wire.KnownString(v, blockTypes)
			return ok
		case "is_error":
			b.isError, ok = string(v) == "true", string(v) == "true" || string(v) == "false" || string(v) == "null"
			return ok
		case "source":
			b.source = v
		case "input":
			b.input = v
		case "content":
			b.content = v
		case "cache_control":
			if string(v) != "null" {
				b.cacheControl = v
			}
		case "text":
			tok = &b.text
		case "thinking":
			tok = &b.thinking
		case "signature":
			tok = &b.signature
		case "data":
			tok = &b.data
		case "id":
			tok = &b.id
		case "name":
			tok = &b.name
		case "tool_use_id":
			tok = &b.useID
		case "tool_name":
			tok = &b.toolName
		}
		if tok != nil {
			*tok, ok = wire.StringToken(v)
		}
		return ok
	})
	return b, valid && ok
}

// str is a string token's value ("" for nil).
func str(tok []byte) string {
	s, _ := wire.String(tok)
	return s
}

// eachBlock calls fn with each block of a content: a string (or null) is
// one text block, an array its blocks, read in place.
func eachBlock(c []byte, param place, fn func(k int, b block) error) error {
	if s, ok := wire.StringToken(c); ok {
		b := block{Type: "text", text: s}
		return fn(0, b)
	}
	var err error
	if !wire.EachElement(c, func(k int, elem []byte) bool {
		b, ok := readBlock(elem)
		if !ok {
			err = &wire.ParamError{Param: param.String(), Msg: "must be a string or a list of content blocks"}
			return false
		}
		err = fn(k, b)
		return err == nil
	}) && err == nil {
		err = &wire.ParamError{Param: param.String(), Msg: "must be a string or a list of content blocks"}
	}
	return err
}

// place is where a content is, named only when an error says so:
// messages.MSG.content, or the system prompt (msg < 0); within it, when
// block >= 0, that block's content (a tool result's).
type place struct{ msg, block int }

// systemPlace is the system prompt's place.
var systemPlace = place{msg: -1, block: -1}

func (p place) String() string {
	s := "system"
	if p.msg >= 0 {
		s = fmt.Sprintf("messages.%d.content", p.msg)
	}
	if p.block >= 0 {
		s += fmt.Sprintf(".%d.content", p.block)
	}
	return s
}

// at names the member field of block k of the content at p.
func (p place) at(k int, field string) string { return fmt.Sprintf("%s.%d.%s", p, k, field) }

// isArray: a content sent as blocks, not a string.
func isArray(c []byte) bool { return len(c) > 0 && c[0] == '[' }

// blocksMember writes the blocks a message keeps, as sent: those of
// content that pick says, each by its index in t.kept.
func (t *translator) blocksMember(content []byte, pick func(b block) bool) {
	t.Member(translate.BlocksMember)
	t.Buf = append(t.Buf, '[')
	n := 0
	_ = eachBlock(content, place{}, func(_ int, b block) error {
		if pick(b) {
			t.keepBlock(n, b.raw)
			n++
		}
		return nil
	})
	t.Buf = append(t.Buf, ']')
}

// keepBlock keeps a block as sent, writing its index in t.kept as
// element k of a message's kept member.
func (t *translator) keepBlock(k int, raw []byte) {
	t.Buf = translate.AppendIndex(t.Buf, k, len(t.kept))
	t.kept = append(t.kept, raw)
}

// system turns the system prompt (or a system message) into a system
// message.
func (t *translator) system(raw []byte, param place) error {
	mark := len(t.Buf)
	n := t.N
	t.Next("system")
	t.Member("content")
	parts, err := t.parts(raw, param, false)
	if err != nil || parts == 0 {
		t.Buf, t.N = t.Buf[:mark], n
		return err
	}
	if t.keep() && isArray(raw) {
		t.blocksMember(raw, func(block) bool { return true })
	}
	t.Buf = append(t.Buf, '}')
	return nil
}

// message translates message i: a user message's tool_result blocks
// become tool messages, first, then its other blocks one user message;
// an assistant message's text, thinking and tool_use blocks one
// assistant message.
func (t *translator) message(i int, role string, content []byte) error {
	param := place{msg: i, block: -1}
	switch role {
	case "user":
		return t.user(content, param)
	case "assistant":
		return t.assistant(content, param)
	case "system":
		// A system message in the conversation (Claude Code sends its
		// environment so to the newest models): a system message in
		// its place.
		return t.system(content, param)
	}
	if err := eachBlock(content, param, func(int, block) error { return nil }); err != nil {
		return err
	}
	return &wire.ParamError{Param: fmt.Sprintf("messages.%d.role", i), Msg: "must be user, assistant or system"}
}

// user translates a user message: a tool message for each tool_result
// block (keeping it, for an Anthropic upstream), then one user message
// of the others (keeping those).
func (t *translator) user(content []byte, param place) error {
	keep := t.keep() && isArray(content)
	rest := 0 // the other blocks
	err := eachBlock(content, param, func(k int, b block) error {
		if b.Type != "tool_result" {
			rest++
			return nil
		}
		t.Next("tool")
		if err := t.resultText(b, place{msg: param.msg, block: k}); err != nil {
			return err
		}
		t.Member("tool_call_id")
		t.Buf = wire.AppendToken(t.Buf, b.useID)
		if keep {
			t.Member(translate.BlocksMember)
			t.Buf = append(t.Buf, '[')
			t.keepBlock(0, b.raw)
			t.Buf = append(t.Buf, ']')
		}
		t.Buf = append(t.Buf, '}')
		return nil
	})
	if err != nil {
		return err
	}
	if tok, ok := wire.StringToken(content); ok {
		// A string: the chat message's content, as it was written.
		if len(tok) > 2 {
			t.Next("user")
			t.Content(tok)
			t.Buf = append(t.Buf, '}')
		}
		return nil
	}
	mark, n := len(t.Buf), t.N
	t.Next("user")
	t.Member("content")
	parts, err := t.parts(content, param, true)
	if err != nil {
		return err
	}
	if !keep {
		rest = 0 // no blocks kept
	}
	switch {
	case parts == 0 && rest == 0:
		t.Buf, t.N = t.Buf[:mark], n // nothing but tool results
		return nil
	case parts == 0:
		// Blocks the chat model has no slot for (a document, …),
		// which the kept blocks carry.
		t.Buf = append(t.Buf[:len(t.Buf)-2], `""`...)
	}
	if rest > 0 {
		t.blocksMember(content, func(b block) bool { return b.Type != "tool_result" })
	}
	t.Buf = append(t.Buf, '}')
	return nil
}

// resultText writes a tool_result's content member as text (an error
// marked so): a string as it was sent.
func (t *translator) resultText(b block, param place) error {
	if tok, ok := wire.StringToken(b.content); ok && !b.isError {
		t.Content(tok)
		return nil
	}
	t.Member("content")
	var sb strings.Builder
	if len(b.content) > 0 && string(b.content) != "null" {
		err := eachBlock(b.content, param, func(_ int, c block) error {
			switch c.Type {
			case "text":
				sb.WriteString(str(c.text))
			case "tool_reference":
				// Tool search (advanced-tool-use): the tool it found is
				// declared in full on a route to another protocol.
				if sb.Len() > 0 {
					sb.WriteString("\n")
				}
				sb.WriteString("Tool loaded: " + str(c.toolName))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	text := sb.String()
	if b.isError {
		text = "Error: " + text
	}
	t.Buf = wire.AppendString(t.Buf, text)
	return nil
}

// parts writes text and image blocks as chat content parts (an array),
// and returns how many it wrote.
func (t *translator) parts(content []byte, param place, images bool) (int, error) {
	t.Buf = append(t.Buf, '[')
	n := 0
	err := eachBlock(content, param, func(k int, b block) error {
		start := len(t.Buf)
		if n > 0 {
			t.Buf = append(t.Buf, ',')
		}
		switch {
		case b.Type == "tool_result" && images:
			t.Buf = t.Buf[:start]
			return nil // a tool message of its own
		case b.Type == "text":
			if len(b.text) <= 2 {
				t.Buf = t.Buf[:start]
				return nil
			}
			t.Buf = append(t.Buf, `{"type":"text","text":`...)
			t.Buf = wire.AppendToken(t.Buf, b.text)
		case b.Type == "image" && images && !(t.keep() && !imageSource(b.source)):
			t.Buf = append(t.Buf, `{"type":"image_url","image_url":{"url":`...)
			var err error
			if t.Buf, err = appendImageURL(t.Buf, b.source, param.at(k, "source")); err != nil {
				return err
			}
			t.Buf = append(t.Buf, '}')
		case t.keep():
			t.Buf = t.Buf[:start]
			return nil // a block the chat model has no slot for, carried as it is
		default:
			return &wire.ParamError{Param: param.at(k, "type"), Msg: fmt.Sprintf("a %q block cannot be sent here", wire.Clip(b.Type)), Unsupported: true}
		}
		if b.cacheControl != nil {
			if t.o.Protocol == translate.Anthropic {
				t.Buf = append(t.Buf, `,"cache_control":`...)
				t.Buf = append(t.Buf, b.cacheControl...)
			} else {
				t.droppedCache++
			}
		}
		t.Buf = append(t.Buf, '}')
		n++
		return nil
	})
	t.Buf = append(t.Buf, ']')
	return n, err
}

// imageSource reports an image source appendImageURL can translate.
func imageSource(raw []byte) bool {
	typ, _ := wire.Member(raw, "type")
	return wire.StringIs(typ, "base64") || wire.StringIs(typ, "url")
}

// appendImageURL writes an image source as a URL string: base64 data as
// a data: URL.
func appendImageURL(buf, source []byte, param string) ([]byte, error) {
	typ, _ := wire.Member(source, "type")
	switch {
	case wire.StringIs(typ, "base64"):
		mt, _ := wire.Member(source, "media_type")
		data, _ := wire.Member(source, "data")
		buf = append(buf, `"data:`...)
		buf = appendInner(buf, mt)
		buf = append(buf, ";base64,"...)
		buf = appendInner(buf, data)
		return append(buf, '"'), nil
	case wire.StringIs(typ, "url"):
		url, _ := wire.Member(source, "url")
		tok, _ := wire.StringToken(url)
		return wire.AppendToken(buf, tok), nil
	}
	return buf, &wire.ParamError{Param: param, Msg: "must be a base64 or url image source", Unsupported: true}
}

// appendInner writes a string token's text without its quotes, as
// AppendToken would write it.
func appendInner(buf, v []byte) []byte {
	tok, _ := wire.StringToken(v)
	if tok == nil {
		return buf
	}
	if utf8.Valid(tok) {
		return append(buf, tok[1:len(tok)-1]...)
	}
	q := wire.AppendString(nil, str(tok))
	return append(buf, q[1:len(q)-1]...)
}

// turn is what an assistant message's blocks hold, counted first.
type turn struct {
	blocks, texts, thinking, thoughts, calls int
	text                                     []byte // the one text block's token
}

// assistant translates an assistant message: its text as content, its
// thinking as reasoning (or, for an Anthropic upstream, its signed
// blocks in the carried member), its tool_use blocks as calls.
func (t *translator) assistant(content []byte, param place) error {
	keep := t.keep() && isArray(content)
	var tn turn
	err := eachBlock(content, param, func(k int, b block) error {
		tn.blocks++
		switch b.Type {
		case "text":
			tn.texts++
			tn.text = b.text
			if b.cacheControl != nil && t.o.Protocol != translate.Anthropic {
				t.droppedCache++
			}
		case "thinking":
			tn.thinking++
			if len(b.signature) > 2 { // unsigned, it is no use to Anthropic: the gateway's store restores the signed one
				tn.thoughts++
			}
		case "redacted_thinking":
			tn.thoughts++
		case "tool_use":
			tn.calls++
		default:
			if keep {
				return nil // a server tool's use or result, …: carried as it is
			}
			return &wire.ParamError{Param: param.at(k, "type"), Msg: fmt.Sprintf("a %q block cannot be sent here", wire.Clip(b.Type)), Unsupported: true}
		}
		return nil
	})
	if err != nil {
		return err
	}
	keep = keep && tn.blocks > 0
	carried := t.o.Protocol == translate.Anthropic && tn.thoughts > 0 && t.o.CarriedMember != ""
	text := t.text(content, tn)
	if text == nil && tn.calls == 0 && !carried && !keep {
		return nil // an empty turn: nothing to send
	}
	t.Next("assistant")
	t.Member("content")
	if text == nil {
		t.Buf = append(t.Buf, "null"...)
	} else {
		t.Buf = append(t.Buf, text...)
	}
	switch {
	case carried:
		t.Member(t.o.CarriedMember)
		t.Buf = wire.AppendString(t.Buf, thoughts(content))
	case t.o.Protocol != translate.Anthropic && tn.thinking > 0 && t.o.ReasoningField != "":
		if r := joined(content, "thinking"); r != "" {
			t.Member(t.o.ReasoningField)
			t.Buf = wire.AppendString(t.Buf, r)
		}
	}
	if tn.calls > 0 {
		t.Member("tool_calls")
		t.calls(content)
	}
	if keep {
		t.blocksMember(content, func(block) bool { return true })
	}
	t.Buf = append(t.Buf, '}')
	return nil
}

// text is an assistant message's text as a JSON string, nil for none: a
// single text block's as it was sent.
func (t *translator) text(content []byte, tn turn) []byte {
	switch {
	case tn.texts == 1 && len(tn.text) > 2:
		return wire.AppendToken(nil, tn.text)
	case tn.texts > 1:
		if s := joined(content, "text"); s != "" {
			return wire.AppendString(nil, s)
		}
	}
	return nil
}

// joined is the text of a message's blocks of type typ (text or
// thinking), joined.
func joined(content []byte, typ string) string {
	var sb strings.Builder
	_ = eachBlock(content, place{}, func(_ int, b block) error {
		switch {
		case b.Type == typ && typ == "text":
			sb.WriteString(str(b.text))
		case b.Type == typ && typ == "thinking":
			sb.WriteString(str(b.thinking))
		}
		return nil
	})
	return sb.String()
}

// thoughts are a turn's signed thinking blocks, as Anthropic takes them
// back: a JSON array, which the carried member holds as a string.
func thoughts(content []byte) string {
	buf := []byte{'['}
	_ = eachBlock(content, place{}, func(_ int, b block) error {
		if b.Type != "redacted_thinking" && (b.Type != "thinking" || len(b.signature) <= 2) {
			return nil
		}
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"type":"`...)
		buf = append(buf, b.Type...)
		buf = append(buf, '"')
		if b.Type == "thinking" {
			buf = appendNonEmpty(buf, "thinking", b.thinking)
			buf = appendNonEmpty(buf, "signature", b.signature)
		} else {
			buf = appendNonEmpty(buf, "data", b.data)
		}
		buf = append(buf, '}')
		return nil
	})
	return string(append(buf, ']'))
}

// appendNonEmpty writes the member name with the string token tok, but
// for an empty one.
func appendNonEmpty(buf []byte, name string, tok []byte) []byte {
	if len(tok) <= 2 {
		return buf
	}
	buf = append(buf, `,"`...)
	buf = append(buf, name...)
	buf = append(buf, `":`...)
	return wire.AppendToken(buf, tok)
}

// calls writes a turn's tool_use blocks as chat tool calls, each input as
// the arguments string ("{}" for none).
func (t *translator) calls(content []byte) {
	t.Buf = append(t.Buf, '[')
	n := 0
	_ = eachBlock(content, place{}, func(_ int, b block) error {
		if b.Type != "tool_use" {
			return nil
		}
		if n > 0 {
			t.Buf = append(t.Buf, ',')
		}
		n++
		t.Buf = append(t.Buf, `{"id":`...)
		t.Buf = wire.AppendToken(t.Buf, b.id)
		t.Buf = append(t.Buf, `,"type":"function","function":{"name":`...)
		t.Buf = wire.AppendToken(t.Buf, b.name)
		t.Buf = append(t.Buf, `,"arguments":`...)
		input := b.input
		if len(input) == 0 || string(input) == "null" {
			input = []byte("{}")
		}
		t.Buf = wire.AppendString(t.Buf, input)
		t.Buf = append(t.Buf, "}}"...)
		return nil
	})
	t.Buf = append(t.Buf, ']')
}
