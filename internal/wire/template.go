package wire

import (
	"bytes"
	"unicode/utf8"
	"unsafe"
)

// A stream's chunks mostly differ from the one before in a single string:
// the next piece of text ("content") or of a call's arguments. When the
// full path changed nothing in a chunk but the text kept, the call's
// arguments and the counts of its fixes, and the string went out as it
// came, the Normalizer keeps that chunk's bytes around the string as a
// template, with what went out around it; a next chunk that is the same
// bytes around a valid JSON string is then the same chunk to the full
// path — the same members, the same state, so the same decisions and
// fixes — and goes out as the template says, its string added to the
// text or the call, without being parsed again. Anything else (another shape, a fix, a finish reason, usage, the
// text limit, a call's size bound, think tags, buffered calls) goes
// through the full path, which may make a new template. FuzzTemplate
// checks that both paths give the same output, state and result.

type templateKind uint8

const (
	noTemplate   templateKind = iota
	textTemplate              // the string is choice 0's content
	argsTemplate              // the string is the arguments of one call's continuation fragment
)

type template struct {
	kind   templateKind
	prefix []byte      // the chunk up to and including the string's opening quote
	suffix []byte      // the chunk from the string's closing quote
	same   bool        // the chunk goes out as it came
	out    [2][]byte   // else: what goes out before and after the string
	fixes  Fixes       // the fixes the chunk applies
	fixed  bool        // fixes has any
	call   *collecting // argsTemplate: the call the arguments go to
}

// size is the bytes the template holds.
func (t *template) size() int {
	return cap(t.prefix) + cap(t.suffix) + cap(t.out[0]) + cap(t.out[1])
}

// emptied is an unset template with t's buffers, for another response.
func (t *template) emptied() template {
	return template{prefix: t.prefix[:0], suffix: t.suffix[:0], out: [2][]byte{t.out[0][:0], t.out[1][:0]}}
}

// chunkState is what a chunk may change that later chunks depend on,
// besides the text kept and the calls' arguments.
type chunkState struct {
	fixes             Fixes
	seen, roleSeen    bool
	calls, finished   int
	finish            string
	usageSeen, cut    bool
	heldCalls, finals int
	heldFinishes      int
}

func (n *Normalizer) state() chunkState {
	return chunkState{fixes: n.fixes, seen: n.seen, roleSeen: n.roleSeen, calls: n.collector.Calls(),
		finished: len(n.finished), finish: n.finish, usageSeen: n.usageSeen, cut: n.cut,
		heldCalls: len(n.pending), finals: len(n.final), heldFinishes: len(n.heldFinishes)}
}

// fromTemplate sends data through the template when it fits: it returns
// what to send and whether it did.
func (n *Normalizer) fromTemplate(data []byte) ([]byte, bool) {
	t := &n.tmpl
	p, s := len(t.prefix), len(t.suffix)
	if len(data) < p+s || !bytes.Equal(data[:p], t.prefix) || !bytes.Equal(data[len(data)-s:], t.suffix) {
		return nil, false
	}
	end, escaped, err := skipString(data, p-1)
	if err != nil || end != len(data)-s+1 {
		return nil, false
	}
	switch t.kind {
	case textTemplate:
		if n.keepText {
			text := stringView(data, p-1, end, escaped)
			chars := utf8.RuneCountInString(text)
			if n.opts.LimitText && n.textChars+chars > n.opts.TextLimit {
				return nil, false // the full path cuts it
			}
			n.text.WriteString(text)
			n.textChars += chars
		}
	case argsTemplate:
		c := t.call
		if c.args.Len()+end-(p-1) > MaxCallArguments {
			return nil, false // the full path refuses it
		}
		c.args.Write(appendUnquoted(c.args.AvailableBuffer(), data, p-1, end))
		n.collector.last = c
	}
	if t.fixed {
		for k, d := range t.fixes {
			n.fixes[k] += d
		}
	}
	if t.same {
		return data, true
	}
	b := append(n.s.out1[:0], t.out[0]...)
	b = append(b, data[p:end-1]...)
	n.s.out1 = append(b, t.out[1]...)
	return n.s.out1, true
}

// noteTemplate makes data, which the full path just made out of from
// state before, the template when it has one of the two shapes, its
// string went out as it came, and it changed nothing else.
func (n *Normalizer) noteTemplate(data, out []byte, before chunkState) {
	after := n.state()
	fixes := after.fixes
	for k := range fixes {
		fixes[k] -= before.fixes[k]
	}
	after.fixes, before.fixes = Fixes{}, Fixes{}
	if n.opts.ReasoningIn == ReasoningThink || !before.seen || after != before ||
		len(n.s.elems) != 1 || len(n.s.delta) != 1 || string(lookup(n.s.choice, "index")) != "0" ||
		!isNull(lookup(n.s.choice, "finish_reason")) || lookup(n.s.top, "usage") != nil {
		return
	}
	var v []byte
	switch n.s.delta[0].key {
	case "content":
		v, n.tmpl.kind = n.s.delta[0].value, textTemplate
	case "tool_calls":
		c := &n.collector
		if n.opts.Buffer || len(c.frag) != 2 || len(c.fn) != 1 || c.fn[0].key != "arguments" ||
			index(c.frag, "index") < 0 || index(c.frag, "function") < 0 || c.last == nil || !c.last.started {
			return
		}
		if !oneElement(n.s.delta[0].value) {
			return
		}
		v, n.tmpl.kind, n.tmpl.call = c.fn[0].value, argsTemplate, c.last
	default:
		return
	}
	start := cap(data) - cap(v) // v is a slice of data
	if len(v) < 2 || v[0] != '"' || start <= 0 || start+len(v) > len(data) || unsafe.SliceData(data[start:]) != unsafe.SliceData(v) {
		n.tmpl.kind = noTemplate
		return
	}
	t := &n.tmpl
	t.fixes, t.fixed, t.same = fixes, fixes != Fixes{}, bytes.Equal(out, data)
	if !t.same {
		at := bytes.Index(out, v)
		if at < 0 || bytes.Contains(out[at+1:], v) {
			t.kind = noTemplate // the string is not in what went out once, as it came
			return
		}
		t.out[0] = append(t.out[0][:0], out[:at+1]...)
		t.out[1] = append(t.out[1][:0], out[at+len(v)-1:]...)
	}
	t.prefix = append(t.prefix[:0], data[:start+1]...)
	t.suffix = append(t.suffix[:0], data[start+len(v)-1:]...)
}

// oneElement reports whether the JSON array a has exactly one element.
func oneElement(a []byte) bool {
	if len(a) < 2 || a[0] != '[' {
		return false
	}
	i := skipSpace(a, 1)
	end, err := skipValue(a, i, 1)
	return err == nil && i < len(a) && a[i] != ']' && skipSpace(a, end) == len(a)-1
}
