package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"testing"
)

// runner is the gateway relay's Runner in miniature: a Normalizer's Run
// into the client's Writer.
type runner struct {
	n *Normalizer
	w *Writer
}

func (r *runner) Run(unread []byte, max int) int {
	k, _ := r.n.Run(unread, max, r.w)
	return k
}

// pieces serves data in reads of the sizes in cuts (0: an empty read),
// then the rest whole.
type pieces struct{ data, cuts []byte }

func (r *pieces) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.cuts) > 0 {
		n, r.cuts = int(r.cuts[0]), r.cuts[1:]
	}
	n = min(n, len(r.data), len(p))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// path is the way a relayed stream's chunks take through the Normalizer.
type path uint8

const (
	fullPath  path = iota // every chunk parsed in full: no template, no Run
	templates             // Chunk with its template
	withRun               // and the Normalizer's Run, from the reader's buffer
)

func (p path) String() string { return [...]string{"full path", "templates", "Run"}[p] }

// relayed moves a stream as the gateway's relay does: its events read
// (the Normalizer resting before each wait), each one's data through
// Chunk and out through a Lazy Writer flushed before every read, until
// [DONE], an error or a cut; with withRun, the Normalizer's Run first
// takes what its template fits straight from the reader's buffer. It
// returns all the client received and all the Normalizer says at the
// end, and how many events the reader yielded.
func relayed(body, cuts []byte, opts Options, max int, p path) (string, int) {
	n, w, sink, ro := relayParts(opts, max, p)
	defer n.Release()
	var log strings.Builder
	yielded := 0
	for ev, err := range Events(context.Background(), FlushBeforeRead(&pieces{data: body, cuts: cuts}, w), ro) {
		if err != nil {
			fmt.Fprintf(&log, "read error %v\n", err)
			break
		}
		yielded++
		if ev.Done {
			fmt.Fprintf(&log, "done\n")
			break
		}
		if len(ev.Data) == 0 {
			continue
		}
		out, send, err := n.Chunk(ev.Data)
		if err != nil {
			fmt.Fprintf(&log, "chunk error %v\n", err)
			break
		}
		if send {
			w.Send(out)
		}
		if n.Cut() {
			w.Send(n.LengthChunk())
			break
		}
	}
	w.Flush()
	return sink.String() + "\n-- end --\n" + log.String() + ending(n), yielded
}

// relayParts are what a relay through path needs: a Normalizer (the
// caller releases it), a Lazy Writer to a sink, and the reader's options.
func relayParts(opts Options, max int, p path) (*Normalizer, *Writer, *bufSink, ReadOptions) {
	n := NewNormalizer(opts)
	n.fullPathOnly = p == fullPath
	sink := &bufSink{}
	w := NewWriter(sink)
	w.Lazy = true
	ro := ReadOptions{MaxEventSize: max, BeforeWait: n}
	if p == withRun {
		ro.Run = &runner{n: n, w: w}
	}
	return n, w, sink, ro
}

