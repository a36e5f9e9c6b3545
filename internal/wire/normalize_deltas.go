package wire

import (
	"unicode/utf8"
)

// The normalizer's delta stage: a choice's role, text, reasoning and
// tool-call fragments (through the collector).

type delta struct {
	rewrite  bool // n.dbuf holds the new delta
	heldOnly bool // its only content was held tool-call fragments
	calls    bool // it carried tool-call fragments
	cut      bool // the text limit was reached in it
	cutEmpty bool // ... and none of its text fit
	empty    bool // it says nothing (after the rewrite)
}

// deltaEdit is what streamDelta changes in one delta: positions of its
// members (-1: none), and their new values.
type deltaEdit struct {
	addRole   bool
	blocks    bool   // the content was typed blocks, now e.content (A31)
	cPos      int    // content
	content   []byte // its new value, or nil
	renamePos int    // the upstream's reasoning member, moved to the client's
	moved     []byte // reasoning to add as the client's member, or nil
	tPos      int    // tool_calls
	sendCalls int    // canonical fragments in n.tbuf
}

// streamDelta normalizes one choice's delta into n.dbuf: the role the
// first delta lacks (A26), reasoning moved to the client's member (A29,
// A30), choice 0's text kept and limited, tool-call fragments made
// canonical (docs/spec.md §2) or held.
func (n *Normalizer) streamDelta(raw []byte, idx int, addRole bool) (d delta, err error) {
	if raw[0] != '{' {
		return d, &ProtocolError{Index: -1, Msg: "a delta must be an object"}
	}
	if n.delta, err = parseMembers(n.delta, raw); err != nil {
		return d, &ProtocolError{Index: -1, Msg: "a delta must be an object"}
	}
	e := deltaEdit{addRole: addRole && index(n.delta, "role") < 0, cPos: index(n.delta, "content"), renamePos: -1, tPos: index(n.delta, "tool_calls")}
	if e.addRole {
		n.fixes[FixMissingRole]++
	}
	if e.cPos >= 0 && n.opts.Quirks.ContentBlocks && firstByte(n.delta[e.cPos].value) == '[' {
		n.flattenContent(&e, idx)
	}
	n.deltaReasoning(&e, idx)
	if n.keepText && idx == 0 && n.opts.ReasoningIn != ReasoningThink {
		n.deltaText(&e, &d)
	}
	if e.tPos >= 0 {
		d.calls = !isNull(n.delta[e.tPos].value) && string(n.delta[e.tPos].value) != "[]"
		n.tbuf = append(n.tbuf[:0], '[')
		if n.opts.Buffer {
			err = n.holdFragments(n.delta[e.tPos].value)
		} else {
			n.tbuf, e.sendCalls, err = n.collector.appendFragments(n.tbuf, n.delta[e.tPos].value, false)
		}
		if err != nil {
			return d, err
		}
		n.tbuf = append(n.tbuf, ']')
	}
	if !e.addRole && e.content == nil && e.moved == nil && e.renamePos < 0 && e.tPos < 0 && !e.blocks {
		return d, nil
	}
	n.encodeDelta(&e, &d)
	return d, nil
}

// deltaReasoning moves a delta's reasoning to the client's member:
// renamed, or split out of <think> tags in its content (kept, for choice
// 0, with KeepText).
func (n *Normalizer) deltaReasoning(e *deltaEdit, idx int) {
	switch n.opts.ReasoningIn {
	case ReasoningThink:
		if e.blocks || e.cPos < 0 || len(n.delta[e.cPos].value) <= 2 || n.delta[e.cPos].value[0] != '"' {
			return
		}
		r, c := n.think.Split(stringOf2(n.delta[e.cPos].value))
		if n.keepText && idx == 0 {
			n.text.WriteString(c)
			n.textChars += utf8.RuneCountInString(c)
			n.reasoning.WriteString(r)
		}
		e.content = appendString(nil, c)
		if r != "" {
			e.moved = appendString(nil, r)
		}
	case ReasoningField:
		if n.out != "reasoning" {
			e.renamePos = index(n.delta, "reasoning")
		}
	case ReasoningContent:
		if n.out != "reasoning_content" {
			e.renamePos = index(n.delta, "reasoning_content")
		}
	}
}

// deltaText keeps choice 0's text and reasoning, and cuts the text at the
// limit (the content then becomes what fits).
func (n *Normalizer) deltaText(e *deltaEdit, d *delta) {
	if e.cPos >= 0 {
		content := n.delta[e.cPos].value
		if e.blocks {
			content = e.content
		}
		if text, ok := stringViewOf(content); ok {
			chars := utf8.RuneCountInString(text)
			if n.opts.LimitText && n.textChars+chars > n.opts.TextLimit {
				kept := cutRunes(text, max(n.opts.TextLimit-n.textChars, 0))
				n.cut, d.cut, d.cutEmpty = true, true, kept == ""
				text, chars = kept, utf8.RuneCountInString(kept)
				e.content = appendString(nil, kept)
			}
			n.text.WriteString(text)
			n.textChars += chars
		}
	}
	in := "reasoning_content"
	if n.opts.ReasoningIn == ReasoningField {
		in = "reasoning"
	}
	if v, ok := stringViewOf(lookup(n.delta, in)); ok {
		n.reasoning.WriteString(v)
	}
}

// encodeDelta writes the edited delta into n.dbuf.
func (n *Normalizer) encodeDelta(e *deltaEdit, d *delta) {
	d.rewrite = true
	says := false // the new delta carries something other than null or ""
	b := append(n.dbuf[:0], '{')
	if e.addRole {
		b = append(b, `"role":"assistant"`...)
		says = true
	}
	for i := range n.delta {
		if i == e.renamePos || i == e.tPos && e.sendCalls == 0 {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = n.delta[i].appendKey(b)
		b = append(b, ':')
		v := n.delta[i].value
		switch {
		case i == e.cPos && e.content != nil:
			v = e.content
		case i == e.tPos:
			v = n.tbuf
		}
		b = append(b, v...)
		says = says || string(v) != "null" && string(v) != `""`
	}
	moved := e.moved
	if e.renamePos >= 0 {
		moved = n.delta[e.renamePos].value
	}
	if moved != nil {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendString(b, n.out)
		b = append(b, ':')
		b = append(b, moved...)
		says = says || string(moved) != "null" && string(moved) != `""`
	}
	n.dbuf = append(b, '}')
	d.empty = len(n.dbuf) == 2
	d.heldOnly = e.tPos >= 0 && e.sendCalls == 0 && !says
}

// holdFragments keeps a delta's fragments in Buffer mode: merged into one
// pending fragment per call, sent by Flush.
func (n *Normalizer) holdFragments(toolCalls []byte) error {
	_, err := n.collector.each(toolCalls, false, func(f out1) {
		for len(n.pending) <= f.index {
			n.pending = append(n.pending, pendingCall{})
		}
		p := &n.pending[f.index]
		if f.id != "" {
			p.id, p.name = f.id, f.name
		}
		if text, ok := stringOf(f.args); ok {
			p.args = append(p.args, text...)
		}
		for _, m := range f.extra {
			p.extra = append(p.extra, m.clone())
		}
	})
	return err
}

// finishReason applies the finish-reason fixes to one choice's finish
// (A15, A16, A18) and records it; it returns the value to write instead,
// or nil, and whether the choice has nothing left to say.
