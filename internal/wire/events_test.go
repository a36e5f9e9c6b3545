package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// readEvent is an Event copied out of the reader's buffer.
type readEvent struct {
	Type, Data string
	Done       bool
}

func copyEvent(ev Event) readEvent {
	return readEvent{Type: string(ev.Type), Data: string(ev.Data), Done: ev.Done}
}

type got struct {
	events []readEvent
	err    error
}

func collect(ctx context.Context, r io.Reader, opts ReadOptions) got {
	var g got
	for ev, err := range Events(ctx, r, opts) {
		if err != nil {
			g.err = err
			break
		}
		g.events = append(g.events, copyEvent(ev))
	}
	return g
}

// Events yields each event's data, ends at [DONE], and tolerates the SSE
// variants upstreams send: CRLF, no space after "data:", comments,
// multi-line data (docs/spec.md §2, docs/quirks.md A34–A37).
func TestEvents(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []string // data of each event; "[DONE]" marks the done event
	}{
		{"plain", "data: {\"a\":1}\n\ndata: {\"a\":2}\n\ndata: [DONE]\n\n", []string{`{"a":1}`, `{"a":2}`, "[DONE]"}},
		{"crlf", "data: {\"a\":1}\r\n\r\ndata: [DONE]\r\n\r\n", []string{`{"a":1}`, "[DONE]"}},
		{"no space", "data:{\"a\":1}\n\ndata:[DONE]\n\n", []string{`{"a":1}`, "[DONE]"}},
		{"comments", ": keep-alive\n\ndata: {\"a\":1}\n\n: OPENROUTER PROCESSING\n\ndata: [DONE]\n\n", []string{`{"a":1}`, "[DONE]"}},
		{"multi-line data", "data: {\"a\":\ndata: 1}\n\ndata: [DONE]\n\n", []string{"{\"a\":\n1}", "[DONE]"}},
		{"stops at done", "data: [DONE]\n\ndata: {\"late\":1}\n\n", []string{"[DONE]"}},
		{"no done", "data: {\"a\":1}\n\n", []string{`{"a":1}`}},
		{"unfinished last event dropped", "data: {\"a\":1}\n\ndata: {\"b\"", []string{`{"a":1}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := collect(context.Background(), strings.NewReader(tc.in), ReadOptions{})
			if g.err != nil {
				t.Fatalf("err = %v", g.err)
			}
			var data []string
			for _, ev := range g.events {
				if ev.Done != (ev.Data == "[DONE]") {
					t.Errorf("event %q: Done = %v", ev.Data, ev.Done)
				}
				data = append(data, ev.Data)
			}
			if diff := cmp.Diff(tc.want, data); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// A body that breaks mid-stream is reported as a *StreamError after the
// events read before it, never as a clean end.
func TestEventsReadError(t *testing.T) {
	r := io.MultiReader(strings.NewReader("data: {\"a\":1}\n\n"), iotest.ErrReader(io.ErrUnexpectedEOF))
	g := collect(context.Background(), r, ReadOptions{})
	if len(g.events) != 1 {
		t.Fatalf("events = %v", g.events)
	}
	if se, ok := errors.AsType[*StreamError](g.err); !ok || !errors.Is(se, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want *StreamError wrapping io.ErrUnexpectedEOF", g.err)
	}
}

// An event over the size limit is an error, not a silently cut event.
func TestEventsTooLarge(t *testing.T) {
	in := "data: " + strings.Repeat("x", 2000) + "\n\ndata: [DONE]\n\n"
	g := collect(context.Background(), strings.NewReader(in), ReadOptions{MaxEventSize: 1024})
	if !errors.Is(g.err, ErrEventTooLarge) {
		t.Fatalf("err = %v, want ErrEventTooLarge", g.err)
	}
}

// After cancellation no buffered event is delivered, and a cancelled
// context yields its cause before anything is read (docs/spec.md §6).
func TestEventsCancellation(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	cause := errors.New("client went away")
	in := "data: 1\n\ndata: 2\n\ndata: 3\n\ndata: [DONE]\n\n"
	var seen []string
	var gotErr error
	for ev, err := range Events(ctx, strings.NewReader(in), ReadOptions{}) {
		if err != nil {
			gotErr = err
			break
		}
		seen = append(seen, string(ev.Data))
		cancel(cause) // all events are in one buffered read; none may follow
	}
	if len(seen) != 1 || !errors.Is(gotErr, cause) {
		t.Fatalf("seen %v, err %v; want one event then the cause", seen, gotErr)
	}
	g := collect(ctx, strings.NewReader(in), ReadOptions{})
	if len(g.events) != 0 || !errors.Is(g.err, cause) {
		t.Fatalf("already-cancelled: %v %v", g.events, g.err)
	}
}

func FuzzEvents(f *testing.F) {
	for _, s := range []string{
		"data: {\"a\":1}\n\ndata: [DONE]\n\n", "data:x\r\n\r\n", ": c\n\nevent: ping\n\n", "data: a\ndata: b\n\n",
		"retry: 10\nid: 1\n\n", "data: [DONE]", "\r\r\n\n", "data: \xff\xfe\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		afterErr, afterDone := false, false
		for ev, err := range Events(context.Background(), strings.NewReader(string(b)), ReadOptions{MaxEventSize: 4096}) {
			if afterErr || afterDone {
				t.Fatal("an item was yielded after an error or [DONE]")
			}
			if err != nil {
				if ev.Type != nil || ev.Data != nil || ev.Done {
					t.Fatal("an event was yielded with an error")
				}
				afterErr = true
				continue
			}
			afterDone = ev.Done
		}
	})
}

type bufSink struct {
	strings.Builder
	flushes int
}

func (b *bufSink) Flush() error { b.flushes++; return nil }

// The writer sends each event as data: lines (one per line of data), then
// a blank line, flushed; [DONE] or one error event ends it, once.
func TestWriter(t *testing.T) {
	var s bufSink
	w := NewWriter(&s)
	if w.Committed() {
		t.Fatal("committed before the first event")
	}
	w.Send([]byte(`{"a":1}`))
	w.Send([]byte("two\nlines"))
	w.Fail(NewError("upstream_error", "x", "", "boom"))
	w.Done()
	want := "data: {\"a\":1}\n\ndata: two\ndata: lines\n\ndata: {\"error\":{\"message\":\"boom\",\"type\":\"upstream_error\",\"param\":null,\"code\":\"x\"}}\n\n"
	if s.String() != want || s.flushes != 3 || !w.Committed() {
		t.Errorf("got %q (%d flushes)", s.String(), s.flushes)
	}
	// What the writer sends, the reader reads back.
	var got []string
	for ev, err := range Events(context.Background(), strings.NewReader(s.String()), ReadOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(ev.Data))
	}
	if len(got) != 3 || got[1] != "two\nlines" {
		t.Errorf("read back %q", got)
	}
}

// scriptReader serves its reads in order, calling seen with the size of
// each read's buffer first.
type scriptReader struct {
	reads []string
	seen  func(p []byte)
}

func (s *scriptReader) Read(p []byte) (int, error) {
	s.seen(p)
	if len(s.reads) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.reads[0])
	if s.reads[0] = s.reads[0][n:]; s.reads[0] == "" {
		s.reads = s.reads[1:]
	}
	return n, nil
}

// A reader between events holds no buffer while it waits for the source,
// and says so before it waits (BeforeWait); in the middle of an event it
// keeps what it has.
func TestReaderLetsGoWhileWaiting(t *testing.T) {
	var held []int
	waits := 0
	src := &scriptReader{
		reads: []string{"data: one\n\n", "data: two\n\n", "data: th", "ree\n\n"},
		seen: func(p []byte) {
			// The reader's own buffer, if it holds one, is what it reads into.
			held = append(held, len(p))
		},
	}
	g := collect(context.Background(), src, ReadOptions{BeforeWait: restFunc(func() { waits++ })})
	want := []readEvent{{Data: "one"}, {Data: "two"}, {Data: "three"}}
	if diff := cmp.Diff(want, g.events); diff != "" || g.err != nil {
		t.Fatalf("events (-want +got):\n%s\nerr %v", diff, g.err)
	}
	// Reads: "data: one…" into the wait buffer; "data: two…" the same; the
	// first half of "three" the same; its second half into the taken
	// buffer (the event is under way); EOF into the wait buffer.
	if wantHeld := []int{waitReadSize, waitReadSize, waitReadSize, readBufSize - len("data: th"), waitReadSize}; !cmp.Equal(held, wantHeld) {
		t.Errorf("read buffer sizes %v, want %v", held, wantHeld)
	}
	if waits != 4 {
		t.Errorf("BeforeWait called %d times, want 4 (once per read with nothing unread)", waits)
	}
}

// restFunc is a Rester.
type restFunc func()

func (f restFunc) Rest() { f() }

// A source that fills every read it is given has the reader read up to
// 64 KB at a time, not a kilobyte; the first read that comes back short
// has it go back to a small buffer before it reads again (a read that may
// wait), keeping the event under way.
func TestReaderBurstBuffer(t *testing.T) {
	var b strings.Builder
	var want []readEvent
	for i := 0; b.Len() < 100<<10; i++ {
		data := fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", 150))
		b.WriteString("data: " + data + "\n\n")
		want = append(want, readEvent{Data: data})
	}
	want = append(want, readEvent{Data: "partial"})
	var sizes []int
	src := &scriptReader{
		reads: []string{b.String() + "data: par", "tial\n\n"},
		seen:  func(p []byte) { sizes = append(sizes, len(p)) },
	}
	g := collect(context.Background(), src, ReadOptions{})
	if diff := cmp.Diff(want, g.events); diff != "" || g.err != nil {
		t.Fatalf("events (-want +got):\n%s\nerr %v", diff, g.err)
	}
	// 100 KB: the first read into the wait buffer, one filling the small
	// buffer, then 64 KB ones, the last short; "tial" into the small
	// buffer after "data: par"; EOF into the wait buffer.
	if len(sizes) > 7 || slices.Max(sizes) < burstBufSize-1<<10 {
		t.Errorf("read buffer sizes %v: want at most 7 reads, in 64 KB while the source fills them", sizes)
	}
	if got := sizes[len(sizes)-2]; got != readBufSize-len("data: par") {
		t.Errorf("the read after a short one was into %d bytes, want the small buffer's %d (sizes %v)", got, readBufSize-len("data: par"), sizes)
	}
}

// An event larger than the small buffer, from a source that fills every
// read, goes into a burst buffer rather than a buffer grown for it.
func TestReaderBurstLargeEvent(t *testing.T) {
	large := strings.Repeat("x", 5<<10)
	var sizes []int
	src := &scriptReader{
		reads: []string{"data: " + large + "\n\ndata: small\n\n"},
		seen:  func(p []byte) { sizes = append(sizes, len(p)) },
	}
	g := collect(context.Background(), src, ReadOptions{})
	if want := []readEvent{{Data: large}, {Data: "small"}}; !cmp.Equal(want, g.events) || g.err != nil {
		t.Fatalf("events %d, err %v", len(g.events), g.err)
	}
	// The wait buffer, the small one filled, then the rest in one read into
	// a burst buffer holding the event's first kilobyte.
	if want := []int{waitReadSize, readBufSize - waitReadSize, burstBufSize - readBufSize}; len(sizes) < 3 || !cmp.Equal(sizes[:3], want) {
		t.Errorf("read buffer sizes %v, want %v first", sizes, want)
	}
}

// A read after a wait (everything read was used) says nothing of a burst:
// the one after it goes into the small buffer, whatever the read before
// the wait filled.
func TestReaderBurstNotAcrossWait(t *testing.T) {
	var sizes []int
	reads := 0
	src := readerFunc(func(p []byte) (int, error) {
		sizes = append(sizes, len(p))
		if reads++; reads > 4 {
			return copy(p, "\ndata: x\n\n"), io.EOF
		}
		if len(p) == waitReadSize {
			// Comment lines, the last cut: the reader reads on.
			return copy(p, strings.Repeat(":\n", 31)+":"), nil
		}
		// The cut line's end and more comment lines, filling the read: it
		// ends where a line ends, so the reader uses all of it and waits.
		return copy(p, "\n"+strings.Repeat(":\n", (len(p)-1)/2)), nil
	})
	g := collect(context.Background(), src, ReadOptions{})
	if want := []readEvent{{Data: "x"}}; !cmp.Equal(want, g.events) || g.err != nil {
		t.Fatalf("events %v, err %v", g.events, g.err)
	}
	// The small buffer after each wait read, whose 63 bytes it holds.
	if want := []int{waitReadSize, readBufSize - 63, waitReadSize, readBufSize - 63}; len(sizes) < 4 || !cmp.Equal(sizes[:4], want) {
		t.Errorf("read buffer sizes %v, want %v first", sizes, want)
	}
}

// readerFunc is an io.Reader.
type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