// runSeeds are streams whose steady middles Run takes, and the shapes
// that must stop it: the benchmark's streams, with escapes and non-ASCII
// text, a CR inside a line, an event over the size limit, a second data
// line, comment lines between and inside events; the normalizer's golden
// inputs as SSE; chunks rewritten around their string (keys in
// another order, with the Chunks quirk's id fix); and parallel calls.
func runSeeds(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{}
	for _, tool := range []bool{false, true} {
		s := benchStream(40, tool)
		seeds[fmt.Sprint("bench", tool)] = []byte(s)
		seeds[fmt.Sprint("escaped", tool)] = []byte(strings.ReplaceAll(s, "tok1", `t\u00e9\"k\n\\é`))
		seeds[fmt.Sprint("crlf", tool)] = []byte(strings.ReplaceAll(s, "tok2 \"}", "tok2 \"}\r\n"))
		// An event longer than the template's (over the size limit 200),
		// and one whose second data line follows a line the template fits.
		seeds[fmt.Sprint("long", tool)] = []byte(strings.ReplaceAll(s, "tok20 ", strings.Repeat("x", 300)))
		at := strings.Index(s, "tok5 ")
		at += strings.Index(s[at:], "\n\n")
		seeds[fmt.Sprint("multiline", tool)] = []byte(s[:at] + "\ndata: {}" + s[at:])
		// A comment line, then an event the template fits: with the
		// comment, it is over the size limit 200.
		at = strings.Index(s, "tok7 ")
		at = strings.LastIndex(s[:at], "\n\n") + 2
		seeds[fmt.Sprint("inner-comment", tool)] = []byte(s[:at] + ":" + strings.Repeat("c", 80) + "\n" + s[at:])
		// Chunks over two data lines (JSON whitespace between them), then
		// the same second lines without their "data: ": fields of another
		// name, which the SSE rules ignore, not a chunk's bytes.
		split := strings.ReplaceAll(s, `"chat.completion.chunk",`, "\"chat.completion.chunk\",\ndata: ")
		at = strings.Index(split, "tok9 ")
		seeds[fmt.Sprint("two-lines", tool)] = []byte(split[:at] + strings.ReplaceAll(split[at:], "\ndata: \"created\"", "\n\"created\""))
		seeds[fmt.Sprint("comment", tool)] = []byte(strings.ReplaceAll(s, "\n\ndata: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok3", "\n\n: ping\n\ndata: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok3"))
	}
	maps.Copy(seeds, goldenStreams(t))
	var sorted strings.Builder
	sorted.WriteString(`data: {"choices":[{"delta":{"role":"assistant","content":""},"finish_reason":null,"index":0}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}` + "\n\n")
	sorted.WriteString(`data: {"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"","name":"f"},"id":"call_1","index":0,"type":"function"}]},"finish_reason":null,"index":0}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}` + "\n\n")
	for i := range 30 {
		fmt.Fprintf(&sorted, `data: {"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"a%d"},"index":0}]},"finish_reason":null,"index":0}],"created":1,"id":"other","model":"m","object":"chat.completion.chunk"}`+"\n\n", i)
	}
	sorted.WriteString(`data: {"choices":[{"delta":{},"finish_reason":"tool_calls","index":0}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}` + "\n\ndata: [DONE]\n\n")
	seeds["sorted"] = []byte(sorted.String())
	for name, p := range parallelSeeds() {
		seeds[name] = append(sseOf(p), "data: [DONE]\n\n"...)
	}
	for _, e := range corpus(t) {
		if !e.Whole {
			seeds["corpus-"+e.Name] = e.Body
		}
	}
	return seeds
}

// Every seed stream, under every option the fuzz target picks from, read
// whole, one byte per read, in reads of 7 bytes and in reads of 0, 255
// and 45 bytes, reaches the client the same with Run as event by event;
// read whole, the benchmark's streams go mostly through Run (reads of
// less than an event do not: Run takes only an event whose blank line has
// arrived with its data line).
func TestRunMatchesEvents(t *testing.T) {
	ones := bytes.Repeat([]byte{1}, 1<<16)
	for name, body := range runSeeds(t) {
		t.Run(name, func(t *testing.T) {
			for _, sel := range [][]byte{{0, 0}, {2, 0}, {2, 1}, {6, 0x2a}, {0x1a, 0}, {0x22, 0x41}, {2, 0x32}} {
				opts := templateOptions(sel)
				for _, cuts := range [][]byte{nil, ones, bytes.Repeat([]byte{7}, 1<<12), bytes.Repeat([]byte{0, 255, 45}, 1<<10)} {
					for _, max := range []int{0, 200} {
						want, all := relayed(body, cuts, opts, max, templates)
						got, yielded := relayed(body, cuts, opts, max, withRun)
						if got != want {
							t.Fatalf("options %+v, reads %v, max %d\nwith Run:\n%s\nevent by event:\n%s", opts, cuts[:min(len(cuts), 3)], max, got, want)
						}
						steady := strings.HasPrefix(name, "bench") && cuts == nil && max == 0 &&
							!opts.Buffer && !opts.LimitText && opts.ReasoningIn != ReasoningThink
						if steady && yielded > all/4 {
							t.Errorf("options %+v: Run left %d of %d events to the reader", opts, yielded, all)
						}
					}
				}
			}
		})
	}
}

