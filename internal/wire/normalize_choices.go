package wire

import (
	"strconv"
)

// The normalizer's choice stage: each choice's index, its delta, and its
// finish reason, held until nothing more comes for that choice.

func (n *Normalizer) chunkChoice(k, count int) (rewrite, heldOnly, drop bool, err error) {
	raw := n.s.elems[k].b
	if n.s.choice, err = parseMembers(n.s.choice, raw); err != nil {
		return false, false, false, &ProtocolError{Index: -1, Msg: "a choice must be an object"}
	}
	q := n.opts.Quirks
	idx, idxPos := 0, index(n.s.choice, "index")
	if idxPos >= 0 {
		idx, _ = strconv.Atoi(string(n.s.choice[idxPos].value))
	}
	setIndex := q.Chunks && n.opts.SingleChoice && count == 1 && (idxPos < 0 || idx != 0)
	if setIndex {
		n.fix(FixChoiceIndex) // A27: missing, non-zero or incrementing
		idx = 0
	}
	addRole := false
	if q.Chunks && !n.roleSeen {
		n.roleSeen = true
		addRole = k == 0
	}
	d := delta{}
	dPos := index(n.s.choice, "delta")
	if dPos >= 0 && !isNull(n.s.choice[dPos].value) {
		if d, err = n.streamDelta(n.s.choice[dPos].value, idx, addRole); err != nil {
			return false, false, false, err
		}
	}
	fPos := index(n.s.choice, "finish_reason")
	finish, omit, drop := n.choiceFinish(idx, count, fPos, dPos, &d)
	switch {
	case drop:
		return false, false, true, nil // nothing of it fits, and it says nothing else
	case omit:
		n.s.elems[k] = span{omit: true}
		return true, true, false, nil
	}
	if !setIndex && !d.rewrite && finish == nil {
		return false, d.heldOnly, false, nil
	}
	start := len(n.s.cbuf)
	n.s.cbuf = n.encodeChoice(n.s.cbuf, choiceEdit{setIndex: setIndex, idxPos: idxPos, dPos: dPos, rewriteDelta: d.rewrite, fPos: fPos, finish: finish})
	n.s.elems[k] = span{start: start, end: len(n.s.cbuf), rewrite: true}
	return true, d.heldOnly, false, nil
}

// choiceFinish applies the finish-reason fixes to the current choice and,
// with the PostFinish quirk, holds a terminal finish to the end of the
// stream, or folds a later chunk of a finished choice into the held
// finish. It returns the finish_reason to write (nil: as it came), omit
// for a choice that goes out no more, drop for a chunk the text limit
// left empty.
func (n *Normalizer) choiceFinish(idx, count, fPos, dPos int, d *delta) (finish []byte, omit, drop bool) {
	post := n.opts.Quirks.PostFinish && !n.opts.Buffer
	if fPos < 0 || isNull(n.s.choice[fPos].value) {
		if d.cut && d.cutEmpty && count == 1 && !d.calls {
			return nil, false, true
		}
		if post && idx < len(n.finished) && n.finished[idx] {
			n.fix(FixPostFinish)
			if !n.choiceSays(dPos, d) {
				n.held(idx).fold(n.s.choice)
				return nil, true, false
			}
		}
		return nil, false, false
	}
	fRaw := n.s.choice[fPos].value
	if d.cut {
		finish, fRaw = []byte(`"length"`), []byte(`"length"`) // the text limit ends it
	}
	replace, dropChoice := n.finishReason(fRaw, idx, *d)
	if replace != nil {
		finish = replace
	}
	d.heldOnly = d.heldOnly || dropChoice
	final := finish
	if final == nil {
		final = fRaw
	}
	if !post || dropChoice || string(final) == "null" || idx >= maxHeldFinish {
		return finish, false, false
	}
	h := n.held(idx)
	h.reason = append(h.reason[:0], final...)
	if !n.choiceSays(dPos, d) {
		h.fold(n.s.choice) // the choice goes no more: its other members go with its finish
		return nil, true, false
	}
	return []byte("null"), false, false
}

// heldFinish is a choice's finish reason held to the end of the stream
// (the PostFinish quirk), with the members of its chunks that had nothing
// else to say.
type heldFinish struct {
	index  int
	reason []byte
	extra  []member
}

// maxHeldFinish bounds the choices whose finish is held.
const maxHeldFinish = 1024

// held returns choice idx's held finish, made when missing.
func (n *Normalizer) held(idx int) *heldFinish {
	for i := range n.heldFinishes {
		if n.heldFinishes[i].index == idx {
			return &n.heldFinishes[i]
		}
	}
	n.heldFinishes = append(n.heldFinishes, heldFinish{index: idx})
	return &n.heldFinishes[len(n.heldFinishes)-1]
}

