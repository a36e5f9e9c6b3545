package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Sink is where a Writer's events go: each event is written whole, then
// flushed.
type Sink interface {
	io.Writer
	Flush() error
}

// Writer writes a client's SSE stream: data events, then either the terminal
// `[DONE]` or one error event (docs/spec.md §7). Each event is flushed as soon as it
// is written, unless the Writer is Lazy. The first Send is the commit point:
// before it the caller may still answer with an HTTP status instead.
//
// A Writer is created per request and is not safe for concurrent use.
//
// Events are encoded here rather than through an SSE library's message
// type (go-sse's costs two allocations per event); Send allocates nothing
// once its buffer has grown. Data with newlines is sent as several data: lines, as the SSE
// format requires.
type Writer struct {
	sink      Sink
	buf       *[]byte // events not yet written to the sink (Lazy), from writeBuffers
	committed bool
	ended     bool
	// Lazy gathers data events and writes them to the sink in one write,
	// flushed, at Flush (or the terminal event, or once MaxBatch bytes
	// are waiting): the caller flushes before it waits for more input, so
	// events that arrived together leave together — one write instead of
	// one per event — and none is held while the caller waits (see
	// FlushBeforeRead).
	Lazy bool
	// LeaveLast writes the terminal event (Done, Fail) to the sink without
	// flushing it: a caller that ends the response right after lets the
	// HTTP server send it with the response's own end (the chunked
	// encoding's last chunk), in one write instead of two.
	LeaveLast bool
	err       error // the sink's first error: every later Send or Flush reports it
}

// MaxBatch is the most a Lazy Writer gathers before it writes to its sink
// without waiting for Flush.
const MaxBatch = 64 << 10

// writeBuffers hold the events a Writer gathers between flushes; a
// Writer holds one only while it has events to write, so an idle stream
// holds none.
var writeBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// NewWriter returns a Writer over sink.
func NewWriter(sink Sink) *Writer { return &Writer{sink: sink} }

// Committed reports whether anything has been sent to the client.
func (w *Writer) Committed() bool { return w.committed }

// Send writes one data event and, unless Lazy, flushes it. It returns the
// delivery error, if any; after an error the stream must not be written
// again. data is not retained.
func (w *Writer) Send(data []byte) error { return w.SendEvent("", data) }

// SendEvent is Send for an event with a name (an "event:" line first, as
// the Responses API sends its events); "" sends none.
func (w *Writer) SendEvent(name string, data []byte) error {
	if w.err != nil {
		return w.err
	}
	buf := w.gathered()
	if name != "" {
		buf = append(buf, "event: "...)
		buf = append(buf, name...)
		buf = append(buf, '\n')
	}
	for {
		i := bytes.IndexByte(data, '\n')
		line := data
		if i >= 0 {
			line = data[:i]
		}
		buf = append(buf, "data: "...)
		buf = append(buf, line...)
		buf = append(buf, '\n')
		if i < 0 {
			break
		}
		data = data[i+1:]
	}
	buf = append(buf, '\n')
	return w.gather(buf)
}

// gathered is the buffer of the events gathered so far, taken from the
// pool when there are none, for whole events to be appended to it and
// given to gather.
func (w *Writer) gathered() []byte {
	if w.buf == nil {
		w.buf = writeBuffers.Get().(*[]byte)
	}
	return *w.buf
}

// gather keeps buf (gathered's, whole events appended) as the events
// gathered and, unless Lazy holds them, writes them.
func (w *Writer) gather(buf []byte) error {
	*w.buf = buf
	w.committed = true
	if w.Lazy && !w.ended && len(buf) < MaxBatch {
		return nil
	}
	return w.write(!(w.ended && w.LeaveLast))
}

// Flush writes and flushes what Lazy mode gathered, if anything.
func (w *Writer) Flush() error { return w.write(true) }

// write writes what was gathered, if anything, and flushes the sink if
// flush is set.
func (w *Writer) write(flush bool) error {
	if w.err != nil {
		return w.err
	}
	if w.buf == nil {
		return nil
	}
	buf := *w.buf
	if _, err := w.sink.Write(buf); err != nil {
		w.err = err
	} else if flush {
		if err := w.sink.Flush(); err != nil {
			w.err = err
		}
	}
	w.release()
	return w.err
}

// release returns the Writer's buffer to the pool (a buffer grown by a
// huge event is left to the collector).
func (w *Writer) release() {
	if cap(*w.buf) <= 2*MaxBatch {
		*w.buf = (*w.buf)[:0]
		writeBuffers.Put(w.buf)
	}
	w.buf = nil
}

// FlushBeforeRead returns r wrapped so that w is flushed before every read
// of r: a Lazy writer then never holds an event while its source blocks.
// Each read goes straight into the caller's buffer. What a burst costs in
// reads (and, the writer being flushed before each, in writes) is the
// caller's buffer's: the event reader reads a burst into a 64 KB buffer
// (burstBufSize, MaxBatch, the most a write gathers), so a read's events
// leave in one write (two when the normalizer's edits lengthen them past
// it). Each write wakes the client, whose reader has gone back to sleep
// while the read's events were normalized, so a burst's cost follows its
// number of reads: a tool-call answer of 169 KB in one burst takes about
// ten reads and writes, not one per kilobyte (docs/performance.md).
func FlushBeforeRead(r io.Reader, w *Writer) io.Reader {
	return &flushBeforeRead{r: r, w: w}
}

type flushBeforeRead struct {
	r io.Reader
	w *Writer
}

// ErrClientWrite is the error a FlushBeforeRead reader reports when the
// flush to the client failed: the client, not the source, broke.
var ErrClientWrite = errors.New("wire: writing to the client failed")

func (f *flushBeforeRead) Read(p []byte) (int, error) {
	if err := f.w.Flush(); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrClientWrite, err)
	}
	return f.r.Read(p)
}

var doneData = []byte("[DONE]")

// Done writes the terminal `data: [DONE]` event. It is written at most once.
func (w *Writer) Done() error {
	if w.ended {
		return nil
	}
	w.ended = true
	return w.Send(doneData)
}

// Fail writes body as the stream's single error event; no `[DONE]` follows.
// It is written at most once, and not after Done.
func (w *Writer) Fail(body ErrorBody) error {
	if w.ended {
		return nil
	}
	w.ended = true
	return w.Send(body.JSON())
}
