package wire

import (
	"bytes"
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

// A Lazy writer gathers its events and writes them in one write, flushed,
// only before its source is read, and always on the terminal event; a
// failed flush is reported as ErrClientWrite by the read.
func TestLazyWriter(t *testing.T) {
	sink := &flushSink{}
	w := NewWriter(sink)
	w.Lazy = true
	src := FlushBeforeRead(strings.NewReader("abc"), w)
	w.Send([]byte("one"))
	w.Send([]byte("two"))
	if sink.written != 0 || sink.flushed != 0 {
		t.Fatalf("after two sends: %d writes, %d flushes", sink.written, sink.flushed)
	}
	buf := make([]byte, 8)
	if n, err := src.Read(buf); n != 3 || err != nil || sink.written != 1 || sink.flushed != 1 {
		t.Fatalf("read: %d %v, %d writes, %d flushes", n, err, sink.written, sink.flushed)
	}
	src.Read(buf)
	if sink.flushed != 1 {
		t.Errorf("a read with nothing pending flushed: %d", sink.flushed)
	}
	w.Send([]byte("three"))
	w.Done()
	if sink.flushed != 2 {
		t.Errorf("Done did not flush: %d", sink.flushed)
	}
	sink.fail = io.ErrClosedPipe
	w2 := NewWriter(sink)
	w2.Lazy = true
	w2.Send([]byte("x"))
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

// chunkSource returns its data in the sizes of its plan (then what is
// left), then err; it records, at each read, whether the writer still
// held events.
type chunkSource struct {
	data  []byte
	sizes []int
	err   error
	w     *Writer
	reads int
	held  int // reads made while the writer held unwritten events
}

func (c *chunkSource) Read(p []byte) (int, error) {
	c.reads++
	if c.w != nil && c.w.buf != nil {
		c.held++
	}
	if len(c.data) == 0 {
		return 0, c.err
	}
	n := len(p)
	if len(c.sizes) > 0 {
		n = min(n, c.sizes[0])
		c.sizes = c.sizes[1:]
	}
	n = copy(p, c.data[:min(n, len(c.data))])
	c.data = c.data[n:]
	return n, nil
}

// FlushBeforeRead passes its source's bytes and final error on unchanged
// whatever the sizes of the reads on either side; it never reads the
// source while the writer holds events; a burst is read in bulk (64 KB
// a read, not one per 4 KB), and a source that has nothing more
// waiting is read straight into the caller's buffer (no pooled buffer
// held while it waits).
func TestFlushBeforeReadBulk(t *testing.T) {
	data := make([]byte, 100<<10)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name  string
		sizes []int
		err   error
		p     int
	}{
		{"one burst, EOF", nil, io.EOF, 4096},
		{"one burst, an error", nil, boom, 4096},
		{"small pieces", []int{10, 4096, 1, 70000, 3, 5000}, io.EOF, 4096},
		{"tiny caller", []int{4096, 50000}, boom, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWriter(&flushSink{})
			w.Lazy = true
			src := &chunkSource{data: data, sizes: tc.sizes, err: tc.err, w: w}
			r := FlushBeforeRead(src, w)
			var got []byte
			p := make([]byte, tc.p)
			var err error
			for err == nil {
				var n int
				n, err = r.Read(p)
				got = append(got, p[:n]...)
				w.Send([]byte("event")) // the caller writes between reads
			}
			if !bytes.Equal(got, data) || err != tc.err {
				t.Fatalf("got %d bytes (equal: %v), err %v; want %d bytes, %v", len(got), bytes.Equal(got, data), err, len(data), tc.err)
			}
			if src.held > 0 {
				t.Errorf("the source was read %d times while events were held", src.held)
			}
			if tc.sizes == nil && tc.p == 4096 && src.reads > 4 {
				// The caller's 4 KB, 64 KB in bulk, the rest, the end.
				t.Errorf("100 KB in one burst took %d reads of the source, want 4", src.reads)
			}
			if f := r.(*flushBeforeRead); f.bulk != nil {
				t.Error("a pooled buffer is held at the end")
			}
		})
	}
	// A source that returned less than asked is read next into the
	// caller's buffer: nothing pooled is held while it waits.
	w := NewWriter(&flushSink{})
	src := &chunkSource{data: data, sizes: []int{100}, err: io.EOF}
	r := FlushBeforeRead(src, w).(*flushBeforeRead)
	r.Read(make([]byte, 4096))
	if r.busy || r.bulk != nil {
		t.Errorf("after a short read: busy %v, bulk held %v", r.busy, r.bulk != nil)
	}
}

// LeaveLast writes the terminal event, and what was gathered before it,
// in one write that it does not flush (the server ends the response with
// it); without it the terminal event is flushed.
func TestWriterLeaveLast(t *testing.T) {
	for _, tc := range []struct {
		leave       bool
		end         func(*Writer) error
		wantFlushed int
	}{
		{true, (*Writer).Done, 0},
		{false, (*Writer).Done, 1},
		{true, func(w *Writer) error { return w.Fail(ErrorBody{}) }, 0},
		{false, func(w *Writer) error { return w.Fail(ErrorBody{}) }, 1},
	} {
		sink := &flushSink{}
		w := NewWriter(sink)
		w.Lazy, w.LeaveLast = true, tc.leave
		w.Send([]byte("one"))
		if err := tc.end(w); err != nil {
			t.Fatal(err)
		}
		if sink.written != 1 || sink.flushed != tc.wantFlushed {
			t.Errorf("LeaveLast %v: %d writes, %d flushes; want 1 and %d", tc.leave, sink.written, sink.flushed, tc.wantFlushed)
		}
	}
}