// FuzzRunMatchesEvents: any stream, read in any pieces, under any options,
// reaches the client the same with Run as event by event, and the
// Normalizer ends in the same state.
func FuzzRunMatchesEvents(f *testing.F) {
	for _, body := range runSeeds(f) {
		f.Add([]byte{2, 0}, []byte{}, body)
		f.Add([]byte{2, 1}, []byte{200, 7, 0, 1, 90}, body)
		f.Add([]byte{2, 0, 136}, []byte{}, body) // events of at most 200 bytes
	}
	f.Fuzz(func(t *testing.T, sel, cuts, body []byte) {
		opts := templateOptions(sel)
		max := 0
		if len(sel) > 2 {
			max = 64 + int(sel[2])
		}
		want, _ := relayed(body, cuts, opts, max, fullPath)
		if got, _ := relayed(body, cuts, opts, max, withRun); got != want {
			t.Fatalf("options %+v, max %d\nwith Run:\n%s\nevent by event:\n%s", opts, max, got, want)
		}
	})
}

// counting is a Runner that counts the bytes it is offered and whether it
// was offered any after its context was cancelled.
type counting struct {
	runner
	ctx         context.Context
	offered     int
	afterCancel bool
}

func (c *counting) Run(unread []byte, max int) int {
	c.offered += len(unread)
	c.afterCancel = c.afterCancel || c.ctx.Err() != nil
	return c.runner.Run(unread, max)
}

// A long event that fits the template, arriving in small reads, is
// offered to Run once its line is whole, not after every read: the bytes
// offered stay within a small multiple of the stream's, however it is
// split (a Runner that scans what it is offered is linear in the stream).
func TestRunOfferedOnce(t *testing.T) {
	s := benchStream(40, true)
	body := strings.Replace(s, "tok20 ", strings.Repeat("x", 1<<20), 1)
	n := NewNormalizer(Options{Quirks: AllQuirks(), SingleChoice: true})
	defer n.Release()
	w := NewWriter(&bufSink{})
	c := &counting{runner: runner{n: n, w: w}, ctx: context.Background()}
	for ev, err := range Events(context.Background(), &pieces{data: []byte(body), cuts: bytes.Repeat([]byte{100}, len(body)/100)}, ReadOptions{Run: c}) {
		if err != nil || ev.Done {
			break
		}
		if out, send, err := n.Chunk(ev.Data); err == nil && send {
			w.Send(out)
		}
	}
	if c.offered > 4*len(body) {
		t.Errorf("Run was offered %d bytes for a stream of %d", c.offered, len(body))
	}
	if !strings.Contains(n.Result(nil).Calls[0].Arguments, strings.Repeat("x", 1<<20)) {
		t.Error("the long fragment's arguments were lost")
	}
}

// Once the stream's context is cancelled, Run is offered nothing more:
// no event goes to the client after cancellation.
func TestRunNotAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := benchStream(40, false)
	src := &cancelAfter{r: &pieces{data: []byte(body), cuts: []byte{200, 200}}, reads: 2, cancel: cancel}
	n := NewNormalizer(Options{Quirks: AllQuirks(), SingleChoice: true})
	defer n.Release()
	sink := &bufSink{}
	w := NewWriter(sink)
	c := &counting{runner: runner{n: n, w: w}, ctx: ctx}
	var last error
	for ev, err := range Events(ctx, src, ReadOptions{Run: c}) {
		if err != nil {
			last = err
			break
		}
		if out, send, err := n.Chunk(ev.Data); err == nil && send {
			w.Send(out)
		}
	}
	if c.afterCancel || c.offered == 0 {
		t.Errorf("offered after cancellation: %v; offered before: %d bytes", c.afterCancel, c.offered)
	}
	if !errors.Is(last, context.Canceled) {
		t.Errorf("the stream ended with %v, not the cancellation", last)
	}
}

// cancelAfter cancels a context during its reads-th read.
type cancelAfter struct {
	r      io.Reader
	reads  int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	if c.reads--; c.reads < 0 {
		c.cancel()
	}
	return c.r.Read(p)
}
