package wire

import "strings"

// flattenBlocks reads content sent as an array of typed blocks (docs/quirks.md
// A31, Mistral's reasoning models): "text" blocks are the text, "thinking"
// blocks (their "thinking" a string or an array of text blocks) the
// reasoning; other blocks ("reference", unknown types, non-objects) are
// dropped and counted. ok is false when raw is not an array.
func flattenBlocks(raw []byte) (text, reasoning string, dropped int, ok bool) {
	elems, ok := Elements(raw)
	if !ok {
		return "", "", 0, false
	}
	var t, r strings.Builder
	for _, e := range elems {
		members, err := parseMembers(nil, e)
		if err != nil {
			dropped++
			continue
		}
		typ, _ := stringOf(lookup(members, "type"))
		switch typ {
		case "text":
			s, _ := stringOf(lookup(members, "text"))
			t.WriteString(s)
		case "thinking":
			v := lookup(members, "thinking")
			if s, isString := stringOf(v); isString {
				r.WriteString(s)
				continue
			}
			parts, _ := Elements(v)
			for _, p := range parts {
				pm, err := parseMembers(nil, p)
				if err != nil {
					continue
				}
				if s, ok := stringOf(lookup(pm, "text")); ok {
					r.WriteString(s)
				}
			}
		default:
			dropped++
		}
	}
	return t.String(), r.String(), dropped, true
}

// flattenContent makes a delta's block content (A31) its text and its
// reasoning, in e.
func (n *Normalizer) flattenContent(e *deltaEdit, idx int) {
	text, reasoning, dropped, ok := flattenBlocks(n.s.delta[e.cPos].value)
	if !ok {
		return
	}
	n.fix(FixContentBlocks)
	n.fixN(FixDroppedBlock, dropped)
	e.blocks = true
	e.content = AppendString(nil, text)
	if reasoning != "" {
		e.moved = AppendString(nil, reasoning)
		if n.keepText && idx == 0 {
			n.reasoning.WriteString(reasoning)
		}
	}
}

// flattenWholeContent does the same for a whole message's content, in o.
func (n *Normalizer) flattenWholeContent(o *Object) bool {
	v, _ := o.Get("content")
	if len(v) == 0 || v[0] != '[' {
		return false
	}
	text, reasoning, dropped, ok := flattenBlocks(v)
	if !ok {
		return false
	}
	n.fix(FixContentBlocks)
	n.fixN(FixDroppedBlock, dropped)
	o.Set("content", AppendString(nil, text))
	if reasoning != "" {
		o.Set(n.out, AppendString(nil, reasoning))
	}
	return true
}
