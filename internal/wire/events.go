package wire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"sync"
)

// DefaultMaxEventSize is the largest single SSE event [Events] accepts when
// [ReadOptions.MaxEventSize] is zero.
const DefaultMaxEventSize = 8 << 20

// Event is one server-sent event from an upstream. Its slices are views
// into the reader's buffer: they are valid until the sequence yields its
// next value or the loop over it ends, and whoever keeps them longer
// copies them.
type Event struct {
	// Type is the event's "event:" field, usually empty.
	Type []byte
	// Data is the event's data, lines joined with "\n".
	Data []byte
	// Done reports the terminal `data: [DONE]` event; Data is then "[DONE]".
	Done bool
}

// ReadOptions configures [Events].
type ReadOptions struct {
	// MaxEventSize caps one event's size in bytes (its lines and their
	// line ends); 0 means DefaultMaxEventSize.
	MaxEventSize int
	// BeforeWait, if set, rests before a read made with nothing unread
	// (between events, where the source most likely makes the reader
	// wait): it may let go of what it holds for the next event, as a
	// Normalizer does. An interface rather than a func: a method value
	// would be an allocation per stream.
	BeforeWait Rester
	// Run, if set, is offered the unread bytes at every event boundary
	// whose first line has arrived whole, before the reader parses them:
	// the events it takes are not yielded (see [Runner]).
	Run Runner
}

// Rester is what lets go of its working memory while a stream waits.
type Rester interface{ Rest() }

// A Runner takes whole events straight from the reader's buffer, without
// the reader parsing them: what a stream's steady middle is, the same
// chunk shape again and again (see [Normalizer.Run]). Run is given the
// unread bytes, which start at an event boundary, and the event size
// limit; it returns how many bytes at their start it took, whole events
// only, each within the limit, and each exactly what the reader would
// have yielded as one event: "data: " and a single line of data, then a
// blank line, with LF line ends (nothing else is taken), and never the
// terminal `data: [DONE]`, which ends the sequence. It must not keep the
// bytes. The context is checked before each call: no event is taken
// after cancellation.
//
// Each call scans at most the unread bytes, and the reader calls it only
// when the first line has arrived whole (found by the reader's own search,
// which it needs anyway), so every byte is scanned a bounded number of
// times however it is split into reads.
type Runner interface {
	Run(unread []byte, max int) int
}

// ErrEventTooLarge is reported when an event exceeds ReadOptions.MaxEventSize.
var ErrEventTooLarge = errors.New("wire: upstream SSE event exceeds the size limit")

// StreamError reports that the upstream's stream could not be read to its
// end: the connection broke, the body was cut, or an event was too large.
type StreamError struct {
	Err error
}

func (e *StreamError) Error() string { return "wire: upstream stream broke: " + e.Err.Error() }
func (e *StreamError) Unwrap() error { return e.Err }

// Events reads server-sent events from r. It yields each event in order; it
// stops after the `[DONE]` event without reading further. A read error is
// yielded once, wrapped in a *StreamError, and ends the sequence; an event is
// never yielded together with an error. A clean EOF ends the sequence with no
// error (an event not finished by then is dropped): whether the stream was
// complete is the caller's judgement, from whether a Done event was seen.
//
// The context is checked before the first read and before every yield; once
// it is done, Events yields context.Cause(ctx) and stops, so no buffered
// event is delivered after cancellation (docs/spec.md §6). Closing r is the
// caller's job (cancelling an upstream request's context closes its body).
func Events(ctx context.Context, r io.Reader, opts ReadOptions) iter.Seq2[Event, error] {
	max := opts.MaxEventSize
	if max <= 0 {
		max = DefaultMaxEventSize
	}
	return func(yield func(Event, error) bool) {
		if ctx.Err() != nil {
			yield(Event{}, context.Cause(ctx))
			return
		}
		e := newEventReader(r, max)
		e.beforeWait, e.run, e.ctx = opts.BeforeWait, opts.Run, ctx
		defer e.release()
		for {
			err := e.next()
			ev := e.ev
			switch {
			case ctx.Err() != nil:
				yield(Event{}, context.Cause(ctx))
				return
			case err == io.EOF:
				return
			case err != nil:
				yield(Event{}, &StreamError{Err: err})
				return
			case ev.Done:
				yield(ev, nil)
				return
			case !yield(ev, nil):
				return
			}
		}
	}
}

