package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// inItem is an input item as the translation reads it, in place: its type
// and role decoded, its string members the JSON tokens as sent (nil when
// absent or null), the others raw values.
type inItem struct {
	Type, Role                                      string
	content, output, summary                        []byte
	callID, name, namespace, arguments, id, encrypt []byte
	// variant is a member spelled as one the translation reads, in
	// another case (refused: wire.CaseVariant), "" for none.
	variant string
}

// itemMembers are the members of an item the translation reads.
var itemMembers = []string{"type", "role", "content", "output", "summary", "call_id", "name", "namespace", "arguments", "id", "encrypted_content"}

// known are the item types and roles the translation reads, as
// constants: nothing is allocated to read them.
var known = []string{"message", "function_call", "function_call_output", "reasoning", "item_reference", "user", "assistant", "system", "developer"}

// text is a string token's value ("" for nil).
func text(tok []byte) string {
	s, _ := wire.String(tok)
	return s
}

// readItem reads input item raw in place; false when it is no object or
// a member has the wrong type.
func readItem(raw []byte) (inItem, bool) {
	var it inItem
	ok := true
	valid := wire.EachMember(raw, func(k string, v []byte) bool {
		var tok *[]byte
		switch k {
		case "type":
			it.Type, ok = wire.KnownString(v, known)
			return ok
		case "role":
			it.Role, ok = wire.KnownString(v, known)
			return ok
		case "content":
			it.content = v
		case "output":
			it.output = v
		case "summary":
			it.summary = v
		case "call_id":
			tok = &it.callID
		case "name":
			tok = &it.name
		case "namespace":
			tok = &it.namespace
		case "arguments":
			tok = &it.arguments
		case "id":
			tok = &it.id
		case "encrypted_content":
			tok = &it.encrypt
		}
		if tok != nil {
			*tok, ok = wire.StringToken(v)
		} else if it.variant == "" && wire.CaseVariant(k, itemMembers, "") != nil {
			it.variant = k
		}
		return ok
	})
	if it.Type == "" && it.Role != "" {
		it.Type = "message"
	}
	return it, valid && ok
}

// call is a function_call item of an assistant turn.
type call struct{ id, name, namespace, arguments []byte }

// assistant gathers one assistant turn: an assistant message and the
// function_call items that follow it.
type assistant struct {
	text      [][]byte // the JSON strings its text is made of, in order
	reasoning [][]byte // the JSON strings of its reasoning summaries
	calls     []call
	open      bool
	carried   Carried // the encrypted reasoning items sent back, with the calls after them
	encrypted bool    // carried holds a reasoning item
	kept      []int   // the indices of its items
	first     int     // the index of its first item
	last      int     // the index of its last item
}

// add takes item i into the turn.
func (a *assistant) add(i int) {
	if len(a.kept) == 0 {
		a.first = i
	}
	a.open, a.last = true, i
	a.kept = append(a.kept, i)
}

// carry keeps a reasoning item the client sent back with encrypted
// content in the sealed form, still sealed, for the turn's carried
// member: the upstream's translator opens it for the upstream the
// request goes to (open). An item not in the sealed form is left to the
// summary alone.
func (a *assistant) carry(raw []byte, it inItem) {
	if _, _, ok := unseal(text(it.encrypt)); !ok {
		return
	}
	a.carried.Sealed, a.encrypted = true, true
	a.carried.Items = append(a.carried.Items, carriedItem{Type: "reasoning", Reasoning: raw})
}

// conversation writes the chat messages of input items into one buffer.
type conversation struct {
	translate.ChatWriter
	o    ChatOptions
	turn assistant
}

// end ends a message made from items up to last: with keep, the items
// it was made from (kept, by their index in the conversation), and the
// mark of a message made from the previous response's items only.
func (c *conversation) end(kept []int, last int) {
	if c.o.Keep {
		c.Member(translate.ItemsMember)
		c.Buf = append(c.Buf, '[')
		for k, i := range kept {
			c.Buf = translate.AppendIndex(c.Buf, k, i)
		}
		c.Buf = append(c.Buf, ']')
		if c.o.Previous != nil && last < c.o.Previous.Items {
			c.Member(translate.PreviousMember)
			c.Buf = append(c.Buf, "true"...)
		}
	}
	c.Buf = append(c.Buf, '}')
}

