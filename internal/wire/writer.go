package wire

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Sink is where a Writer's events go: each event is written whole, then
// flushed.
type Sink interface {
	io.Writer
	Flush() error
}

// Writer writes a client's SSE stream: data events, then either the terminal
// `[DONE]` or one error event (SPEC §7). Each event is flushed as soon as it
// is written. The first successful Send is the commit point: before it the
// caller may still answer with an HTTP status instead.
//
// A Writer is created per request and is not safe for concurrent use.
//
// Events are encoded here rather than through go-sse's Message, which costs
// two allocations per event: a text delta must stay within two (the
// reader's). Data with newlines is sent as several data: lines, as the SSE
// format requires.
type Writer struct {
	sink      Sink
	buf       []byte
	committed bool
	ended     bool
	// Lazy leaves data events unflushed until Flush (or the terminal
	// event): the caller flushes before it waits for more input, so
	// events that arrived together leave together and none is held while
	// the caller waits (see FlushBeforeRead).
	Lazy    bool
	pending bool
}

// NewWriter returns a Writer over sink.
func NewWriter(sink Sink) *Writer { return &Writer{sink: sink} }

// Committed reports whether anything has been sent to the client.
func (w *Writer) Committed() bool { return w.committed }

// Send writes one data event and flushes it. It returns the delivery error,
// if any; after an error the stream must not be written again.
func (w *Writer) Send(data string) error {
	buf := w.buf[:0]
	for {
		line, rest, more := strings.Cut(data, "\n")
		buf = append(buf, "data: "...)
		buf = append(buf, line...)
		buf = append(buf, '\n')
		if !more {
			break
		}
		data = rest
	}
	buf = append(buf, '\n')
	w.buf = buf
	w.committed = true
	if _, err := w.sink.Write(buf); err != nil {
		return err
	}
	if w.Lazy && !w.ended {
		w.pending = true
		return nil
	}
	w.pending = false
	return w.sink.Flush()
}

// Flush sends what Lazy mode left unflushed, if anything.
func (w *Writer) Flush() error {
	if !w.pending {
		return nil
	}
	w.pending = false
	return w.sink.Flush()
}

// FlushBeforeRead returns r wrapped so that w is flushed before every read
// of r: a Lazy writer then never holds an event while its source blocks.
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

// Done writes the terminal `data: [DONE]` event. It is written at most once.
func (w *Writer) Done() error {
	if w.ended {
		return nil
	}
	w.ended = true
	return w.Send("[DONE]")
}

// Fail writes body as the stream's single error event; no `[DONE]` follows.
// It is written at most once, and not after Done.
func (w *Writer) Fail(body ErrorBody) error {
	if w.ended {
		return nil
	}
	w.ended = true
	return w.Send(string(body.JSON()))
}
