package responses

import (
	"encoding/json"
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

// name is a type or role: a known one as its constant.
func name(v []byte) (string, bool) {
	for _, k := range known {
		if len(v) == len(k)+2 && string(v[1:len(v)-1]) == k && v[0] == '"' {
			return k, true
		}
	}
	if string(v) == "null" {
		return "", true
	}
	return wire.String(v)
}

// token is v when it is a JSON string, nil for null; ok is false for any
// other value.
func token(v []byte) ([]byte, bool) {
	switch {
	case string(v) == "null":
		return nil, true
	case len(v) > 0 && v[0] == '"':
		return v, true
	}
	return nil, false
}

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
			it.Type, ok = name(v)
			return ok
		case "role":
			it.Role, ok = name(v)
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
			*tok, ok = token(v)
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
	encrypted bool    // carried holds a reasoning inItem
	kept      [][]byte
	first     int // the index of its first inItem
	last      int // the index of its last inItem
}

// add takes item i into the turn.
func (a *assistant) add(raw []byte, i int) {
	if len(a.kept) == 0 {
		a.first = i
	}
	a.open, a.last = true, i
	a.kept = append(a.kept, raw)
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
	o    ChatOptions
	buf  []byte
	n    int // messages written
	turn assistant
}

// next starts a message of role, after a comma when one came before.
func (c *conversation) next(role string) {
	if c.n > 0 {
		c.buf = append(c.buf, ',')
	}
	c.n++
	c.buf = append(c.buf, `{"role":"`...)
	c.buf = append(c.buf, role...)
	c.buf = append(c.buf, '"')
}

// member writes the name of a message's next member.
func (c *conversation) member(name string) {
	c.buf = append(c.buf, ',', '"')
	c.buf = append(c.buf, name...)
	c.buf = append(c.buf, '"', ':')
}

// end ends a message made from items up to last: with keep, the items
// it was made from (kept), and the mark of a message made from the
// previous response's items only.
func (c *conversation) end(kept [][]byte, last int) {
	if c.o.Keep {
		c.member(translate.ItemsMember)
		c.buf = append(c.buf, '[')
		for k, raw := range kept {
			if k > 0 {
				c.buf = append(c.buf, ',')
			}
			c.buf = append(c.buf, raw...)
		}
		c.buf = append(c.buf, ']')
		if c.o.Previous != nil && last < c.o.Previous.Items {
			c.member(translate.PreviousMember)
			c.buf = append(c.buf, "true"...)
		}
	}
	c.buf = append(c.buf, '}')
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
	c.turn = assistant{}
	return nil
}

