package wire

import (
	"bytes"
	"errors"
	"io"
	"slices"
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
	held  int // reads made while the writer held unwritten events
}

func (c *chunkSource) Read(p []byte) (int, error) {
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
// source while the writer holds events; and each read goes straight into
// the caller's buffer (the source is asked for exactly what the caller
// asked for: nothing is read ahead into a buffer of its own).
func TestFlushBeforeRead(t *testing.T) {
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
			r := FlushBeforeRead(&askedSizes{r: src}, w)
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
			asked := r.(*flushBeforeRead).r.(*askedSizes).asked
			if i := slices.IndexFunc(asked, func(n int) bool { return n != tc.p }); i >= 0 {
				t.Errorf("read %d asked the source for %d bytes, the caller for %d", i, asked[i], tc.p)
			}
		})
	}
}

// askedSizes records the size of every read asked of r.
type askedSizes struct {
	r     io.Reader
	asked []int
}

func (a *askedSizes) Read(p []byte) (int, error) {
	a.asked = append(a.asked, len(p))
	return a.r.Read(p)
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
