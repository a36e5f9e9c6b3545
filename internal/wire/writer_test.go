package wire

import (
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// flushSink records writes and flushes.
type flushSink struct {
	written, flushed int
	fail             error
}

func (s *flushSink) Write(p []byte) (int, error) { s.written++; return len(p), nil }
func (s *flushSink) Flush() error                { s.flushed++; return s.fail }

// A Lazy writer flushes only before its source is read, and always on the
// terminal event; a failed flush is reported as ErrClientWrite by the read.
func TestLazyWriter(t *testing.T) {
	sink := &flushSink{}
	w := NewWriter(sink)
	w.Lazy = true
	src := FlushBeforeRead(strings.NewReader("abc"), w)
	w.Send("one")
	w.Send("two")
	if sink.written != 2 || sink.flushed != 0 {
		t.Fatalf("after two sends: %d writes, %d flushes", sink.written, sink.flushed)
	}
	buf := make([]byte, 8)
	if n, err := src.Read(buf); n != 3 || err != nil || sink.flushed != 1 {
		t.Fatalf("read: %d %v, %d flushes", n, err, sink.flushed)
	}
	src.Read(buf)
	if sink.flushed != 1 {
		t.Errorf("a read with nothing pending flushed: %d", sink.flushed)
	}
	w.Send("three")
	w.Done()
	if sink.flushed != 2 {
		t.Errorf("Done did not flush: %d", sink.flushed)
	}
	sink.fail = io.ErrClosedPipe
	w2 := NewWriter(sink)
	w2.Lazy = true
	w2.Send("x")
	if _, err := FlushBeforeRead(strings.NewReader("y"), w2).Read(buf); !errors.Is(err, ErrClientWrite) || !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("failed flush: %v", err)
	}
}

// Clip keeps short input and cuts long input at a character boundary,
// naming its full length.
func TestClip(t *testing.T) {
	if got := Clip("gpt-4o"); got != "gpt-4o" {
		t.Errorf("short: %q", got)
	}
	long := strings.Repeat("é", 1000) // 2000 bytes
	got := Clip(long)
	if !strings.HasSuffix(got, "…(2000 bytes)") || !utf8.ValidString(got) || len(got) > MaxEcho+len("…(2000 bytes)") {
		t.Errorf("long: %q", got)
	}
}