// A reader comes from a pool, and its buffer from another: readBufSize to
// start with, grown (up to the event size limit) only for an event that
// does not fit. The buffer is held only while it holds unread bytes: when
// everything read has been used, it goes back to its pool (unless an event
// grew it) before the reader waits for the source again, and that read
// goes into the reader's own waitReadSize bytes; a buffer is taken again
// once it returns. An idle stream therefore holds no buffer — what LLM
// streams mostly are — at the cost of one more read of the body (which the
// upstream connection's own buffer serves without a system call) per
// burst. 1 KB holds a few of the events LLM providers send.
//
// A source that fills every read it is given (a whole answer arriving at
// once, as a fast upstream's does) has the reader take a burstBufSize
// buffer instead, from a pool of its own, for as long as it does: each
// fill then costs the reader, each call of the Runner costs Run (a
// fragment that does not fit at the buffer's end), and each read costs a
// write to the client (FlushBeforeRead), once per 64 KB rather than once
// per kilobyte. The source is read straight into it: no bytes are copied
// on their way from the upstream connection's buffer to the reader's.
// The first read that comes back short (the source had no more ready, so
// the next may wait) has the reader go back to a small buffer before it
// reads again, when what is unread fits one: a stream waits with a small
// buffer, or none.
const (
	readBufSize  = 1 << 10
	burstBufSize = MaxBatch
	waitReadSize = 64
	maxPooledBuf = 64 << 10
)

var (
	readers   = sync.Pool{New: func() any { return new(eventReader) }}
	readBufs  = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}
	burstBufs = sync.Pool{New: func() any { b := make([]byte, burstBufSize); return &b }}
)

// eventReader splits a stream into events as the SSE specification's
// parsing rules say (html.spec.whatwg.org, "Interpreting an event
// stream"): lines end with CRLF, LF or CR; one leading BOM is ignored;
// lines starting with ':' are comments; a line without ':' is a field
// with an empty value; one space after the colon is removed; "data" lines
// are joined with "\n", "event" names the event, other fields ("id",
// "retry", unknown names) are read and ignored; a blank line dispatches the
// event, if it has data.
//
// It reads into one buffer and yields views into it: a single-line data
// event (what every LLM provider sends) is never copied; the lines of a
// multi-line one are joined in one reused buffer. Each byte is searched
// at most once for '\n' and once for '\r', with bytes.IndexByte, however
// many reads a line spans and whichever line ends the stream uses.
type eventReader struct {
	r          io.Reader
	buf        []byte             // len(buf) == cap(buf); buf[pos:end] is unread; nil while nothing is
	box        *[]byte            // buf's pool entry, while buf is the pooled one
	beforeWait Rester             // ReadOptions.BeforeWait
	run        Runner             // ReadOptions.Run
	ctx        context.Context    // checked before run is called
	wait       [waitReadSize]byte // a read after the buffer went back goes here
	pos, end   int
	lf, cr     mark // where the next '\n' and '\r' are, as far as searched
	max        int
	err        error // a read error, reported once the buffer is used up
	empties    int   // reads in a row that returned nothing
	started    bool  // the leading BOM, if any, is behind
	skipLF     bool  // the last line ended with CR: an LF next belongs to it
	burst      bool  // the last read into the buffer filled all it was given

	// The event being read.
	size     int  // bytes of its lines consumed so far
	hasData  bool // a data field was seen
	dataOff  int  // its only data line's value is buf[dataOff:dataOff+dataLen] (-1: none)
	dataLen  int
	multi    bool   // more than one data line: joined holds them
	joined   []byte // the data lines joined, reused
	typ      []byte // the event field's value, reused
	typeSeen bool
	ev       Event // the event read last
}

func newEventReader(r io.Reader, max int) *eventReader {
	e := readers.Get().(*eventReader)
	*e = eventReader{r: r, max: max, dataOff: -1, joined: e.joined[:0], typ: e.typ[:0]}
	return e
}

// release puts the reader back in the pool, unless an event made its
// buffers large; it is not used again.
func (e *eventReader) release() {
	e.putBuf()
	if cap(e.joined) > maxPooledBuf {
		return
	}
	*e = eventReader{joined: e.joined[:0], typ: e.typ[:0]}
	readers.Put(e)
}

// next reads the next event into e.ev, or returns io.EOF at a clean end of
// the stream, or the error that ended it.
func (e *eventReader) next() error {
	for {
		if !e.started && !e.skipBOM() {
			if err := e.fill(); err != nil {
				return err
			}
			continue
		}
		if e.run != nil && e.size == 0 { // at an event boundary: no line of an event read yet
			e.runEvents()
		}
		start, n, ok := e.line()
		if !ok {
			if e.size+(e.end-e.pos) > e.max {
				return ErrEventTooLarge
			}
			if err := e.fill(); err != nil {
				return err
			}
			continue
		}
		if e.size > e.max {
			return ErrEventTooLarge
		}
		if n == 0 {
			if e.dispatch() {
				return nil
			}
			continue
		}
		e.field(start, n)
	}
}