// fold keeps a choice's members other than its index, delta and finish
// reason (Azure's content_filter_results, logprobs), each by its name.
func (h *heldFinish) fold(choice []member) {
	for _, m := range choice {
		switch m.key {
		case "index", "delta", "finish_reason":
			continue
		}
		if i := index(h.extra, m.key); i >= 0 {
			h.extra[i].value = append([]byte(nil), m.value...)
			continue
		}
		h.extra = append(h.extra, m.clone())
	}
}

// choiceSays reports whether the current choice's delta says anything.
func (n *Normalizer) choiceSays(dPos int, d *delta) bool {
	if d.rewrite {
		return !d.empty
	}
	if dPos < 0 {
		return false
	}
	v := n.s.choice[dPos].value
	return !isNull(v) && string(v) != "{}"
}

// heldFinishChunks are the chunks that send the held finish reasons, one
// per choice, in the order the choices finished.
func (n *Normalizer) heldFinishChunks() [][]byte {
	var out [][]byte
	for _, h := range n.heldFinishes {
		size := 64 + len(h.reason)
		for i := range h.extra {
			size += len(h.extra[i].key) + len(h.extra[i].value) + 8
		}
		b := append(n.madeHead(size), `[{"index":`...)
		b = strconv.AppendInt(b, int64(h.index), 10)
		b = append(b, `,"delta":{},"finish_reason":`...)
		b = append(b, h.reason...)
		for i := range h.extra {
			b = append(b, ',')
			b = h.extra[i].appendKey(b)
			b = append(b, ':')
			b = append(b, h.extra[i].value...)
		}
		out = append(out, append(b, "}]}"...))
	}
	n.heldFinishes = nil
	return out
}

// choiceEdit is what chunkChoice changes in one choice.
type choiceEdit struct {
	setIndex     bool
	idxPos       int
	dPos         int
	rewriteDelta bool // the delta is n.s.dbuf
	fPos         int
	finish       []byte // the new finish_reason, or nil
}

// encodeChoice appends the current choice with its changes to b.
func (n *Normalizer) encodeChoice(b []byte, e choiceEdit) []byte {
	b = append(b, '{')
	for i := range n.s.choice {
		if i > 0 {
			b = append(b, ',')
		}
		m := &n.s.choice[i]
		b = m.appendKey(b)
		b = append(b, ':')
		switch {
		case i == e.idxPos && e.setIndex:
			b = append(b, '0')
		case i == e.dPos && e.rewriteDelta:
			b = append(b, n.s.dbuf...)
		case i == e.fPos && e.finish != nil:
			b = append(b, e.finish...)
		default:
			b = append(b, m.value...)
		}
	}
	if e.setIndex && e.idxPos < 0 {
		if len(n.s.choice) > 0 {
			b = append(b, ',')
		}
		b = append(b, `"index":0`...)
	}
	return append(b, '}')
}

// delta is what streamDelta did to one delta.

func (n *Normalizer) finishReason(raw []byte, idx int, d delta) (replace []byte, dropChoice bool) {
	reason, _ := stringOf(raw)
	for len(n.finished) <= idx && idx < 1024 {
		n.finished = append(n.finished, false)
	}
	finished := idx < len(n.finished) && n.finished[idx]
	if n.opts.Quirks.FinishReason {
		switch {
		case finished:
			// A second terminal finish: dropped, and the choice with it
			// when it says nothing else (clients keep the last finish).
			n.fix(FixSecondFinishReason)
			return []byte("null"), !d.rewrite && n.choiceSaysNothing() || d.rewrite && d.empty
		case reason == "":
			n.fix(FixEmptyFinishReason) // A18: no finish reason, not a terminal one
			return []byte("null"), false
		case reason == "stop" && n.collector.Calls() > 0:
			n.fix(FixFinishReason)
			reason, replace = "tool_calls", []byte(`"tool_calls"`)
		}
	}
	if idx < len(n.finished) {
		n.finished[idx] = true
	}
	if idx == 0 {
		n.finish = reason
	}
	return replace, false
}

// choiceSaysNothing reports whether the current choice's delta is absent,
// null or {}.
func (n *Normalizer) choiceSaysNothing() bool {
	v := lookup(n.s.choice, "delta")
	return len(v) == 0 || string(v) == "{}" || string(v) == "null"
}

// encodeChunk writes the chunk with its rewritten members into n.s.out1.
