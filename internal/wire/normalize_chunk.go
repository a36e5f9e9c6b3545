package wire

import (
	"bytes"
)

// The normalizer's chunk stage: the chunk's own members (id, model,
// usage, an error object) and its choices array, then the chunk written
// back with what changed.

type chunkEdit struct {
	usage         bool // the chunk carries a usage object
	replaceID     bool // its id becomes the first chunk's (A24)
	dropNullError bool // its "error": null goes (A40)
	dropUsage     bool // its usage goes, held for the end (A22)
}

// chunkFixes applies the chunk-level fixes and takes the usage; drop
// reports a chunk to leave out (a placeholder, or usage alone).
func (n *Normalizer) chunkFixes() (e chunkEdit, drop bool) {
	choices, usage := lookup(n.s.top, "choices"), lookup(n.s.top, "usage")
	e.usage = len(usage) > 0 && usage[0] == '{'
	if n.opts.Quirks.Chunks {
		id := lookup(n.s.top, "id")
		if emptyArray(choices) && !e.usage && (len(id) == 0 || string(id) == `""`) {
			n.fix(FixPlaceholderChunk) // A23
			return e, true
		}
		if n.headID != nil && !bytes.Equal(id, n.headID) {
			n.fix(FixChunkID) // A24
			e.replaceID = true
		}
		if v := lookup(n.s.top, "error"); v != nil { // null, or it would have ended the stream
			n.fix(FixNullError) // A40: clients that test for the key would see an error
			e.dropNullError = true
		}
	}
	if e.usage {
		n.takeUsage(usage)
		if n.hold {
			if emptyArray(choices) {
				return e, true // a usage-only chunk (A22): sent once, at the end
			}
			e.dropUsage = true
		}
	}
	return e, false
}

// choices normalizes a chunk's choices in place in n.s.elems. held reports
// that every choice's only content was held fragments.
func (n *Normalizer) choices(raw []byte) (rewrite, held, drop bool, err error) {
	var ok bool
	if n.s.elems, ok = n.elements(raw); !ok {
		return false, false, false, &ProtocolError{Index: -1, Msg: "choices must be an array"}
	}
	n.s.cbuf = n.s.cbuf[:0]
	held = len(n.s.elems) > 0
	for k := range n.s.elems {
		r, heldOnly, drop, err := n.chunkChoice(k, len(n.s.elems))
		if err != nil || drop {
			return false, false, drop, err
		}
		held = held && heldOnly
		rewrite = rewrite || r
	}
	return rewrite, held, false, nil
}

// modelName is a reported model's name: the JSON string raw's text
// (clipped), "" for anything else.
func modelName(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	return Clip(stringValue(raw, 0, len(raw), bytes.IndexByte(raw, '\\') >= 0))
}

// noteHead keeps the id, object, created and model of the first chunk
// with a non-empty string id: every chunk the Normalizer makes carries
// them, and with the Chunks quirk every chunk gets that id (A24).
func (n *Normalizer) noteHead(top []member) {
	id := lookup(top, "id")
	if len(id) <= 2 || id[0] != '"' {
		return
	}
	n.seen = true
	n.collector.seed = string(id)
	for _, k := range [...]string{"id", "object", "created", "model"} {
		i := index(top, k)
		if i < 0 {
			continue
		}
		if len(n.head) > 0 {
			n.head = append(n.head, ',')
		}
		n.head = top[i].appendKey(n.head)
		n.head = append(n.head, ':')
		start := len(n.head)
		n.head = append(n.head, top[i].value...)
		switch k {
		case "id":
			n.headID = n.head[start:len(n.head):len(n.head)]
		case "model":
			n.model = n.head[start:len(n.head):len(n.head)]
		}
	}
}

// Model is the model the upstream reported ("" when it named none), for
// the trace: decoded only when asked for.
func (n *Normalizer) Model() string { return modelName(n.model) }

// elements splits a choices array into n.s.elems.
func (n *Normalizer) elements(raw []byte) ([]span, bool) {
	elems := n.s.elems[:0]
	r := readArray(raw, skipSpace(raw, 0))
	for {
		more, err := r.more()
		if err != nil {
			return elems, false
		}
		if !more {
			return elems, true
		}
		end, err := skipValue(raw, r.i, 1)
		if err != nil {
			return elems, false
		}
		elems = append(elems, span{b: raw[r.i:end]})
		r.i = end
	}
}

// chunkChoice normalizes choice k of count, in place in n.s.elems (its
// rewritten bytes go to n.s.cbuf). heldOnly reports a choice whose only
// content was tool-call fragments held back; drop, a chunk to leave out
// altogether (a cut left nothing).

func (n *Normalizer) encodeChunk(e chunkEdit) []byte {
	replaceID, dropNullError, dropUsage := e.replaceID, e.dropNullError, e.dropUsage
	b := append(n.s.out1[:0], '{')
	hadID := false
	for i := range n.s.top {
		m := &n.s.top[i]
		switch {
		case m.key == "error" && dropNullError, m.key == "usage" && dropUsage:
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = m.appendKey(b)
		b = append(b, ':')
		switch {
		case m.key == "id" && replaceID:
			hadID = true
			b = append(b, n.headID...)
		case m.key == "choices" && len(m.value) > 0 && m.value[0] == '[':
			b = append(b, '[')
			first := true
			for _, e := range n.s.elems {
				if e.omit {
					continue
				}
				if !first {
					b = append(b, ',')
				}
				first = false
				if e.rewrite {
					b = append(b, n.s.cbuf[e.start:e.end]...)
				} else {
					b = append(b, e.b...)
				}
			}
			b = append(b, ']')
		default:
			b = append(b, m.value...)
		}
	}
	if replaceID && !hadID {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, `"id":`...)
		b = append(b, n.headID...)
	}
	n.s.out1 = append(b, '}')
	return n.s.out1
}

// takeUsage records a chunk's usage as a snapshot (A25).
func (n *Normalizer) takeUsage(raw []byte) {
	if u, ok := ParseUsage(raw); ok {
		n.usage.snapshot(u)
		n.usageSeen = true
		n.usageRaw = append(n.usageRaw[:0], raw...)
	}
}

func (n *Normalizer) errorObject(data []byte) error {
	msg := UpstreamMessage(data)
	if msg == "" {
		msg = "an unspecified error"
	}
	return &IncompleteError{Upstream: n.opts.Upstream, Message: Clip(msg), Type: UpstreamType(data), Err: errErrorObject}
}