// messages writes input items as chat messages.
func (c *conversation) messages(items []json.RawMessage) error {
	for i, raw := range items {
		it, ok := readItem(raw)
		if !ok {
			return &wire.ParamError{Param: fmt.Sprintf("input[%d]", i), Msg: "must be an input item object"}
		}
		if it.variant != "" {
			return wire.CaseVariant(it.variant, itemMembers, fmt.Sprintf("input[%d]", i))
		}
		if err := c.item(i, raw, it); err != nil {
			return err
		}
	}
	return c.flush()
}

// flush ends the assistant turn being gathered.
func (c *conversation) flush() error {
	t := &c.turn
	if t.open {
		if err := c.assistant(t); err != nil {
			return err
		}
		if p := c.o.Previous; p != nil && t.first < p.Items && t.last >= p.Items {
			p.Items = 0 // a turn that spans the previous response's end: nothing can stand for part of it
		}
	}
	// The next turn is gathered in the same lists: what they held is
	// written.
	c.turn = assistant{text: t.text[:0], reasoning: t.reasoning[:0], calls: t.calls[:0], kept: t.kept[:0],
		carried: Carried{Items: t.carried.Items[:0]}}
	return nil
}

// assistant writes a gathered turn: its text, its calls, its reasoning
// summaries, the encrypted reasoning it carries.
func (c *conversation) assistant(t *assistant) error {
	c.Next("assistant")
	c.Member("content")
	switch s := joined(t.text); {
	case len(t.text) == 1 && len(t.text[0]) > 2:
		c.Buf = wire.AppendToken(c.Buf, t.text[0])
	case s != "":
		c.Buf = wire.AppendString(c.Buf, s)
	case c.o.Keep && len(t.kept) > 0 && len(t.calls) == 0:
		c.Buf = append(c.Buf, `""`...) // only items the chat model has no slot for, which the kept items carry
	default:
		c.Buf = append(c.Buf, "null"...)
	}
	if len(t.calls) > 0 {
		c.Member("tool_calls")
		c.calls(t.calls)
	}
	if r := joined(t.reasoning); r != "" && c.o.ReasoningField != "" {
		c.Member(c.o.ReasoningField)
		c.Buf = wire.AppendString(c.Buf, r)
	}
	if t.encrypted && c.o.CarriedMember != "" {
		if enc := t.carried.encode(); enc != nil {
			c.Member(c.o.CarriedMember)
			c.Buf = wire.AppendString(c.Buf, enc)
		}
	}
	c.end(t.kept, t.last)
	return nil
}

// joined is the text of JSON strings, joined.
func joined(toks [][]byte) string {
	if len(toks) == 1 {
		return text(toks[0])
	}
	var sb strings.Builder
	for _, t := range toks {
		sb.WriteString(text(t))
	}
	return sb.String()
}

// calls writes a turn's function calls as chat tool calls: a call of a
// namespace's function by the name NamespaceSep makes.
func (c *conversation) calls(calls []call) {
	c.Buf = append(c.Buf, '[')
	for k, fc := range calls {
		if k > 0 {
			c.Buf = append(c.Buf, ',')
		}
		c.Buf = append(c.Buf, `{"id":`...)
		c.Buf = wire.AppendToken(c.Buf, fc.id)
		c.Buf = append(c.Buf, `,"type":"function","function":{"name":`...)
		if ns := text(fc.namespace); ns != "" {
			c.Buf = wire.AppendString(c.Buf, ns+NamespaceSep+text(fc.name))
		} else {
			c.Buf = wire.AppendToken(c.Buf, fc.name)
		}
		c.Buf = append(c.Buf, `,"arguments":`...)
		c.Buf = wire.AppendToken(c.Buf, fc.arguments)
		c.Buf = append(c.Buf, "}}"...)
	}
	c.Buf = append(c.Buf, ']')
}

