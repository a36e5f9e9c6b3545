package wire

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"strconv"
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
//
// Parallel calls: a call's argument fragments differ from another call's
// in the call's index only. A template made from one keeps where that
// index lies in its bytes (and, when the chunk is rewritten, where the
// canonical index lies in what goes out) as a hole: a fragment that is
// the template's bytes around another index of a call that has gone out
// is that call's, the same to the full path, and the template becomes
// that call's. Such a template also outlives a chunk that only added
// calls (the next call's first fragment, with its id and name), so a
// stream of parallel calls takes the full path once for each call's first
// fragment, and fragments interleaved by call (docs/quirks.md A43) take
// the template too rather than the full path each. A fragment is the call's
// that holds its index when it comes, not the template's by its bytes: a
// call opened at a reused index (A02) takes the index's next fragments,
// which are the template's bytes exactly.

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
	// calls is how many calls the response had when the template last
	// knew call to hold the index in its bytes (a new call may take it,
	// docs/quirks.md A02).
	calls int
	// oneLine: the template's bytes, and what goes out, hold no newline
	// (the chunk came as a single data line): Run may take a chunk that
	// fits it straight from an event's one line, and frame what goes out
	// as one line.
	oneLine bool
	// An argsTemplate fits the continuation fragments of the response's
	// other started calls too (parallel calls, one after another or
	// interleaved): hole is where the fragment's index lies in the
	// template's bytes, in the prefix or the suffix, matched as any
	// non-negative integer when the bytes differ; outHole is where the
	// call's canonical index lies in out[0]. Both hold call's, and are
	// rewritten when a fragment of another call fits (switchTo). A hole's
	// n is 0 when there is none.
	hole, outHole hole
	holeInPrefix  bool
	// reordered: an argsTemplate's fragment is not in the canonical form
	// (its members in another order, or spaced). The full path sends such
	// a fragment as it came when its index is its call's canonical one,
	// and rewrites it when not; a template that rewrites (not same) fits
	// only the other calls whose fragments the full path rewrites too.
	reordered bool
}

// hole is a span of a template's bytes that holds a call's index.
type hole struct{ at, n int }

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
	m, ok := t.match(data)
	if !ok || m.size != len(data) || !n.takeString(data, m) {
		return nil, false
	}
	if t.same {
		return data, true
	}
	n.s.out1 = t.appendOut(n.s.out1[:0], data[m.start+1:m.end-1])
	return n.s.out1, true
}

// fit is where a chunk that fits the template has its parts: its size,
// its string's quotes (start, and end just after the closing one), and
// the index in its hole when it is not the template's (else -1).
type fit struct {
	size, start, end int
	escaped          bool
	ascii            bool // the string's bytes are all below 0x80 (known only when it is short)
	upIndex          int
}

// match reports whether b starts with a chunk the template fits: its
// prefix, a valid JSON string, its suffix, the hole in either matched as
// an index when the bytes differ. A JSON string holds no control byte, so
// the scan stops at the end of b's first line.
func (t *template) match(b []byte) (m fit, ok bool) {
	m.upIndex = -1
	i := len(t.prefix)
	if len(b) < i || !bytes.Equal(b[:i], t.prefix) {
		if !t.holeInPrefix || t.hole.n == 0 {
			return m, false
		}
		if i, ok = t.matchHole(b, 0, t.prefix, &m.upIndex); !ok {
			return m, false
		}
	}
	m.start = i - 1
	if end, ascii, ok := shortString(b, i); ok {
		m.end, m.ascii = end, ascii
	} else {
		end, escaped, err := skipString(b, m.start)
		if err != nil {
			return m, false
		}
		m.end, m.escaped = end, escaped
	}
	e, s := m.end-1, len(t.suffix)
	if len(b)-e >= s && bytes.Equal(b[e:e+s], t.suffix) {
		m.size = e + s
		return m, true
	}
	if t.holeInPrefix || t.hole.n == 0 {
		return m, false
	}
	m.size, ok = t.matchHole(b, e, t.suffix, &m.upIndex)
	return m, ok
}

// shortString finds the end of a JSON string whose text, starting at
// b[i], is shorter than eight bytes and holds no escape (a stream's
// fragments mostly are) in one word of b: it returns the end just after
// the closing quote and whether the text is ASCII. ok is false for any
// other string, which skipString then reads.
func shortString(b []byte, i int) (end int, ascii, ok bool) {
	if i+8 > len(b) {
		return 0, false, false
	}
	w := binary.LittleEndian.Uint64(b[i:])
	m := special8(w)
	if m == 0 {
		return 0, false, false
	}
	k := bits.TrailingZeros64(m) >> 3 // exact for the lowest flagged byte
	if b[i+k] != '"' {
		return 0, false, false
	}
	before := uint64(1)<<(8*k) - 1 // the text's bytes
	return i + k + 1, w&before&highs == 0, true
}

