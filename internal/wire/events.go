package wire

import (
	"bufio"
	"context"
	"errors"
	"io"
	"iter"

	sse "github.com/tmaxmax/go-sse"
)

// DefaultMaxEventSize is the largest single SSE event [Events] accepts when
// [ReadOptions.MaxEventSize] is zero.
const DefaultMaxEventSize = 8 << 20

// Event is one server-sent event from an upstream.
type Event struct {
	// Type is the event's "event:" field, usually empty.
	Type string
	// Data is the event's data, lines joined with "\n".
	Data string
	// Done reports the terminal `data: [DONE]` event; Data is then "[DONE]".
	Done bool
}

// ReadOptions configures [Events].
type ReadOptions struct {
	// MaxEventSize caps one event's size in bytes; 0 means DefaultMaxEventSize.
	MaxEventSize int
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
// error: whether the stream was complete is the caller's judgement, from
// whether a Done event was seen.
//
// The context is checked before the first read and before every yield; once
// it is done, Events yields context.Cause(ctx) and stops, so no buffered
// event is delivered after cancellation (docs/spec.md §6). Closing r is the caller's
// job (cancelling an upstream request's context closes its body).
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
		for ev, err := range sse.Read(r, &sse.ReadConfig{MaxEventSize: max}) {
			if ctx.Err() != nil {
				yield(Event{}, context.Cause(ctx))
				return
			}
			if err != nil {
				if errors.Is(err, bufio.ErrTooLong) {
					err = ErrEventTooLarge
				}
				yield(Event{}, &StreamError{Err: err})
				return
			}
			if ev.Data == "[DONE]" {
				yield(Event{Type: ev.Type, Data: ev.Data, Done: true}, nil)
				return
			}
			if !yield(Event{Type: ev.Type, Data: ev.Data}, nil) {
				return
			}
		}
	}
}