// item takes input item i.
func (c *conversation) item(i int, raw []byte, it inItem) error {
	o, turn := c.o, &c.turn
	switch it.Type {
	case "message":
		if it.Role == "assistant" {
			if turn.open && len(turn.calls) > 0 {
				if err := c.flush(); err != nil { // a new assistant turn after calls
					return err
				}
			}
			c.turn.add(i)
			return turnText(&c.turn, it.content, i)
		}
		if err := c.flush(); err != nil {
			return err
		}
		if err := c.inputMessage(it, i); err != nil {
			return err
		}
		c.end([]int{i}, i)
	case "function_call":
		turn.add(i)
		turn.calls = append(turn.calls, call{id: it.callID, name: it.name, namespace: it.namespace, arguments: it.arguments})
		if turn.encrypted {
			turn.carried.Items = append(turn.carried.Items, carriedItem{Type: "function_call", ID: text(it.id), CallID: text(it.callID)})
		}
	case "function_call_output":
		if err := c.flush(); err != nil {
			return err
		}
		c.Next("tool")
		c.Member("tool_call_id")
		c.Buf = wire.AppendToken(c.Buf, it.callID)
		if err := c.outputText(it.output, i); err != nil {
			return err
		}
		c.end([]int{i}, i)
	case "reasoning":
		return c.reasoning(raw, i, it)
	default:
		if o.DropHosted && !o.Keep && hostedCall(it.Type) {
			return nil // the call of a hosted tool left out: the chat model has no slot for it
		}
		if !o.Keep || it.Type == "" {
			return &wire.ParamError{Param: fmt.Sprintf("input[%d].type", i), Msg: fmt.Sprintf("%q items are not supported by this gateway", wire.Clip(it.Type)), Unsupported: true}
		}
		// A hosted tool's call (web_search_call, …) or another item the
		// chat model has no slot for: kept with the assistant turn it
		// belongs to, in its place.
		turn.add(i)
	}
	return nil
}

// reasoning takes reasoning item i: its summaries as the turn's
// reasoning, its encrypted content carried.
func (c *conversation) reasoning(raw []byte, i int, it inItem) error {
	if c.turn.open && len(c.turn.calls) > 0 {
		if err := c.flush(); err != nil {
			return err
		}
	}
	open := c.turn.open // reasoning alone makes no turn
	c.turn.add(i)
	c.turn.open = open
	bad := false
	if len(it.summary) > 0 && string(it.summary) != "null" && !wire.EachElement(it.summary, func(_ int, s []byte) bool {
		v, _ := wire.Member(s, "text")
		tok, ok := wire.StringToken(v)
		if bad = v != nil && !ok || s[0] != '{'; !bad && tok != nil {
			c.turn.reasoning = append(c.turn.reasoning, tok)
		}
		return !bad
	}) || bad {
		return &wire.ParamError{Param: fmt.Sprintf("input[%d]", i), Msg: "must be an input item object"}
	}
	if c.o.CarriedMember != "" && len(it.encrypt) > 2 {
		c.turn.carry(raw, it)
	}
	return nil
}

// hostedCall reports an item that is a hosted tool's call (web_search_call,
// file_search_call, …), which carries nothing the conversation needs.
func hostedCall(typ string) bool {
	tool, ok := strings.CutSuffix(typ, "_call")
	return ok && hosted(tool)
}

// inputMessage writes a user, system or developer message but its end;
// with keep, parts the chat model has no slot for (files, images by file
// id) are left to the kept item.
func (c *conversation) inputMessage(it inItem, i int) error {
	switch it.Role {
	case "user", "system", "developer":
	default:
		return &wire.ParamError{Param: fmt.Sprintf("input[%d].role", i), Msg: fmt.Sprintf("%q is not a message role; use user, system, developer or assistant", wire.Clip(it.Role))}
	}
	c.Next(it.Role)
	if tok, ok := wire.StringToken(it.content); ok {
		c.Content(tok)
		return nil
	}
	c.Member("content")
	mark := len(c.Buf)
	c.Buf = append(c.Buf, '[')
	n := 0
	var err error
	if !wire.EachElement(it.content, func(k int, p []byte) bool {
		var typ, txt, url, detail []byte
		ok := wire.EachMember(p, func(key string, v []byte) bool {
			switch key {
			case "type":
				typ = v
			case "text":
				txt = v
			case "image_url":
				url = v
			case "detail":
				detail = v
			}
			return true
		})
		_, textOK := wire.StringToken(txt)
		_, urlOK := wire.StringToken(url)
		if !ok || txt != nil && !textOK || url != nil && !urlOK {
			err = translate.NotParts(fmt.Sprintf("input[%d].content", i))
			return false
		}
		err = c.part(typ, txt, url, detail, n)
		if err == errSkip {
			err = nil
			return true
		}
		if err != nil {
			err = partError(err, i, k, typ)
			return false
		}
		n++
		return true
	}) && err == nil {
		err = translate.NotParts(fmt.Sprintf("input[%d].content", i))
	}
	if err != nil {
		return err
	}
	c.Buf = append(c.Buf, ']')
	if n == 0 && c.o.Keep {
		c.Buf = append(c.Buf[:mark], `""`...) // the kept item carries its parts
	}
	return nil
}