// matchHole matches part (the prefix or the suffix, whichever has the
// hole) at b[i:]: its bytes around a non-negative integer without leading
// zeros (JSON's, at most 9 digits) in the hole, stored in *idx. It returns
// where the part ends in b.
func (t *template) matchHole(b []byte, i int, part []byte, idx *int) (int, bool) {
	h := t.hole.at
	if len(b)-i < h || !bytes.Equal(b[i:i+h], part[:h]) {
		return 0, false
	}
	i += h
	v, d := 0, 0
	for ; i+d < len(b) && d < 9 && '0' <= b[i+d] && b[i+d] <= '9' && (d == 0 || v != 0); d++ {
		v = v*10 + int(b[i+d]-'0')
	}
	rest := part[h+t.hole.n:]
	if d == 0 || len(b)-i-d < len(rest) || !bytes.Equal(b[i+d:i+d+len(rest)], rest) {
		return 0, false
	}
	*idx = v
	return i + d + len(rest), true
}

// appendOut appends what goes out for a chunk the template fits whose
// string's text (within the quotes) is s, when it does not go out as it
// came.
func (t *template) appendOut(b, s []byte) []byte {
	b = append(b, t.out[0]...)
	b = append(b, s...)
	return append(b, t.out[1]...)
}

// switchTo makes call, whose fragment at the upstream index upIndex just
// fit, the template's: its indexes go into the holes, so that its next
// fragments fit the template's bytes as they are.
func (t *template) switchTo(call *collecting, upIndex int) {
	var d [20]byte
	part := &t.suffix
	if t.holeInPrefix {
		part = &t.prefix
	}
	digits := strconv.AppendInt(d[:0], int64(upIndex), 10)
	*part = slices.Replace(*part, t.hole.at, t.hole.at+t.hole.n, digits...)
	t.hole.n = len(digits)
	if t.outHole.n > 0 {
		digits = strconv.AppendInt(d[:0], int64(call.index), 10)
		t.out[0] = slices.Replace(t.out[0], t.outHole.at, t.outHole.at+t.outHole.n, digits...)
		t.outHole.n = len(digits)
	}
	t.call = call
}