var bom = []byte("\xEF\xBB\xBF")

// skipBOM drops a BOM at the very start of the stream. It reports false
// while the bytes read so far could still be the start of one.
func (e *eventReader) skipBOM() bool {
	rest := e.buf[e.pos:e.end]
	if len(rest) < len(bom) && bytes.HasPrefix(bom, rest) && e.err == nil {
		return false
	}
	if bytes.HasPrefix(rest, bom) {
		e.pos += len(bom)
	}
	e.started = true
	return true
}

// runEvents offers the unread bytes, at an event boundary, to the
// Runner once their first line is whole, and moves past what it took.
// The bytes it took end with a blank line and hold no CR: the line-end
// marks found inside them are forgotten, the others stay right. (An LF
// still to be skipped after a CR can only start the unread bytes, which
// the Runner then does not take: they do not start with "data: ".)
func (e *eventReader) runEvents() {
	e.lf.find(e.buf, '\n', e.pos, e.end)
	if e.lf.at == e.end || e.ctx.Err() != nil {
		return
	}
	if k := e.run.Run(e.buf[e.pos:e.end], e.max); k > 0 {
		e.pos += k
		e.lf.passed(e.pos)
		e.cr.passed(e.pos)
	}
}

// line finds the next complete line: buf[start:start+n], its line end
// consumed. ok is false when more input is needed.
//
// The two line-end bytes are searched for separately, each over every
// buffered byte at most once: a line ends at whichever comes first. An
// LF-only stream (what providers send) costs one search for '\n' per line
// and one for '\r' per read, which finds none.
func (e *eventReader) line() (start, n int, ok bool) {
	if e.skipLF {
		if e.pos == e.end {
			return 0, 0, false
		}
		e.skipLF = false
		if e.buf[e.pos] == '\n' {
			e.pos++
			e.size++
			e.lf.passed(e.pos)
		}
	}
	e.lf.find(e.buf, '\n', e.pos, e.end)
	e.cr.find(e.buf, '\r', e.pos, e.end)
	i := min(e.lf.at, e.cr.at) // e.end when neither is in the buffer
	if i == e.end {
		return 0, 0, false
	}
	start, n = e.pos, i-e.pos
	next := i + 1
	if e.buf[i] == '\r' {
		if next < e.end {
			if e.buf[next] == '\n' {
				next++
			}
		} else {
			e.skipLF = true
		}
	}
	e.size += next - e.pos
	e.pos = next
	e.lf.passed(next)
	e.cr.passed(next)
	return start, n, true
}

// mark is where the next occurrence of one byte is in the reader's buffer,
// as far as it has been searched: buf[..end] was searched, and at < end is
// where the byte was found; at == end means it was not found there.
type mark struct{ at, end int }

// find searches buf[pos:end] for c from where the last search stopped,
// unless the byte was found already (at or after pos: see passed).
func (m *mark) find(buf []byte, c byte, pos, end int) {
	if m.at < m.end {
		return
	}
	from := max(m.end, pos)
	switch {
	case from == end:
	case buf[from] == c: // a blank line, mostly: no call
		m.at, m.end = from, from+1
		return
	default:
		if j := bytes.IndexByte(buf[from:end], c); j >= 0 {
			m.at, m.end = from+j, from+j+1
			return
		}
	}
	m.at, m.end = end, end
}

// passed forgets a found byte the reader has moved past (pos is the new
// position).
func (m *mark) passed(pos int) {
	if m.at < m.end && m.at < pos {
		m.at, m.end = pos, pos
	}
}

// shift moves the mark with the buffer's bytes (see eventReader.shift).
func (m *mark) shift(keep, pos int) {
	m.at, m.end = max(m.at-keep, pos), max(m.end-keep, pos)
}

// field reads the field on the line buf[start:start+n] (n > 0).
func (e *eventReader) field(start, n int) {
	line := e.buf[start : start+n]
	if line[0] == ':' {
		return // a comment
	}
	name, off := line, start+n
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, off = line[:i], start+i+1
		if off < start+n && e.buf[off] == ' ' {
			off++
		}
	}
	switch string(name) {
	case "data":
		e.addData(off, start+n-off)
	case "event":
		e.typ = append(e.typ[:0], e.buf[off:start+n]...)
		e.typeSeen = true
	}
}

