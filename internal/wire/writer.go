package wire

import (
	sse "github.com/tmaxmax/go-sse"
)

// Writer writes a client's SSE stream: data events, then either the terminal
// `[DONE]` or one error event (SPEC §7). Each event is flushed as soon as it
// is written. The first successful Send is the commit point: before it the
// caller may still answer with an HTTP status instead.
//
// A Writer is created per request and is not safe for concurrent use.
type Writer struct {
	w         sse.MessageWriter
	committed bool
	ended     bool
	bytes     int64
}

// NewWriter returns a Writer over w (typically an *sse.Session, whose
// headers go out with the first event).
func NewWriter(w sse.MessageWriter) *Writer { return &Writer{w: w} }

// Committed reports whether anything has been sent to the client.
func (w *Writer) Committed() bool { return w.committed }

// Bytes returns the number of data bytes sent so far.
func (w *Writer) Bytes() int64 { return w.bytes }

// Send writes one data event and flushes it. It returns the delivery error,
// if any; after an error the stream must not be written again.
func (w *Writer) Send(data string) error {
	var m sse.Message
	m.AppendData(data)
	w.committed = true
	if err := w.w.Send(&m); err != nil {
		return err
	}
	if err := w.w.Flush(); err != nil {
		return err
	}
	w.bytes += int64(len(data)) + 8 // "data: " + "\n\n"
	return nil
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