// assistant writes a gathered turn: its text, its calls, its reasoning
// summaries, the encrypted reasoning it carries.
func (c *conversation) assistant(t *assistant) error {
	c.next("assistant")
	c.member("content")
	switch s := joined(t.text); {
	case len(t.text) == 1 && len(t.text[0]) > 2:
		c.buf = wire.AppendToken(c.buf, t.text[0])
	case s != "":
		c.buf = wire.AppendString(c.buf, s)
	case c.o.Keep && len(t.kept) > 0 && len(t.calls) == 0:
		c.buf = append(c.buf, `""`...) // only items the chat model has no slot for, which the kept items carry
	default:
		c.buf = append(c.buf, "null"...)
	}
	if len(t.calls) > 0 {
		c.member("tool_calls")
		c.calls(t.calls)
	}
	if r := joined(t.reasoning); r != "" && c.o.ReasoningField != "" {
		c.member(c.o.ReasoningField)
		c.buf = wire.AppendString(c.buf, r)
	}
	if t.encrypted && c.o.CarriedMember != "" {
		if enc := t.carried.encode(); enc != nil {
			c.member(c.o.CarriedMember)
			c.buf = wire.AppendString(c.buf, enc)
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
	c.buf = append(c.buf, '[')
	for k, fc := range calls {
		if k > 0 {
			c.buf = append(c.buf, ',')
		}
		c.buf = append(c.buf, `{"id":`...)
		c.buf = wire.AppendToken(c.buf, fc.id)
		c.buf = append(c.buf, `,"type":"function","function":{"name":`...)
		if ns := text(fc.namespace); ns != "" {
			c.buf = wire.AppendString(c.buf, ns+NamespaceSep+text(fc.name))
		} else {
			c.buf = wire.AppendToken(c.buf, fc.name)
		}
		c.buf = append(c.buf, `,"arguments":`...)
		c.buf = wire.AppendToken(c.buf, fc.arguments)
		c.buf = append(c.buf, "}}"...)
	}
	c.buf = append(c.buf, ']')
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
			c.turn.add(raw, i)
			return turnText(&c.turn, it.content, i)
		}
		if err := c.flush(); err != nil {
			return err
		}
		if err := c.inputMessage(it, i); err != nil {
			return err
		}
		c.end([][]byte{raw}, i)
	case "function_call":
		turn.add(raw, i)
		turn.calls = append(turn.calls, call{id: it.callID, name: it.name, namespace: it.namespace, arguments: it.arguments})
		if turn.encrypted {
			turn.carried.Items = append(turn.carried.Items, carriedItem{Type: "function_call", ID: text(it.id), CallID: text(it.callID)})
		}
	case "function_call_output":
		if err := c.flush(); err != nil {
			return err
		}
		c.next("tool")
		c.member("tool_call_id")
		c.buf = wire.AppendToken(c.buf, it.callID)
		c.member("content")
		if err := c.outputText(it.output, i); err != nil {
			return err
		}
		c.end([][]byte{raw}, i)
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
		turn.add(raw, i)
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
	c.turn.add(raw, i)
	c.turn.open = open
	bad := false
	if len(it.summary) > 0 && string(it.summary) != "null" && !wire.EachElement(it.summary, func(_ int, s []byte) bool {
		v, _ := wire.Member(s, "text")
		tok, ok := token(v)
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
	c.next(it.Role)
	c.member("content")
	if tok, ok := token(it.content); ok {
		c.buf = wire.AppendToken(c.buf, tok)
		return nil
	}
	mark := len(c.buf)
	c.buf = append(c.buf, '[')
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
		_, textOK := token(txt)
		_, urlOK := token(url)
		if !ok || txt != nil && !textOK || url != nil && !urlOK {
			err = notParts(i)
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
		err = notParts(i)
	}
	if err != nil {
		return err
	}
	c.buf = append(c.buf, ']')
	if n == 0 && c.o.Keep {
		c.buf = append(c.buf[:mark], `""`...) // the kept inItem carries its parts
	}
	return nil
}

// errSkip: a part the chat model has no slot for, left to the kept item.
var errSkip = fmt.Errorf("skip")

// part writes one content part (the n-th written): text, or an image by
// URL; errSkip for one the kept item carries, an error for any other.
func (c *conversation) part(typ, txt, url, detail []byte, n int) error {
	start := len(c.buf)
	if n > 0 {
		c.buf = append(c.buf, ',')
	}
	switch {
	case wire.StringIs(typ, "input_text") || wire.StringIs(typ, "output_text"):
		c.buf = append(c.buf, `{"type":"text","text":`...)
		c.buf = append(wire.AppendToken(c.buf, txt), '}')
	case wire.StringIs(typ, "input_image") && len(url) > 2:
		c.buf = append(c.buf, `{"type":"image_url","image_url":{"url":`...)
		c.buf = wire.AppendToken(c.buf, url)
		if len(detail) > 0 && string(detail) != "null" {
			c.buf = append(append(c.buf, `,"detail":`...), detail...)
		}
		c.buf = append(c.buf, "}}"...)
	case c.o.Keep:
		c.buf = c.buf[:start]
		return errSkip
	default:
		c.buf = c.buf[:start]
		return errUnsupportedPart
	}
	return nil
}

// errUnsupportedPart: a part the chat model has no slot for.
var errUnsupportedPart = fmt.Errorf("unsupported part")

// partError names part k of item i in err.
func partError(err error, i, k int, typ []byte) error {
	if err != errUnsupportedPart {
		return err
	}
	return &wire.ParamError{Param: fmt.Sprintf("input[%d].content[%d].type", i, k), Msg: fmt.Sprintf("%q parts are not supported by this gateway (images by image_url only)", wire.Clip(text(typ))), Unsupported: true}
}

// notParts is the error for item i's content that is neither a string
// nor content parts.
func notParts(i int) error {
	return &wire.ParamError{Param: fmt.Sprintf("input[%d].content", i), Msg: "must be a string or an array of content parts"}
}

// turnText takes an assistant message's text into the turn: a
// string, or its output_text and refusal parts.
func turnText(t *assistant, content []byte, i int) error {
	if tok, ok := token(content); ok || len(content) == 0 {
		if tok != nil {
			t.text = append(t.text, tok)
		}
		return nil
	}
	bad := false
	if !wire.EachElement(content, func(_ int, p []byte) bool {
		txt, _ := wire.Member(p, "text")
		refusal, _ := wire.Member(p, "refusal")
		a, ok1 := token(txt)
		b, ok2 := token(refusal)
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

// outputText writes a function_call_output's output as text: a string as
// it was sent, or its text parts joined.
func (c *conversation) outputText(output []byte, i int) error {
	if tok, ok := token(output); ok {
		c.buf = wire.AppendToken(c.buf, tok)
		return nil
	}
	var sb strings.Builder
	bad := false
	if !wire.EachElement(output, func(_ int, p []byte) bool {
		txt, _ := wire.Member(p, "text")
		tok, ok := token(txt)
		if bad = txt != nil && !ok || p[0] != '{'; !bad {
			sb.WriteString(text(tok))
		}
		return !bad
	}) || bad {
		return &wire.ParamError{Param: fmt.Sprintf("input[%d].output", i), Msg: "must be a string or an array of input_text parts"}
	}
	c.buf = wire.AppendString(c.buf, sb.String())
	return nil
}