// errSkip: a part the chat model has no slot for, left to the kept item.
var errSkip = errors.New("skip")

// part writes one content part (the n-th written): text, or an image by
// URL; errSkip for one the kept item carries, an error for any other.
func (c *conversation) part(typ, txt, url, detail []byte, n int) error {
	start := len(c.Buf)
	if n > 0 {
		c.Buf = append(c.Buf, ',')
	}
	switch {
	case wire.StringIs(typ, "input_text") || wire.StringIs(typ, "output_text"):
		c.Buf = append(c.Buf, `{"type":"text","text":`...)
		c.Buf = append(wire.AppendToken(c.Buf, txt), '}')
	case wire.StringIs(typ, "input_image") && len(url) > 2:
		c.Buf = append(c.Buf, `{"type":"image_url","image_url":{"url":`...)
		c.Buf = wire.AppendToken(c.Buf, url)
		if len(detail) > 0 && string(detail) != "null" {
			c.Buf = append(append(c.Buf, `,"detail":`...), detail...)
		}
		c.Buf = append(c.Buf, "}}"...)
	case c.o.Keep:
		c.Buf = c.Buf[:start]
		return errSkip
	default:
		c.Buf = c.Buf[:start]
		return errUnsupportedPart
	}
	return nil
}

// errUnsupportedPart: a part the chat model has no slot for.
var errUnsupportedPart = errors.New("unsupported part")

// partError names part k of item i in err.
func partError(err error, i, k int, typ []byte) error {
	if err != errUnsupportedPart {
		return err
	}
	return &wire.ParamError{Param: fmt.Sprintf("input[%d].content[%d].type", i, k), Msg: fmt.Sprintf("%q parts are not supported by this gateway (images by image_url only)", wire.Clip(text(typ))), Unsupported: true}
}

// turnText takes an assistant message's text into the turn: a
// string, or its output_text and refusal parts.
func turnText(t *assistant, content []byte, i int) error {
	if tok, ok := wire.StringToken(content); ok || len(content) == 0 {
		if tok != nil {
			t.text = append(t.text, tok)
		}
		return nil
	}
	bad := false
	if !wire.EachElement(content, func(_ int, p []byte) bool {
		txt, _ := wire.Member(p, "text")
		refusal, _ := wire.Member(p, "refusal")
		a, ok1 := wire.StringToken(txt)
		b, ok2 := wire.StringToken(refusal)
		if bad = txt != nil && !ok1 || refusal != nil && !ok2 || p[0] != '{'; bad {
			return false
		}
		for _, tok := range [2][]byte{a, b} {
			if tok != nil {
				t.text = append(t.text, tok)
			}
		}
		return true
	}) || bad {
		return &wire.ParamError{Param: fmt.Sprintf("input[%d].content", i), Msg: "must be a string or an array of output_text parts"}
	}
	return nil
}

// outputText writes a function_call_output's output as the content
// member's text: a string as it was sent, or its text parts joined.
func (c *conversation) outputText(output []byte, i int) error {
	if tok, ok := wire.StringToken(output); ok {
		c.Content(tok)
		return nil
	}
	c.Member("content")
	var sb strings.Builder
	bad := false
	if !wire.EachElement(output, func(_ int, p []byte) bool {
		txt, _ := wire.Member(p, "text")
		tok, ok := wire.StringToken(txt)
		if bad = txt != nil && !ok || p[0] != '{'; !bad {
			sb.WriteString(text(tok))
		}
		return !bad
	}) || bad {
		return &wire.ParamError{Param: fmt.Sprintf("input[%d].output", i), Msg: "must be a string or an array of input_text parts"}
	}
	c.Buf = wire.AppendString(c.Buf, sb.String())
	return nil
}
