package wire

import (
	"unicode/utf8"
)

// The normalizer's delta stage: a choice's role, text, reasoning and
// tool-call fragments (through the collector).

type delta struct {
	rewrite  bool // n.s.dbuf holds the new delta
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
	sendCalls int    // canonical fragments in n.s.tbuf
}

// streamDelta normalizes one choice's delta into n.s.dbuf: the role the
// first delta lacks (A26), reasoning moved to the client's member (A29,
// A30), choice 0's text kept and limited, tool-call fragments made
// canonical (docs/spec.md §2) or held.
func (n *Normalizer) streamDelta(raw []byte, idx int, addRole bool) (d delta, err error) {
	if raw[0] != '{' {
		return d, &ProtocolError{Index: -1, Msg: "a delta must be an object"}
	}
	if n.s.delta, err = parseMembers(n.s.delta, raw); err != nil {
		return d, &ProtocolError{Index: -1, Msg: "a delta must be an object"}
	}
	e := deltaEdit{addRole: addRole && index(n.s.delta, "role") < 0, cPos: index(n.s.delta, "content"), renamePos: -1, tPos: index(n.s.delta, "tool_calls")}
	if e.addRole {
		n.fix(FixMissingRole)
	}
	if e.cPos >= 0 && n.opts.Quirks.ContentBlocks && firstByte(n.s.delta[e.cPos].value) == '[' {
		n.flattenContent(&e, idx)
	}
	n.deltaReasoning(&e, idx)
	if n.keepText && idx == 0 && n.opts.ReasoningIn != ReasoningThink {
		n.deltaText(&e, &d)
	}
	if e.tPos >= 0 {
		d.calls = !isNull(n.s.delta[e.tPos].value) && string(n.s.delta[e.tPos].value) != "[]"
		n.s.tbuf = append(n.s.tbuf[:0], '[')
		if n.opts.Buffer {
			err = n.holdFragments(n.s.delta[e.tPos].value)
		} else {
			n.s.tbuf, e.sendCalls, err = n.collector.appendFragments(n.s.tbuf, n.s.delta[e.tPos].value, false)
		}
		if err != nil {
			return d, err
		}
		n.s.tbuf = append(n.s.tbuf, ']')
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
		if e.blocks || e.cPos < 0 || len(n.s.delta[e.cPos].value) <= 2 || n.s.delta[e.cPos].value[0] != '"' {
			return
		}
		r, c := n.think.Split(stringOf2(n.s.delta[e.cPos].value))
		if n.keepText && idx == 0 {
			n.text.WriteString(c)
			n.textChars += utf8.RuneCountInString(c)
			n.reasoning.WriteString(r)
		}
		e.content = AppendString(nil, c)
		if r != "" {
			e.moved = AppendString(nil, r)
		}
	case ReasoningField:
		if n.out != "reasoning" {
			e.renamePos = index(n.s.delta, "reasoning")
		}
	case ReasoningContent:
		if n.out != "reasoning_content" {
			e.renamePos = index(n.s.delta, "reasoning_content")
		}
	}
}

// deltaText keeps choice 0's text and reasoning, and cuts the text at the
// limit (the content then becomes what fits).
func (n *Normalizer) deltaText(e *deltaEdit, d *delta) {
	if e.cPos >= 0 {
		content := n.s.delta[e.cPos].value
		if e.blocks {
			content = e.content
		}
		if text, ok := stringViewOf(content); ok {
			chars := utf8.RuneCountInString(text)
			if n.opts.LimitText && n.textChars+chars > n.opts.TextLimit {
				kept := cutRunes(text, max(n.opts.TextLimit-n.textChars, 0))
				n.cut, d.cut, d.cutEmpty = true, true, kept == ""
				text, chars = kept, utf8.RuneCountInString(kept)
				e.content = AppendString(nil, kept)
			}
			n.text.WriteString(text)
			n.textChars += chars
		}
	}
	in := "reasoning_content"
	if n.opts.ReasoningIn == ReasoningField {
		in = "reasoning"
	}
	if v, ok := stringViewOf(lookup(n.s.delta, in)); ok {
		n.reasoning.WriteString(v)
	}
}

// encodeDelta writes the edited delta into n.s.dbuf.
func (n *Normalizer) encodeDelta(e *deltaEdit, d *delta) {
	d.rewrite = true
	says := false // the new delta carries something other than null or ""
	b := append(n.s.dbuf[:0], '{')
	if e.addRole {
		b = append(b, `"role":"assistant"`...)
		says = true
	}
	for i := range n.s.delta {
		if i == e.renamePos || i == e.tPos && e.sendCalls == 0 {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = n.s.delta[i].appendKey(b)
		b = append(b, ':')
		v := n.s.delta[i].value
		switch {
		case i == e.cPos && e.content != nil:
			v = e.content
		case i == e.tPos:
			v = n.s.tbuf
		}
		b = append(b, v...)
		says = says || string(v) != "null" && string(v) != `""`
	}
	moved := e.moved
	if e.renamePos >= 0 {
		moved = n.s.delta[e.renamePos].value
	}
	if moved != nil {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = AppendString(b, n.out)
		b = append(b, ':')
		b = append(b, moved...)
		says = says || string(moved) != "null" && string(moved) != `""`
	}
	n.s.dbuf = append(b, '}')
	d.empty = len(n.s.dbuf) == 2
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