// takeString takes the string of a chunk the template fits (data, m) as
// the full path would: into the text kept or the call's arguments (the
// call at the chunk's index, which must have started), with the
// template's fixes counted. It reports false, having changed nothing,
// when a limit or another call makes the chunk the full path's.
func (n *Normalizer) takeString(data []byte, m fit) bool {
	t := &n.tmpl
	switch t.kind {
	case textTemplate:
		if n.keepText {
			text := stringView(data, m.start, m.end, m.escaped)
			chars := len(text) // ASCII: one character a byte
			if !m.ascii {
				chars = utf8.RuneCountInString(text)
			}
			if n.opts.LimitText && n.textChars+chars > n.opts.TextLimit {
				return false // the full path cuts it
			}
			n.text.WriteString(text)
			n.textChars += chars
		}
	case argsTemplate:
		// The fragment is the call's that holds its index now, as the full
		// path finds it (Collector.callFor): the template's call only while
		// no other call took that index (docs/quirks.md A02: a new id at a
		// reused index opens a new call, and the fragments at that index
		// that follow are the new call's, in bytes the template's own fits).
		// While no call was opened since the template last looked, its call
		// still holds it: no lookup.
		up, c := m.upIndex, t.call
		if up >= 0 || len(n.collector.calls) != t.calls {
			if up < 0 {
				up = t.call.upIndex
			}
			c = n.collector.byIdx[up]
		}
		if c != t.call {
			// Another call's fragment: the same to the full path when that
			// call has gone out, and the full path sends it as the template
			// does: as it came (a chunk that goes out as it came) when its
			// canonical index is its index, rewritten when not (a reordered
			// fragment goes as it came when it keeps its index). Without a
			// hole the template's bytes cannot become that call's.
			if c == nil || !c.started || t.hole.n == 0 || t.same && c.index != up ||
				!t.same && t.reordered && c.index == up {
				return false
			}
		}
		if c.args.Len()+m.end-m.start > MaxCallArguments {
			return false // the full path refuses it
		}
		if m.ascii {
			c.args.Write(data[m.start+1 : m.end-1]) // its text as it is
		} else {
			c.args.Write(appendUnquoted(c.args.AvailableBuffer(), data, m.start, m.end))
		}
		n.collector.last = c
		if c != t.call {
			t.switchTo(c, up)
		}
		t.calls = len(n.collector.calls)
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
		m, ok := t.match(data)
		if !ok || m.size+2 > len(data) || data[m.size] != '\n' || data[m.size+1] != '\n' ||
			len(field)+m.size+2 > max || !n.takeString(data[:m.size], m) {
			break
		}
		if !t.same {
			if buf == nil {
				buf = w.gathered()
			}
			buf = append(buf, field...)
			buf = t.appendOut(buf, data[m.start+1:m.end-1])
			buf = append(buf, "\n\n"...)
		}
		taken += len(field) + m.size + 2
		n.read++
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
// state before (leaving state after), the template when it has one of the two shapes, its
// string went out as it came, and it changed nothing else.
func (n *Normalizer) noteTemplate(data, out []byte, before, after chunkState) {
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
		v, n.tmpl.kind, n.tmpl.reordered = n.s.delta[0].value, textTemplate, false
	case "tool_calls":
		c := &n.collector
		if n.opts.Buffer || len(c.frag) != 2 || len(c.fn) != 1 || c.fn[0].key != "arguments" ||
			index(c.frag, "index") < 0 || index(c.frag, "function") < 0 || c.last == nil || !c.last.started {
			return
		}
		if !oneElement(n.s.delta[0].value) {
			return
		}
		v, n.tmpl.kind, n.tmpl.call, n.tmpl.calls = c.fn[0].value, argsTemplate, c.last, len(c.calls)
		n.tmpl.reordered = !canonicalFragment(n.s.delta[0].value, lookup(c.frag, "index"), v)
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
	t.hole, t.outHole, t.holeInPrefix = hole{}, hole{}, false
	if t.kind == argsTemplate {
		t.findHoles(data, start, v, lookup(n.collector.frag, "index"))
	}
}

// continuation is how a canonical continuation fragment goes on after
// its index, up to its arguments' opening quote.
const continuation = `,"function":{"arguments":"`

// findHoles makes the fragment's index, iv (a view of data, whose string
// v starts at start), a hole of an argsTemplate, and the call's canonical
// index in out[0] another, when both can be matched: the index plain
// digits before the string or after it, and out[0] (for a chunk not sent
// as it came) ending as a canonical continuation fragment begins.
func (t *template) findHoles(data []byte, start int, v, iv []byte) {
	pos := cap(data) - cap(iv)
	if len(iv) == 0 || len(iv) > 9 || iv[0] == '0' && len(iv) > 1 || pos < 0 || pos+len(iv) > len(data) ||
		unsafe.SliceData(data[pos:]) != unsafe.SliceData(iv) {
		return
	}
	for _, c := range iv {
		if c < '0' || c > '9' {
			return
		}
	}
	var out hole
	if !t.same {
		var d [20]byte
		k := strconv.AppendInt(d[:0], int64(t.call.index), 10)
		o := t.out[0]
		at := len(o) - len(continuation) - len(k)
		if at < len(`{"index":`) || string(o[at+len(k):]) != continuation || !bytes.Equal(o[at:at+len(k)], k) ||
			string(o[at-len(`{"index":`):at]) != `{"index":` {
			return
		}
		out = hole{at: at, n: len(k)}
	}
	switch end := start + len(v); {
	case pos+len(iv) <= start:
		t.hole, t.holeInPrefix = hole{at: pos, n: len(iv)}, true
	case pos >= end:
		t.hole = hole{at: pos - (end - 1), n: len(iv)}
	default:
		return
	}
	t.outHole = out
}

// canonicalFragment reports whether the tool_calls array a holds one
// continuation fragment in the canonical form (out1.append's), index idx
// and arguments v (a JSON string, whose opening quote ends continuation):
// [{"index":idx,"function":{"arguments":v}}] and not a byte more.
func canonicalFragment(a, idx, v []byte) bool {
	const open, end = `[{"index":`, `}}]`
	n := len(open) + len(idx) + len(continuation) - 1 // where v starts
	return len(a) == n+len(v)+len(end) && string(a[:len(open)]) == open &&
		string(a[len(open):len(open)+len(idx)]) == string(idx) &&
		string(a[len(open)+len(idx):n]) == continuation[:len(continuation)-1] &&
		string(a[n:n+len(v)]) == string(v) && string(a[n+len(v):]) == end
}

// callsAdded reports whether a chunk that went through the full path
// changed nothing a call's arguments template depends on: the state the
// same but for calls added (the chunk that starts the next call), so the
// template still fits the calls' next fragments.
func callsAdded(before, after chunkState) bool {
	before.fixes, after.fixes = Fixes{}, Fixes{}
	before.calls = after.calls
	return before == after
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
