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
	// oneLine: the template's bytes, and what goes out, hold no newline
	// (the chunk came as a single data line): Run may take a chunk that
	// fits it straight from an event's one line, and frame what goes out
	// as one line.
	oneLine bool
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
	size, end, escaped, ok := t.match(data)
	if !ok || size != len(data) || !n.takeString(data, end, escaped) {
		return nil, false
	}
	if t.same {
		return data, true
	}
	b := append(n.s.out1[:0], t.out[0]...)
	b = append(b, data[len(t.prefix):end-1]...)
	n.s.out1 = append(b, t.out[1]...)
	return n.s.out1, true
}

// match reports whether b starts with a chunk the template fits: its
// prefix, a valid JSON string, its suffix. size is the chunk's length,
// end the string's (just after its closing quote). A JSON string holds no
// control byte, so the scan stops at the end of b's first line.
func (t *template) match(b []byte) (size, end int, escaped, ok bool) {
	p, s := len(t.prefix), len(t.suffix)
	if len(b) < p+s || !bytes.Equal(b[:p], t.prefix) {
		return 0, 0, false, false
	}
	end, escaped, err := skipString(b, p-1)
	if err != nil || end-1+s > len(b) || !bytes.Equal(b[end-1:end-1+s], t.suffix) {
		return 0, 0, false, false
	}
	return end - 1 + s, end, escaped, true
}

// takeString takes the string of a chunk the template fits (data, its
// string ending at end) as the full path would: into the text kept or the
// call's arguments, with the template's fixes counted. It reports false,
// having changed nothing, when a limit makes the chunk the full path's.
func (n *Normalizer) takeString(data []byte, end int, escaped bool) bool {
	t := &n.tmpl
	p := len(t.prefix)
	switch t.kind {
	case textTemplate:
		if n.keepText {
			text := stringView(data, p-1, end, escaped)
			chars := utf8.RuneCountInString(text)
			if n.opts.LimitText && n.textChars+chars > n.opts.TextLimit {
				return false // the full path cuts it
			}
			n.text.WriteString(text)
			n.textChars += chars
		}
	case argsTemplate:
		c := t.call
		if c.args.Len()+end-(p-1) > MaxCallArguments {
			return false // the full path refuses it
		}
		c.args.Write(appendUnquoted(c.args.AvailableBuffer(), data, p-1, end))
		n.collector.last = c
	}
	if t.fixed {
		for k, d := range t.fixes {
			n.fixes[k] += d
		}
	}
	return true
}

// Run normalizes, straight from a stream reader's unread bytes (a
// [Runner]'s), the events at their start that the template fits, and
// sends what they become to w, as Chunk and w.Send would one by one: the
// same bytes out, the same text, arguments and fixes kept. It takes an
// event only when it is exactly "data: " + a chunk the template fits +
// "\n\n" (the shape every provider sends, and the only one whose event
// is that chunk whatever the SSE rules say), within max bytes, and only
// with a template made from a chunk of one line (a newline in its bytes
// would be, in an event's bytes, the start of another field); it stops
// at the first that is not, for the reader to parse and Chunk to judge.
// It returns the bytes taken and w's error, if writing failed.
//
// When the chunks go out as they came, the events taken go to w as they
// are, in one append: no event is parsed, copied or scanned for newlines
// one by one.
func (n *Normalizer) Run(unread []byte, max int, w *Writer) (int, error) {
	t := &n.tmpl
	if t.kind == noTemplate || !t.oneLine || w.err != nil || w.ended {
		return 0, nil
	}
	const field = "data: "
	var buf []byte // what goes out, when the chunks do not go as they came
	taken := 0
	for {
		rest := unread[taken:]
		if len(rest) < len(field) || string(rest[:len(field)]) != field {
			break
		}
		data := rest[len(field):]
		size, end, escaped, ok := t.match(data)
		if !ok || size+2 > len(data) || data[size] != '\n' || data[size+1] != '\n' ||
			len(field)+size+2 > max || !n.takeString(data[:size], end, escaped) {
			break
		}
		if !t.same {
			if buf == nil {
				buf = w.gathered()
			}
			buf = append(buf, field...)
			buf = append(buf, t.out[0]...)
			buf = append(buf, data[len(t.prefix):end-1]...)
			buf = append(buf, t.out[1]...)
			buf = append(buf, "\n\n"...)
		}
		taken += len(field) + size + 2
	}
	if taken == 0 {
		return 0, nil
	}
	if t.same {
		buf = append(w.gathered(), unread[:taken]...)
	}
	return taken, w.gather(buf)
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
	t.oneLine = bytes.IndexByte(data, '\n') < 0 && (t.same || bytes.IndexByte(out, '\n') < 0)
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