// addData adds a data line's value, buf[off:off+n]: the first stays where
// it is, the second and later are joined in e.joined.
func (e *eventReader) addData(off, n int) {
	switch {
	case !e.hasData:
		e.hasData, e.dataOff, e.dataLen = true, off, n
	case !e.multi:
		e.joined = append(e.joined[:0], e.buf[e.dataOff:e.dataOff+e.dataLen]...)
		e.multi, e.dataOff = true, -1
		fallthrough
	default:
		e.joined = append(e.joined, '\n')
		e.joined = append(e.joined, e.buf[off:off+n]...)
	}
}

// dispatch ends the event at a blank line: an event with data is
// set in e.ev; one without is dropped, as the specification says.
func (e *eventReader) dispatch() bool {
	ev := &e.ev
	*ev = Event{}
	if e.typeSeen {
		ev.Type = e.typ
	}
	ok := e.hasData
	if ok {
		ev.Data = e.joined
		if !e.multi {
			ev.Data = e.buf[e.dataOff : e.dataOff+e.dataLen]
		}
		ev.Done = string(ev.Data) == "[DONE]"
	}
	e.size, e.hasData, e.multi, e.dataOff, e.typeSeen = 0, false, false, -1, false
	return ok
}

// fill reads more input after what the buffer holds, making room first:
// the bytes still needed (the unread ones, the event's data line) move to
// the front, and the buffer grows only when they fill it.
func (e *eventReader) fill() error {
	if e.err != nil {
		return e.err
	}
	keep := e.pos
	if e.dataOff >= 0 {
		keep = min(keep, e.dataOff)
	}
	if keep == e.end || e.end == len(e.buf) {
		e.shift(keep)
		keep = 0
	}
	var n int
	var err error
	switch {
	case e.end == 0:
		// Nothing unread: the buffer goes back while the source is awaited.
		e.putBuf()
		if e.beforeWait != nil {
			e.beforeWait.Rest()
		}
		n, err = e.r.Read(e.wait[:])
		e.burst = false // a read after a wait tells nothing of a burst
		if n > 0 {
			e.getBuf()
			copy(e.buf, e.wait[:n])
		}
	default:
		// A burst buffer first, if the last read asks for one: an event
		// that fills the small buffer of a source that fills every read
		// grows nothing.
		e.fit(keep)
		if e.end == len(e.buf) {
			grown := make([]byte, min(2*len(e.buf), e.max+len(e.buf)))
			copy(grown, e.buf[:e.end])
			e.putBuf()
			e.buf = grown
		}
		n, err = e.r.Read(e.buf[e.end:])
		e.burst = n == len(e.buf)-e.end
	}
	e.end += n
	switch {
	case n > 0:
		e.empties = 0
		e.err = err
		return nil
	case err != nil:
		e.err = err
		return err
	}
	if e.empties++; e.empties > 100 { // as bufio.Scanner: more than 100 in a row
		e.err = io.ErrNoProgress
		return e.err
	}
	return nil
}

// getBuf takes a buffer from the pool; the reader holds none.
func (e *eventReader) getBuf() {
	e.box = readBufs.Get().(*[]byte)
	e.buf = *e.box
}

// putBuf lets go of the buffer: back to its pool if it is a pooled one
// (a grown one is left to the garbage collector).
func (e *eventReader) putBuf() {
	switch {
	case e.box == nil:
	case len(*e.box) == burstBufSize:
		burstBufs.Put(e.box)
	default:
		readBufs.Put(e.box)
	}
	e.buf, e.box = nil, nil
}

// fit gives the reader, before a read into its pooled buffer, the buffer
// the last read asks for: a burst one after a read that filled all it was
// given, a small one after a read that did not, when the bytes still
// needed (from keep) fit it. A buffer grown for a large event stays.
func (e *eventReader) fit(keep int) {
	want, pool := readBufSize, &readBufs
	if e.burst {
		want, pool = burstBufSize, &burstBufs
	}
	if e.box == nil || len(e.buf) == want || e.end-keep > want {
		return
	}
	e.shift(keep)
	box := pool.Get().(*[]byte)
	copy(*box, e.buf[:e.end])
	e.putBuf()
	e.box, e.buf = box, *box
}

// shift moves buf[keep:end] to the front and every offset with it.
func (e *eventReader) shift(keep int) {
	if keep == 0 {
		return
	}
	copy(e.buf, e.buf[keep:e.end])
	e.end -= keep
	e.pos -= keep
	e.lf.shift(keep, e.pos)
	e.cr.shift(keep, e.pos)
	if e.dataOff >= 0 {
		e.dataOff -= keep
	}
}
